"""Consolidation of conversations into team knowledge (issue 11, item 4): through the
real app and the fake Anthropic API, and a kill -9 in the middle of a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agents.memory.consolidate import BATCH_CHARS, CONSOLIDATE, STATE
from bot.store.core import Store
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, inbound, running_app
from tests.kits.proc import ROOT


def conversation_ids(call: Call) -> list[str]:
    return [part.split('"', 1)[0] for part in call.last_text.split('<conversation id="')[1:]]


def decides(words: str, decision: str, topic: str = "pricing-page"):  # type: ignore[no-untyped-def]
    """A consolidating model: for each conversation holding `words`, the decision."""

    def answer(call: Call) -> list[dict[str, Any]]:
        found = [c for c in conversation_ids(call) if words in call.last_text]
        body = {
            "topics": [{"topic": topic, "notes": [decision]}] if found else [],
            "decisions": [{"text": decision, "conversation": c} for c in found[:1]],
        }
        return [text(json.dumps(body))]

    return answer


async def test_a_decision_from_thread_a_is_found_from_thread_b(
    settings: Settings, fake: FakeAnthropic
) -> None:
    decision = "The pricing page shows prices in euros, VAT included"
    consolidating = decides("euros with VAT", decision)

    def responder(call: Call) -> list[dict[str, Any]]:
        if call.system == CONSOLIDATE:
            return consolidating(call)
        if call.tool_results():
            return [text(call.tool_results()[0]["content"])]
        if "what did we decide" in call.last_text:
            return [tool("memory_search", query="pricing page decided")]
        return [text("noted")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("Pricing page: euros with VAT, final.", conversation="A"))
        await rec.wait_count(1)
        assert app.memory.consolidator is not None
        first = await app.memory.consolidator.run()
        again = await app.memory.consolidator.run()  # nothing new: no model call
        app.human.accept(inbound("what did we decide about the pricing page?", conversation="B"))
        sent = await rec.wait_count(2)
        assert app.triggers.scheduler is not None
        assert app.triggers.scheduler.get_job("internal:team-consolidate") is not None
    assert first.startswith("Consolidated 1 batch(es); 2 note(s)")
    assert again.startswith("Consolidated 0 batch(es)")
    assert len([c for c in fake.calls if c.system == CONSOLIDATE]) == 1
    answer = sent[-1].text
    assert decision in answer and "(team decisions log)" in answer
    day = time.strftime("%Y-%m-%d")
    log = (settings.data_dir / f"team/decisions/{day}.md").read_text()
    assert log.count(decision) == 1 and "from coordinator/A" in log
    assert decision in (settings.data_dir / "team/knowledge/pricing-page.md").read_text()


async def test_a_failed_model_call_writes_nothing_and_is_retried(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text("ok")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("We chose Postgres 16 for billing.", conversation="A"))
        await rec.wait_count(1)
        consolidator = app.memory.consolidator
        assert consolidator is not None
        fake.responder = lambda call: [text("I cannot do JSON today")]
        failed = await consolidator.run()
        assert not (settings.data_dir / STATE).exists()
        fake.fail(500, times=3)  # the SDK's retries, then ours: the next run
        failed_again = await consolidator.run()
        bad = {"topics": [{"topic": "../../etc/passwd", "notes": ["Billing runs Postgres 16"]}]}
        fake.responder = lambda call: [text(json.dumps(bad))]
        done = await consolidator.run()
    assert failed.startswith("Consolidation stopped after 0 batch(es): the model's answer")
    assert "the model call failed" in failed_again
    assert done.startswith("Consolidated 1 batch(es); 1 note(s)")
    general = (settings.data_dir / "team/knowledge/general.md").read_text()
    assert "Billing runs Postgres 16" in general  # a topic with a path: refused, not lost
    assert not list((settings.data_dir / "team/knowledge").glob("*passwd*"))
    assert [e["data"]["topic"] for e in events(settings.data_dir, "team.topic_refused")] == [
        "../../etc/passwd"
    ]
    assert len(events(settings.data_dir, "team.consolidation_failed")) == 2


def seed(data_dir: Path, conversations: int, chars: int) -> None:
    """Conversations in the store, each with `chars` of text and a marker word."""
    store = Store(data_dir / "switchboard.db")
    for n in range(conversations):
        filler = "x" * chars
        messages = [
            {"role": "user", "content": [{"type": "text", "text": f"topic{n} {filler}"}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"ok {n}"}]},
        ]
        store.agents.save_conversation("coordinator", f"c{n}", messages, "terminal")
    store.close()


def run_consolidation(data_dir: Path, fake: FakeAnthropic) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "ANTHROPIC_"))}
    env.update(fake.env(), SWITCHBOARD_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.kits.consolidate_run"],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


async def test_kill_9_during_consolidation_processes_nothing_twice(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    data = tmp_path / "data"
    seed(data, conversations=3, chars=int(BATCH_CHARS * 0.7))  # one batch each
    answered: list[str] = []

    def responder(call: Call) -> list[dict[str, Any]] | Reply:
        ids = conversation_ids(call)
        if len(answered) == 1:  # the second batch: hang until killed
            answered.append("hung")
            return Reply([text("{}")], delay=60)
        answered.append(",".join(ids))
        notes = [{"topic": "batches", "notes": [f"Read {i}" for i in ids]}]
        return [text(json.dumps({"topics": notes, "decisions": []}))]

    fake.responder = responder
    proc = run_consolidation(data, fake)
    try:
        await fake.until(lambda calls: len(calls) == 2, timeout=30)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(10)
    first_ids = answered[0]
    after_kill = (data / "team/knowledge/batches.md").read_text()
    assert after_kill.count("Read ") == 1  # batch one committed, batch two never was

    proc = run_consolidation(data, fake)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert out.startswith("Consolidated 2 batch(es)")
    read = [conversation_ids(c) for c in fake.calls]
    flat = [i for ids in read for i in ids]
    assert first_ids.split(",") == read[0]
    assert flat.count(read[0][0]) == 1  # batch one was not read again
    assert read[1] == read[2]  # the killed batch, read again: it was never committed
    assert sorted(set(flat)) == ["coordinator/c0", "coordinator/c1", "coordinator/c2"]
    notes = (data / "team/knowledge/batches.md").read_text()
    assert all(notes.count(f"Read coordinator/c{n}") == 1 for n in range(3))


async def test_an_interrupted_commit_is_finished_without_a_second_model_call(
    tmp_path: Path, fake: FakeAnthropic, settings: Settings
) -> None:
    seed(settings.data_dir, conversations=1, chars=200)
    fake.responder = lambda call: [
        text(
            json.dumps(
                {
                    "topics": [{"topic": "ops", "notes": ["Ops note"]}],
                    "decisions": [{"text": "Use Postgres", "conversation": "c0"}],
                }
            )
        )
    ]
    async with running_app(settings, [Recorder()]) as app:
        consolidator = app.memory.consolidator
        assert consolidator is not None
        knowledge = settings.data_dir / "team/knowledge"
        knowledge.rename(knowledge.with_name("knowledge.away"))
        knowledge.write_text("not a folder")  # the disk refuses the notes mid-commit
        try:
            await consolidator.run()
        except OSError:
            pass
        assert (settings.data_dir / "team/.consolidation.pending.json").exists()
        knowledge.unlink()
        knowledge.with_name("knowledge.away").rename(knowledge)
        result = await consolidator.run()
    assert len(fake.calls) == 1  # the pending batch was applied, not asked again
    assert result.startswith("Consolidated 0 batch(es)")
    assert (knowledge / "ops.md").read_text().count("Ops note") == 1
    day = time.strftime("%Y-%m-%d")
    assert (settings.data_dir / f"team/decisions/{day}.md").read_text().count("Use Postgres") == 1
    assert len(events(settings.data_dir, "team.consolidation_resumed")) == 1


async def test_a_compacted_conversation_and_its_archive_are_read_once(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def said(role: str, words: str) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": words}]}

    one, two, three = (
        said("user", "alpha one"),
        said("assistant", "alpha two"),
        said("user", "alpha three"),
    )
    four = said("assistant", "alpha four")
    summary = said("user", "[Summary of the earlier conversation (full text archived)]\nalpha")
    archive = settings.data_dir / "agents/coordinator/archive"
    archive.mkdir(parents=True)
    lines = "".join(json.dumps(m) + "\n" for m in (one, two, three))
    (archive / "thread-7-20261123T000000000000.jsonl").write_text(lines)
    fake.responder = lambda call: [text('{"topics": [], "decisions": []}')]
    async with running_app(settings, [Recorder()]) as app:
        app.store.agents.save_conversation(
            "coordinator", "thread 7", [summary, three, four], "terminal"
        )
        assert app.memory.consolidator is not None
        await app.memory.consolidator.run()
        app.store.agents.save_conversation(
            "coordinator", "thread 7", [summary, three, four, one], "terminal"
        )
        await app.memory.consolidator.run()  # only a turn it already read: no call
    (call,) = fake.calls
    seen = call.last_text
    assert [seen.count(f"alpha {w}") for w in ("one", "two", "three", "four")] == [1, 1, 1, 1]
    assert "[Summary of the earlier" not in seen
    assert conversation_ids(call) == ["coordinator/thread-7", "coordinator/thread-7"]
