"""The memory tools: what they write, the error texts the model gets for bad topics,
traversal attempts, symlinks out and full files, and descriptions that tell them apart
and say only what auto-capture really does."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agents.memory.capture import captures
from agents.memory.files import MemoryRefused
from agents.memory.tools import LEARN_FACT, NOTE_ABOUT_PERSON, REFLECT, REMEMBER
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, events, inbound, running_app
from tests.kits.memory_kit import call, memory_at, toolbox


def today_log(data_dir: Path, agent: str = "coordinator") -> Path:
    day = datetime.now(UTC).date().isoformat()
    return data_dir / "agents" / agent / "memory" / f"{day}.md"


async def test_remember_appends_timestamped_entries_to_todays_log(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    first = await call(box, "remember", content="The build server is ci-3.")
    second = await call(box, "remember", content="Deploys happen on Tuesdays.")
    assert not first.is_error and first.text == second.text
    assert first.text.startswith("Noted in memory/")
    log = today_log(tmp_path).read_text()
    assert log.startswith("# ") and log.count("\n### ") == 2
    assert log.index("ci-3") < log.index("Tuesdays")


async def test_reflect_rewrites_memory_md_whole_and_leaves_no_temp_file(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    await call(box, "reflect", content="# Memory\n\n## Facts\n- old fact")
    result = await call(box, "reflect", content="# Memory\n\n## Facts\n- new fact")
    agent = tmp_path / "agents" / "coordinator"
    assert not result.is_error
    assert (agent / "MEMORY.md").read_text() == "# Memory\n\n## Facts\n- new fact\n"
    assert not [p for p in agent.iterdir() if p.name.endswith(".tmp")]


async def test_learn_fact_sanitises_topic_and_updates_index(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    result = await call(
        box, "learn_fact", topic="Python Asyncio", content="# Asyncio\nUse TaskGroup."
    )
    agent = tmp_path / "agents" / "coordinator"
    assert result.text == "Stored in memory/knowledge/python-asyncio.md."
    assert "TaskGroup" in (agent / "memory/knowledge/python-asyncio.md").read_text()
    index = (agent / "memory/index.md").read_text()
    assert "- memory/knowledge/python-asyncio.md: Asyncio" in index


async def test_a_shared_learn_fact_writes_the_index_with_the_team_topics(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    await call(box, "learn_fact", topic="Own", content="# Own notes\nmine")
    await call(box, "learn_fact", topic="Pricing", content="# Pricing\nper seat", shared=True)
    index = (tmp_path / "agents/coordinator/memory/index.md").read_text()
    own, team = index.split("## Team topics (shared)")
    assert "- memory/knowledge/own.md: Own notes" in own
    assert "pricing.md: Pricing" in team and "own.md" not in team


async def test_learn_fact_refuses_bad_topics_with_clear_texts(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    cases = {
        "../../etc/passwd": "looks like a path",
        "/etc/passwd": "looks like a path",
        "knowledge/../../x": "looks like a path",
        "~root": "looks like a path",
        "!!!": "has no letters or digits",
        "x" * 80: "keep it under 64",
    }
    for topic, expected in cases.items():
        result = await call(box, "learn_fact", topic=topic, content="secret")
        assert result.is_error and result.text.startswith("Error: "), topic
        assert expected in result.text, (topic, result.text)
    assert not (tmp_path / "etc").exists()
    assert not list((tmp_path / "agents/coordinator/memory/knowledge").iterdir())


async def test_symlinks_out_of_the_memory_are_refused_and_not_searched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("## Secret\nthe launch code is swordfish\n")
    memory = memory_at(tmp_path / "data")
    box = toolbox(memory)
    memory.agent("coordinator")  # opens (creates) the directory; tools open it lazily
    agent = tmp_path / "data/agents/coordinator"
    (agent / "memory/leak.md").symlink_to(outside / "secret.md")
    knowledge = agent / "memory/knowledge"
    knowledge.rmdir()
    knowledge.symlink_to(outside, target_is_directory=True)

    result = await call(box, "learn_fact", topic="plans", content="overwrite")
    assert result.is_error and "leads outside this agent's memory" in result.text
    assert not (outside / "plans.md").exists()
    found = await call(box, "memory_search", query="launch code")
    assert "swordfish" not in found.text


def test_a_symlink_made_after_a_file_was_read_is_refused_at_the_next_read(
    tmp_path: Path,
) -> None:
    """A name read once keeps its form check, never its symlink check: every read
    follows the links anew (AgentFiles.path)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the launch code is swordfish\n")
    files = memory_at(tmp_path / "data").agent("coordinator").files
    files.write("memory/knowledge/plans.md", "ship on Tuesday\n")
    assert files.read("memory/knowledge/plans.md") == "ship on Tuesday\n"
    assert files.read("memory/knowledge/plans.md") == "ship on Tuesday\n"
    plans = files.root / "memory/knowledge/plans.md"
    plans.unlink()
    plans.symlink_to(outside / "secret.md")
    with pytest.raises(MemoryRefused, match="leads outside this agent's memory"):
        files.read("memory/knowledge/plans.md")
    for bad in ("../outside/secret.md", "/etc/passwd", "memory/../../x"):
        with pytest.raises(MemoryRefused, match="outside this agent's memory"):
            files.read(bad)
    plans.unlink()  # the link gone, the name reads again (written in any form)
    assert files.path("memory//knowledge/./plans.md") == plans


async def test_recall_reads_memory_knowledge_and_recent_logs(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    assert (await call(box, "recall")).text == "Your memory is empty so far."
    await call(box, "reflect", content="## Team\nAnn leads ops.")
    await call(box, "learn_fact", topic="ci", content="ci-3 runs the builds")
    await call(box, "remember", content="Released 2.1 today.")
    text_ = (await call(box, "recall", days=2)).text
    assert text_.index("Ann leads ops") < text_.index("ci-3") < text_.index("Released 2.1")
    bad = await call(box, "recall", days=0)
    assert bad.is_error and "days" in bad.text and "minimum" in bad.text


async def test_size_cap_gives_an_error_naming_the_setting(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path, SWITCHBOARD_MEMORY_FILE_MAX_BYTES="2000"))
    result = await call(box, "reflect", content="x" * 3000)
    assert result.is_error and "SWITCHBOARD_MEMORY_FILE_MAX_BYTES" in result.text
    for _ in range(30):  # a full day is summarised, not refused (test_daily_cap.py)
        result = await call(box, "remember", content="y" * 100)
        assert not result.is_error, result.text
    assert today_log(tmp_path).stat().st_size <= 2000
    result = await call(box, "remember", content="y" * 2_500)
    assert result.is_error and "over the cap of 2,000" in result.text


async def test_each_agent_has_its_own_memory(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    coordinator, alice = toolbox(memory), toolbox(memory, "alice")
    await call(coordinator, "remember", content="The budget is 40k.")
    assert "40k" not in (await call(alice, "memory_search", query="budget")).text
    assert "40k" in (await call(coordinator, "memory_search", query="budget")).text
    assert not (tmp_path / "agents/alice/memory" / today_log(tmp_path).name).exists()


def test_concurrent_writers_never_corrupt_a_file(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    agent = memory.agent("coordinator")
    versions = [f"## Version {n}\n" + f"line {n}\n" * 200 for n in range(8)]

    def write(n: int) -> None:
        for i in range(40):
            agent.remember(f"writer {n} entry {i}")
            agent.reflect(versions[n])

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log = today_log(tmp_path).read_text()
    entries = log.split("\n### ")[1:]
    assert len(entries) == 320
    assert all(e.rstrip().endswith(tuple(f"entry {i}" for i in range(40))) for e in entries)
    assert (tmp_path / "agents/coordinator/MEMORY.md").read_text() in versions


async def test_model_gets_the_error_text_for_a_traversal_attempt(
    settings: Settings, fake: FakeAnthropic
) -> None:
    def responder(c: Call) -> list[dict]:
        if c.tool_results():
            return [text(f"tool said: {c.tool_results()[0]['content']}")]
        return [tool("learn_fact", topic="../../../etc/cron.d/x", content="* * * * * boom")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("store this"))
        await rec.wait_count(1)
    result = fake.calls[1].tool_results()[0]
    assert result["is_error"] is True and "looks like a path" in result["content"]
    assert rec.texts()[0].startswith("tool said: Error: topic")
    assert not [e for e in events(settings.data_dir, "memory.written")]


def test_the_descriptions_say_append_or_replace_and_what_is_captured_by_itself() -> None:
    for spec in (REMEMBER, NOTE_ABOUT_PERSON):
        assert spec.description.startswith("Append"), spec.name
        assert "captured by itself" in spec.description, spec.name
    for spec in (REFLECT, LEARN_FACT):
        assert spec.description.startswith("Replace"), spec.name
    quoted = re.findall(r'"([^"]+) \.\.\."', REMEMBER.description)
    assert quoted == ["remember", "I prefer", "we decided"]
    for phrase in quoted:  # each phrase the model is told about is one auto-capture catches
        assert captures(f"{phrase} the deploys run on Tuesdays."), phrase
