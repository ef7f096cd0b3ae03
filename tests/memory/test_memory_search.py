"""memory_search: everything when small, FTS5/bm25 sections when large; the markdown
stays the source of truth (hand edits found, index deletable)."""

from __future__ import annotations

import json
from pathlib import Path

from agents.memory.parts import split_sections
from agents.services import AgentInfo
from agents.tools.toolbox import Toolbox
from tests.kits.memory_kit import call, memory_at, toolbox


def fill(agent_dir: Path, files: int = 30) -> None:
    """About 40 KB of sectioned knowledge files: over the 20 KB inline limit."""
    folder = agent_dir / "memory/knowledge"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        sections = [f"# Topic {n}"]
        for s in range(20):
            sections.append(f"## Note {n}.{s}\nRoutine status of service {n} item {s}, all fine.")
        (folder / f"topic-{n}.md").write_text("\n".join(sections) + "\n")


def test_sections_split_at_h2_h3_but_not_inside_code() -> None:
    text = "# T\nintro\n## A\na\n```\n## not a header\n```\n### B\nb\n"
    assert split_sections(text) == [
        "# T\nintro",
        "## A\na\n```\n## not a header\n```",
        "### B\nb\n",
    ]


async def test_small_memory_is_returned_whole(tmp_path: Path) -> None:
    box = toolbox(memory_at(tmp_path))
    await call(box, "remember", content="Ann owns the billing service.")
    await call(box, "learn_fact", topic="ci", content="Builds run on ci-3.")
    result = (await call(box, "memory_search", query="anything")).text
    assert result.startswith("Your whole memory")
    assert "billing" in result and "ci-3" in result


async def test_large_memory_ranks_sections_with_bm25(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    box = toolbox(memory)
    fill(tmp_path / "agents/coordinator")
    await call(box, "learn_fact", topic="payments", content="## Refunds\nRefund webhooks retry.")
    result = (await call(box, "memory_search", query="refund webhooks")).text
    assert not result.startswith("Your whole memory")
    assert result.startswith("**memory/knowledge/payments.md** (your memory)\n## Refunds")
    assert result.count("**memory/knowledge/") == 1  # one matching section, not files
    nothing = (await call(box, "memory_search", query="zeppelin")).text
    assert nothing == "No memory matches 'zeppelin'."


async def test_common_words_still_answer_and_say_so(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    agent = tmp_path / "agents/coordinator"
    folder = agent / "memory/knowledge"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(40):  # 2,000 sections all holding "status": over the ranking budget
        body = "\n".join(f"## S{n}.{s}\nstatus fine {s}" for s in range(50))
        (folder / f"t{n}.md").write_text(body)
    result = (await call(toolbox(memory), "memory_search", query="status")).text
    assert result.startswith("These words are in most of your memory")
    assert "status fine" in result


async def test_a_file_edited_by_hand_is_found(tmp_path: Path) -> None:
    memory = memory_at(tmp_path, SWITCHBOARD_MEMORY_RESCAN_SECONDS="0")
    box = toolbox(memory)
    agent = tmp_path / "agents/coordinator"
    fill(agent)
    assert "Zanzibar" not in (await call(box, "memory_search", query="zanzibar office")).text
    topic = agent / "memory/knowledge/topic-3.md"
    topic.write_text(topic.read_text() + "\n## Offices\nThe Zanzibar office opens in May.\n")
    (agent / "memory/knowledge/topic-4.md").unlink()
    (tmp_path / "people/ann.md").write_text("# Ann\n\n## Travel\nAnn visits the office monthly.\n")
    result = (await call(box, "memory_search", query="zanzibar office")).text
    assert result.startswith(
        "**memory/knowledge/topic-3.md** (your memory)\n## Offices\nThe Zanzibar office"
    )
    assert "**people/ann.md** (profile of ann)" in result
    assert "topic-4.md" not in (await call(box, "memory_search", query="service 4 item")).text


async def test_tool_writes_are_searchable_at_once_between_rescans(tmp_path: Path) -> None:
    memory = memory_at(tmp_path, SWITCHBOARD_MEMORY_RESCAN_SECONDS="3600")
    box = toolbox(memory)
    fill(tmp_path / "agents/coordinator")
    await call(box, "memory_search", query="status")  # the full scan; the next is an hour off
    await call(box, "remember", content="The Lisbon datacenter moves in June.")
    result = (await call(box, "memory_search", query="lisbon datacenter")).text
    assert "The Lisbon datacenter moves in June." in result.split("\n\n---\n\n")[0]


async def test_the_index_can_be_deleted_and_is_rebuilt(tmp_path: Path) -> None:
    memory = memory_at(tmp_path)
    box = toolbox(memory)
    agent = tmp_path / "agents/coordinator"
    fill(agent)
    await call(box, "learn_fact", topic="dns", content="## Resolver\nUse 10.0.0.53 for DNS.")
    assert "10.0.0.53" in (await call(box, "memory_search", query="dns resolver")).text
    index = agent / ".search.sqlite"
    assert index.exists()
    for leftover in agent.glob(".search.sqlite*"):
        leftover.unlink()
    assert "10.0.0.53" in (await call(box, "memory_search", query="dns resolver")).text
    assert index.exists()


async def test_archived_conversations_of_any_agent_are_searched_and_labelled(
    tmp_path: Path,
) -> None:
    memory = memory_at(tmp_path)
    box = toolbox(memory)
    fill(tmp_path / "agents/coordinator")  # ranked, not returned whole
    archive = tmp_path / "agents/alice/archive"
    archive.mkdir(parents=True)
    turns = [
        {"role": "user", "content": [{"type": "text", "text": "[Ann via slack]: pricing page?"}]},
        {"role": "assistant", "content": "We settled the pricing page on quarterly billing."},
    ]
    (archive / "slack-C1-1.0-20261001T100000000000.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in turns)
    )
    result = (await call(box, "memory_search", query="pricing page quarterly billing")).text
    first = result.split("\n\n---\n\n")[0]
    assert first.startswith(
        "**agents/alice/archive/slack-C1-1.0-20261001T100000000000.jsonl** "
        "(archived conversation of alice)"
    )
    assert "quarterly billing" in first


async def test_a_conversation_searches_only_its_own_archived_transcripts(
    tmp_path: Path,
) -> None:
    """Scope: Bob's session of the coordinator never finds Ann's archived DM."""
    memory = memory_at(tmp_path)
    fill(tmp_path / "agents/coordinator")  # ranked, not returned whole
    archive = tmp_path / "agents/coordinator/archive"
    archive.mkdir(parents=True)
    for slug, said in [("slack-DANN", "payroll numbers: ann 123456"),
                       ("slack-C2-1.0", "payroll review moved to Friday")]:  # fmt: skip
        turn = {"role": "user", "content": [{"type": "text", "text": said}]}
        (archive / f"{slug}-20261001T100000000000.jsonl").write_text(json.dumps(turn) + "\n")
    bob = Toolbox(memory.tools(AgentInfo("coordinator", "coordinator", "slack:C2/1.0")))
    found = (await call(bob, "memory_search", query="payroll")).text
    assert "payroll review moved to Friday" in found and "123456" not in found
    ann = Toolbox(memory.tools(AgentInfo("coordinator", "coordinator", "slack:DANN")))
    assert "123456" in (await call(ann, "memory_search", query="payroll")).text
