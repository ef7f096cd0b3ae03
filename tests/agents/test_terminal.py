"""The terminal channel (`switchboard chat`): lines in, who-speaks lines out.

Driven like the chat command drives it, in-process: a script of lines on stdin (a
StringIO is not a tty, so each line waits until the agents are done with the one
before), the real app and the fake model, and what a person would read on stdout.
"""

from __future__ import annotations

import getpass

from channels.terminal import BANNER
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.terminal_kit import chat

ME = getpass.getuser()


def responder(call: Call) -> list[dict]:
    if call.agent == "Bob":
        if "answered:" in call.last_text:
            return [tool("publish", result=f"region is {call.last_text.split(': ')[-1]}")]
        return [tool("ask_human", question="Which region?")]
    if call.tool_results():
        return [text("started")]
    if "start bob" in call.last_text:
        return [tool("spawn_worker", name="Bob", task="find the region")]
    if "published its result" in call.last_text:
        return [text(f"relay: {call.last_text.split(']: ')[-1]}")]
    return [text(f"echo: {call.last_text}")]


async def test_lines_are_answered_in_order_with_who_speaks(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    script = "hello\n/status\n\n@Zed hi\nstart bob\neu-west\n"
    printed, store = await chat(settings, script)
    lines = printed.splitlines()
    assert lines[0] == BANNER
    echo = lines.index(f"[coordinator] echo: [{ME} via terminal]: hello")
    status = next(i for i, line in enumerate(lines[1:], 1) if line.startswith("Switchboard:"))
    zed = lines.index(
        "[switchboard] There is no worker called Zed; no workers are running right now."
    )
    asks = lines.index("[Bob asks] Which region?")
    assert lines[asks + 1] == "  (answer with a plain line, or @Bob ...)"
    relay = lines.index("[coordinator] relay: region is eu-west")
    assert echo < status < zed < asks < relay
    assert lines[status + 1].startswith("leader: ")  # this process, as the status runs in it
    assert lines[status + 3] == "Agents" and lines[status + 6].startswith("coordinator")
    assert [w.status for w in store.agents.workers()] == ["done"]
    assert sum(1 for c in fake.calls if c.agent == "coordinator" and "hello" in c.last_text) == 1
    assert [h[:2] for h in store.health()] == [("terminal", "stopped")]


async def test_quit_ends_the_chat_and_what_still_waits_is_said_at_the_end(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = responder
    printed, store = await chat(settings, "start bob\n")
    assert "[Bob asks] Which region?" in printed
    assert printed.rstrip().endswith("Run `switchboard chat` again to answer.")
    assert "Bob is still waiting for an answer" in printed
    assert [w.status for w in store.agents.workers()] == ["parked"]

    fake.calls.clear()
    printed, _ = await chat(settings, "/quit\nhello after quit\n")
    assert "hello after quit" not in printed
    assert not any("hello after quit" in c.all_text for c in fake.calls)
