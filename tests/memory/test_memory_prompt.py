"""What every prompt starts with, auto-capture, a worker's reflection when it
publishes, and the distil job — through a running app and the fake Anthropic API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, inbound, make_settings, running_app
from tests.kits.script import TeamScript


def coordinator_dir(settings: Settings) -> Path:
    return settings.data_dir / "agents" / "coordinator"


def context(call: Call) -> str:
    return call.context


async def test_memory_prefix_is_identical_between_turns_and_memory_written_travels_in_turns(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def responder(call: Call) -> list[dict]:
        if "save the number" in call.last_text:
            return [tool("remember", content="The on-call phone is 555-0100.")]
        return [text("ok")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        for n, line in enumerate(["hello", "how are you", "save the number", "thanks", "bye"], 1):
            app.human.accept(inbound(line))
            await rec.wait_count(n)
    systems = {c.system for c in fake.calls}
    assert len(systems) == 1  # the prompt holds, memory write or not
    assert "555-0100" not in systems.pop()
    assert "555-0100" not in context(fake.calls[3])
    thanks, bye = fake.calls[4], fake.calls[5]
    assert "555-0100" in context(thanks)
    assert "written since this conversation began" in context(thanks)
    assert context(bye).count("555-0100") == 1  # shown once, not at every turn
    assert fake.calls[0].system.startswith("# Coordinator\n")  # SOUL.md first, then memory


async def test_prefix_holds_memory_profile_recent_logs_and_index_in_order(
    settings: Settings, fake: FakeAnthropic
) -> None:
    agent = coordinator_dir(settings)
    (agent / "users").mkdir(parents=True)
    (agent / "memory").mkdir()
    (agent / "MEMORY.md").write_text("## Team\nOps is led by Ann.\n")
    (agent / "users/ann.md").write_text("# Ann\nPrefers terse answers. Time zone Europe/Lisbon.\n")
    (agent / "users/bob.md").write_text("# Bob\nLikes long explanations.\n")
    today = datetime.now(UTC).date()
    for days_ago, fact in [(0, "Deployed 2.1"), (1, "Froze the release"), (2, "Old news")]:
        day = (today - timedelta(days=days_ago)).isoformat()
        (agent / f"memory/{day}.md").write_text(f"# {day}\n\n### 10:00:00\n{fact}\n")
    (agent / "memory/index.md").write_text("# Memory index\n- knowledge: none yet\n")
    fake.responder = lambda call: [text("ok")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("hi", sender="ann"))
        await rec.wait_count(1)
        app.human.accept(inbound("hi", sender="bob", conversation="other"))
        await rec.wait_count(2)
    ann, bob = fake.calls[0].system, fake.calls[1].system
    order = ["Ops is led by Ann", "Froze the release", "Deployed 2.1", "index"]
    positions = [ann.index(fragment) for fragment in order]
    assert positions == sorted(positions)
    assert ann.startswith("# Coordinator\n")  # SOUL.md comes first
    assert "Old news" not in ann and ann == bob  # no profile in the prompt: it is the same
    # each speaker's profile travels in their turn, as marked data
    first, second = context(fake.calls[0]), context(fake.calls[1])
    assert "terse answers" in first and "Likes long" not in first
    assert "Likes long explanations" in second and "terse" not in second
    assert '<untrusted source="profile of ann' in context(fake.calls[0])


async def test_prefix_is_trimmed_oldest_first_with_a_note(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    settings = make_settings(tmp_path / "data", fake, SWITCHBOARD_MEMORY_PROMPT_TOKENS="300")
    agent = coordinator_dir(settings)
    (agent / "memory").mkdir(parents=True)
    day = datetime.now(UTC).date().isoformat()
    entries = "".join(f"\n### 10:{n:02d}:00\nentry number {n:02d} {'x' * 60}\n" for n in range(40))
    (agent / f"memory/{day}.md").write_text(f"# {day}\n{entries}")
    fake.responder = lambda call: [text("ok")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("hi"))
        await rec.wait_count(1)
    system = fake.calls[0].system
    assert "entry number 39" in system and "entry number 00" not in system
    assert "older daily-log entries are left out to fit the prompt" in system


async def test_what_people_say_outright_is_captured_once(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text("ok")]  # the model never calls a memory tool
    rec = Recorder()
    lines = [
        "Please remember that the staging DB listens on port 5433.",
        "I prefer answers as bullet points. Thanks!",
        "OK, we decided to ship on Thursdays.",
        "Do you remember what we decided?",
        "please remember that the staging DB listens on port 5433",
    ]
    async with running_app(settings, [rec]) as app:
        for n, line in enumerate(lines, 1):
            app.human.accept(inbound(line, sender="ann"))
            await rec.wait_count(n)
    agent = coordinator_dir(settings)
    log_file = agent / f"memory/{datetime.now(UTC).date().isoformat()}.md"
    log = log_file.read_text() if log_file.exists() else ""
    assert "port 5433" not in log  # not in the log every conversation's prompt carries
    day = datetime.now(UTC).date().isoformat()
    decisions = (settings.data_dir / f"team/decisions/{day}.md").read_text()
    assert "we decided to ship on Thursdays. (said by Ann in terminal)" in decisions
    assert "what we decided" not in log + decisions
    profile = (settings.data_dir / "people/ann.md").read_text()
    assert profile.startswith("# Ann\n\n## Notes\n- Please remember that the staging DB")
    assert profile.count("port 5433") == 1  # Ann's own profile, once
    assert "## Preferences\n- I prefer answers as bullet points." in profile
    assert "bullet points" in context(fake.calls[1])  # the very turn it was said in knows it
    assert len(events(settings.data_dir, "memory.captured")) == 3


async def test_a_worker_reflects_into_its_own_memory_when_it_publishes(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = TeamScript()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("please research GPUs", conversation="c1"))
        await rec.wait_kind("question")
        app.human.accept(inbound("Data center only", conversation="c1"))
        await rec.wait_text("Report based on")
    day = datetime.now(UTC).date().isoformat()
    log = (settings.data_dir / f"agents/alice/memory/{day}.md").read_text()
    assert "task published" in log and "Task: Research GPU pricing" in log
    assert "Result: Report based on: Data center only" in log
    assert not (coordinator_dir(settings) / f"memory/{day}.md").exists()


async def test_what_a_person_says_outright_in_a_worker_answer_is_captured(
    settings: Settings, fake: FakeAnthropic
) -> None:
    # the answer reaches a parked worker by its own path, not the mailbox's
    fake.responder = TeamScript()
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("please research GPUs", conversation="c1", sender="ann"))
        await rec.wait_kind("question")
        answer = "Data center only. I prefer prices in euros."
        app.human.accept(inbound(answer, conversation="c1", sender="ann"))
        await rec.wait_text("Report based on")
    profile = (settings.data_dir / "people/ann.md").read_text()  # shared, not Alice's
    assert "I prefer prices in euros." in profile


async def test_distil_merges_past_daily_logs_into_memory_md(
    settings: Settings, fake: FakeAnthropic
) -> None:
    agent = coordinator_dir(settings)
    (agent / "memory").mkdir(parents=True)
    today = datetime.now(UTC).date()
    for n, fact in [(2, "Chose Postgres 16"), (1, "Ann joined ops"), (0, "today's draft")]:
        day = (today - timedelta(days=n)).isoformat()
        (agent / f"memory/{day}.md").write_text(f"# {day}\n\n### 09:00:00\n{fact}\n")
    (agent / "MEMORY.md").write_text("## Facts\n- Builds run on ci-3\n")

    def responder(call: Call) -> list[dict]:
        assert "long-term memory file" in call.system
        return [text("## Facts\n- Builds run on ci-3\n- Postgres 16\n- Ann is in ops")]

    fake.responder = responder
    async with running_app(settings, [Recorder()]) as app:
        first = await app.memory.distil("coordinator")
        second = await app.memory.distil("coordinator")
    prompt = fake.calls[0].last_text
    assert "Chose Postgres 16" in prompt and "Ann joined ops" in prompt
    assert "today's draft" not in prompt and "Builds run on ci-3" in prompt
    assert first == "Distilled 2 daily log(s) into MEMORY.md."
    assert second == "Nothing to distil." and len(fake.calls) == 1
    kept = (agent / "MEMORY.md").read_text()
    assert kept.startswith("## Facts\n- Builds run on ci-3\n\n<!-- switchboard:distilled")
    assert kept.endswith("- Ann is in ops\n<!-- /switchboard:distilled -->\n")


def test_the_memory_prompt_is_cached_until_a_file_changes(tmp_path: Path) -> None:
    from agents.services import AgentInfo
    from tests.kits.memory_kit import memory_at

    memory = memory_at(tmp_path)
    info = AgentInfo("coordinator", "coordinator")
    root = memory.agent("coordinator").files.root
    (root / "MEMORY.md").write_text("## Team\nAnn leads ops.\n")
    first = memory.prompt(info, None)
    assert "Ann leads ops." in first
    assert memory.prompt(info, None) is first  # nothing changed: served from the cache
    (root / "MEMORY.md").write_text("## Team\nBob leads ops now.\n")  # an edit by hand
    assert "Bob leads ops now." in memory.prompt(info, None)
    day = datetime.now(UTC).date().isoformat()
    (root / "memory" / f"{day}.md").write_text(f"# {day}\n\n### 09:00\nDeploy frozen.\n")
    assert "Deploy frozen." in memory.prompt(info, None)  # a new daily log
