"""`catchup` in the terminal (`switchboard chat`): what the agents said since the person
last spoke, newest first, with who spoke, where and when; no model call."""

from __future__ import annotations

from config.settings import Settings
from tests.agents.test_terminal import responder
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.terminal_kit import chat


def _block(printed: str, after: str) -> list[str]:
    """The catchup lines printed after the line `after` (up to the next agent line)."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after))
    out = []
    for line in lines[start:]:
        if out and not line.startswith(("- ", "and ")):
            break
        out.append(line)
    return out


async def test_catchup_lists_answers_and_open_questions_since_the_person_last_spoke(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    printed, _ = await chat(settings, "catchup\nstart bob\n")
    assert "Nothing to catch up on." in printed  # never spoke: nothing in any conversation

    calls = len(fake.calls)
    printed, _ = await chat(settings, "catchup\n/catchup\n")
    assert len(fake.calls) == calls  # no model call, and asking moves no mark
    first = _block(printed, "Since you last spoke to me")
    assert first == _block(printed.split(first[-1], 1)[1], "Since you last spoke to me")
    assert len(first) == 3, first
    assert all(line.startswith("- ") for line in first[1:])
    said = " | ".join(first[1:])  # asked and answered within the same moment: any order
    assert "Bob asks (waiting for you) in terminal: Which region?" in said
    assert "coordinator said in terminal: started" in said

    printed, _ = await chat(settings, "eu-west\ncatchup\n")  # answers Bob
    block = _block(printed, "Since you last spoke to me")
    assert len(block) == 3, block
    said = " | ".join(block[1:])
    assert "coordinator said in terminal: relay: region is eu-west" in said
    assert "Bob finished in terminal: region is eu-west" in said  # what it published
    assert not any("started" in line or "asks" in line for line in block)  # before, or answered
    assert not any("catchup" in c.all_text for c in fake.calls)
