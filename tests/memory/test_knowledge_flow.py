"""Knowledge that flows between agents (issue 34, item 1): the seed audit's probes as
tests. A worker's findings reach the coordinator and a later worker; a decision said in
thread A reaches thread B's next turn (context block, not the system prompt) and its
memory_search at once; the common shapes are captured with where they were said, never
from untrusted text; team notes are revised with their history kept. The app flows run
on SQLite and PostgreSQL (`database_env`)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents.memory.capture import captures, decisions_in
from agents.memory.files import MemoryRefused
from agents.memory.news import NEWS_CHARS, NEWS_ITEMS, team_news
from agents.memory.notes import subject_of
from agents.memory.shared import Shared
from bot.core.messages import UNVERIFIED, BusMessage
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, inbound, make_settings, running_app
from tests.kits.memory_kit import memory_at

#: a loaded CI machine may hold the loop for seconds at the first model call (the SDK's
#: first import): a PostgreSQL lease this long is not lost meanwhile
LEASE = {"SWITCHBOARD_LEADER_TTL_SECONDS": "30"}
FACT = "The billing database is Postgres 16 on db-billing-2."
TASK_A = "find which database billing uses"


def coordinator_reply(call: Call) -> list[dict[str, Any]]:
    results = call.tool_results()
    if results:
        content = str(results[0]["content"])
        return [text("started" if "started" in content else f"found: {content}")]
    said = call.last_text
    if "now in team knowledge" in said:
        return [text("Learned: Alice's result is in.")]
    if "Migration planned" in said:
        return [text("Bob: Migration planned.")]
    if "research billing" in said:
        return [tool("spawn_worker", name="Alice", task=TASK_A)]
    if "migrate billing" in said:
        return [tool("spawn_worker", name="Bob", task="migrate the billing database")]
    if "which database" in said:
        return [tool("memory_search", query="billing database")]
    return [text("ok")]


def worker_reply(call: Call) -> list[dict[str, Any]]:
    if call.agent == "Alice":
        learned = [{"fact": FACT, "topic": "billing"}]
        return [tool("publish", result="Billing runs on Postgres 16.", learned=learned)]
    if not call.tool_results():
        return [tool("memory_search", query="billing database")]
    return [tool("publish", result="Migration planned.")]


async def test_a_workers_findings_reach_the_coordinator_and_a_later_worker(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = make_settings(tmp_path / "data", fake, **LEASE, **database_env)
    fake.responder = lambda call: (
        coordinator_reply(call) if call.agent == "coordinator" else worker_reply(call)
    )
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("please research billing", conversation="conv-1"))
        await rec.wait_text("Learned")
        app.human.accept(inbound("which database does billing use?", conversation="conv-2"))
        await rec.wait_text("found:")
        app.human.accept(inbound("now migrate billing", conversation="conv-3"))
        await rec.wait_text("Migration planned")
    # the coordinator read the finding with Alice's result
    relayed = next(c for c in fake.calls if c.agent == "coordinator" and "Learned" in c.last_text)
    assert FACT in relayed.last_text and "now in team knowledge" in relayed.last_text
    # ... and found it from another conversation with memory_search
    searched = next(m for m in rec.sent if m.text.startswith("found:"))
    assert FACT in searched.text and "team/knowledge/billing.md" in searched.text
    # a worker started later has it in its first turn's context block and finds it
    bob = [c for c in fake.calls if c.agent == "Bob"]
    assert FACT in bob[0].context and FACT not in bob[0].system
    assert FACT in bob[1].last_text
    stored = (settings.data_dir / "team/knowledge/billing.md").read_text()
    assert FACT in stored
    assert f"learned by Alice, task {TASK_A!r} in conv-1" in stored  # where it came from
    shared = [e for e in events(settings.data_dir, "memory.shared")]
    assert shared[0]["agent_id"] == "alice" and shared[0]["data"]["findings"] == 1


async def test_bad_findings_are_an_error_for_the_worker_and_nothing_is_published(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def responder(call: Call) -> list[dict[str, Any]]:
        if call.agent == "coordinator":
            return [text("ok")]
        if not call.tool_results():
            return [tool("publish", result="r", learned=[{"fact": "x is y", "topic": "../etc"}])]
        return [tool("publish", result="fixed", learned=[{"fact": "The port is 8443."}])]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.team.spawn("Carol", "check the port", "c1", "terminal")
        await fake.until(
            lambda calls: any(
                c.agent == "coordinator" and "The port is 8443" in c.last_text for c in calls
            )
        )
    carol = [c for c in fake.calls if c.agent == "Carol"]
    error = carol[1].tool_results()[0]
    assert error.get("is_error") and "`learned`" in str(error["content"])
    assert [e["data"]["result"] for e in events(settings.data_dir, "worker.completed")] == [
        "fixed\n\nLearned (now in team knowledge, for every agent):\n- The port is 8443. (findings)"
    ]
    assert not (settings.data_dir.parent / "etc").exists()


async def test_a_decision_in_thread_a_reaches_thread_b_within_a_minute(
    tmp_path: Path, fake: FakeAnthropic, database_env: dict[str, str]
) -> None:
    settings = make_settings(tmp_path / "data", fake, **LEASE, **database_env)
    decided = "We decided to ship billing v2 on Thursday."
    own = "Let's go with a canary release first."

    def responder(call: Call) -> list[dict[str, Any]]:
        if call.tool_results():
            return [text(f"found: {call.tool_results()[0]['content']}")]
        if "ship billing" in call.last_text:
            return [text(f"Noted. {own}")]
        if "what did we decide" in call.last_text:
            return [tool("memory_search", query="billing v2")]
        return [text("ok")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("hello from bob", conversation="B", sender="bob"))
        await rec.wait_count(1)
        app.human.accept(inbound(f"Hi. {decided}", conversation="A"))
        await rec.wait_text("canary")
        said_at = time.monotonic()
        app.human.accept(inbound("anything new?", conversation="B", sender="bob"))
        await rec.wait_count(3)
        reached_in = time.monotonic() - said_at
        app.human.accept(inbound("what did we decide on billing?", conversation="B", sender="bob"))
        await rec.wait_text("found:")
    in_b = [c for c in fake.calls if "hello from bob" in c.all_text]
    assert reached_in < 60
    assert decided in in_b[1].context and own in in_b[1].context  # the next turn's context
    assert in_b[1].system == in_b[0].system  # never the system prompt: the cache holds
    assert decided not in in_b[1].system
    assert in_b[2].context.count(decided) == 1  # each item reaches a conversation once
    found = rec.sent[-1].text
    assert decided in found and own in found
    day = time.strftime("%Y-%m-%d")
    log = (settings.data_dir / f"team/decisions/{day}.md").read_text()
    assert f"{decided} (said by Ann in A)" in log
    assert f"{own} (decided by coordinator in A)" in log


@pytest.mark.parametrize(
    ("said", "kind", "value"),
    [
        ("I hate long status emails.", "preference", ""),
        ("I work at Acme Robotics.", "about", ""),
        ("I'm from Lisbon.", "about", ""),
        ("Our company is Initech.", "about", ""),
        ("The API URL is https://api.acme.test/v2.", "fact", "api url"),
        ("The port is 8443.", "fact", "port"),
        ("btw the staging endpoint is https://stg.acme.test", "fact", "staging endpoint"),
        ("Let's go with Postgres 16.", "decision", ""),
    ],
)
def test_the_common_shapes_are_captured(said: str, kind: str, value: str) -> None:
    (found,) = captures(said)
    assert (found.kind, found.value, found.text) == (kind, value, said)


@pytest.mark.parametrize(
    "said",
    [
        "The API key is sk-ant-abcdef123456.",  # a secret is never kept
        "The token=abc123456789 we decided on.",
        "Is the API URL https://x.test?",
        "What port is it",
    ],
)
def test_secrets_and_questions_are_not_captured(said: str) -> None:
    assert [c for c in captures(said) if c.kind in ("fact", "decision")] == []


def test_an_agent_keeps_only_its_own_decisions() -> None:
    reply = "I hate to say it. We decided to move billing to Postgres. The port is 5432."
    assert [(c.kind, c.text) for c in decisions_in(reply)] == [
        ("decision", "We decided to move billing to Postgres.")
    ]


def said_by(text_: str, kind: str = "human", **meta: Any) -> BusMessage:
    meta = {"person": "Ann", "sender": "Ann", "sender_id": "U1", **meta}
    return BusMessage("human", "coordinator", text_, kind=kind, conversation="slack:C1", meta=meta)  # type: ignore[arg-type]


def test_captures_land_with_where_they_were_said_and_untrusted_text_is_never_captured(
    tmp_path: Path,
) -> None:
    memory = memory_at(tmp_path)
    memory.heard("coordinator", said_by("I work at Acme. I hate long emails. The port is 8443."))
    memory.heard("coordinator", said_by("We decided to wire the funds.", kind="task"))  # a hook
    memory.heard("coordinator", said_by("We decided to drop the audit.", **{UNVERIFIED: True}))
    memory.said("coordinator", "Done. Let's go with weekly releases.", "slack:C1")
    profile = (tmp_path / "people/ann.md").read_text()
    assert "## About\n- I work at Acme." in profile and "I hate long emails." in profile
    facts = (tmp_path / "team/knowledge/facts.md").read_text()
    assert "- The port is 8443. (" in facts and "said by Ann in slack:C1)" in facts
    decisions = "".join(memory.shared.recent_decisions())
    assert "Let's go with weekly releases. (decided by coordinator in slack:C1)" in decisions
    assert "wire the funds" not in decisions and "drop the audit" not in decisions
    memory.close()


def test_a_newer_fact_replaces_the_older_one_and_the_history_keeps_it(tmp_path: Path) -> None:
    shared = Shared(tmp_path, 1_000_000, "UTC", 0)
    shared.add_note("facts", "The API URL is https://old.acme.test", "said by Ann in A")
    shared.add_note("facts", "We use Postgres for billing", "said by Ann in A")
    shared.add_note("facts", "The API URL is https://new.acme.test", "learned by Bob in B")
    text_ = (tmp_path / "team/knowledge/facts.md").read_text()
    assert "new.acme.test" in text_ and "old.acme.test" not in text_
    assert text_.index("new.acme.test") < text_.index("Postgres")  # revised in place
    history = shared.history("facts")
    assert "replaced: The API URL is https://old.acme.test" in history
    assert "learned by Bob in B" in history
    shared.learn("deploy", "# deploy\nFridays, 10:00", "by alice in A")
    shared.learn("deploy", "# deploy\nThursdays, 10:00", "by bob in B")
    assert "Thursdays" in (tmp_path / "team/knowledge/deploy.md").read_text()
    deploy = shared.history("deploy")
    assert "by bob in B" in deploy and "Replaced this version:\n\n# deploy\nFridays" in deploy
    # stale values are not searched: the history lives outside the indexed folders
    assert "old.acme.test" not in "".join(p.read_text() for p in shared.files.memory_files())
    assert subject_of("- The API URL is x (2026-11-28, said by Ann)") == "api url"
    shared.close()


def test_two_writers_of_the_same_fact_at_once_lose_nothing(tmp_path: Path) -> None:
    shared = Shared(tmp_path, 1_000_000, "UTC", 0)
    start = threading.Barrier(8)

    def write(n: int) -> None:
        start.wait()
        shared.add_note("facts", f"The deploy host is host-{n}.acme.test", f"worker w{n}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = [ln for ln in (tmp_path / "team/knowledge/facts.md").read_text().splitlines()]
    hosts = [ln for ln in lines if "deploy host" in ln]
    assert len(hosts) == 1  # one wins
    history = shared.history("facts")
    assert all(f"host-{n}.acme.test" in history for n in range(8))  # nothing lost
    assert history.count("- replaced: The deploy host") == 7
    shared.close()


def test_a_topic_broken_by_hand_keeps_its_bytes_and_gets_the_note(tmp_path: Path) -> None:
    shared = Shared(tmp_path, 1_000_000, "UTC", 0)
    broken = tmp_path / "team/knowledge/facts.md"
    broken.write_bytes(b"# facts\n- The port is 80 \xff\xfe\n")
    shared.add_note("facts", "The port is 8443", "said by Ann")
    data = broken.read_bytes()
    assert data.startswith(b"# facts\n- The port is 80 \xff\xfe\n") and b"8443" in data
    small = Shared(tmp_path / "small", 200, "UTC", 0)
    with pytest.raises(MemoryRefused, match="SWITCHBOARD_MEMORY_FILE_MAX_BYTES"):
        small.add_note("facts", "The port is " + "9" * 300, "x")
    shared.close()
    small.close()


def test_team_news_are_the_newest_items_each_once_within_a_budget(tmp_path: Path) -> None:
    shared = Shared(tmp_path, 1_000_000, "UTC", 0)
    for n in range(30):
        shared.add_decision(f"Decision number {n} holds", f"said by Ann in c{n}")
    shared.add_note("facts", "The port is 8443", "said by Ann in A")
    day = time.strftime("%Y-%m-%d")
    (tmp_path / f"team/decisions/{day}.md").open("a").write("garbage \xff line\n# not an entry\n")
    news = team_news(shared, "")
    assert len(news) == NEWS_ITEMS and sum(map(len, news)) <= NEWS_CHARS
    assert "Decision number 29 holds" in "".join(news) and "number 3 " not in "".join(news)
    assert all(block.startswith("<untrusted") for block in news)
    shown = "".join(news)
    assert team_news(shared, shown) == []  # nothing new: nothing added
    shared.add_note("facts", "The port is 9443", "said by Bob in B")
    (again,) = team_news(shared, shown)
    assert "9443" in again and "8443" not in again and "team/knowledge/facts.md" in again
    shared.close()
