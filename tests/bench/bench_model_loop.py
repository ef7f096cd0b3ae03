"""What the model contract costs (issue 16, the loop half): the fixed prefix (system +
tools) of the coordinator and a worker with the role lines this change adds, and the
model calls and posts each habit takes. Prints its figures; run it directly:

    .venv/bin/python -m tests.bench.bench_model_loop
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from agents.team.coordinator import ROLE
from agents.tools.worker import WORKER_ROLE
from bot.settle import settle
from tests.fakes import model_habits as habit
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, inbound, make_settings, running_app

CHARS_PER_TOKEN = 4


def prefix_tokens(call: Call) -> int:
    return (len(call.system) + len(json.dumps(call.body.get("tools", [])))) // CHARS_PER_TOKEN


async def run(fake: FakeAnthropic, responder: Any, line: str) -> tuple[int, list[str]]:
    fake.calls.clear()
    fake.responder = responder
    rec = Recorder()
    data = Path(tempfile.mkdtemp(prefix="bench-habits-")) / "data"
    async with running_app(make_settings(data, fake), [rec]) as app:
        app.human.accept(inbound(line))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(settle(app), 30)
    return len(fake.calls), rec.texts()


def cut_answer(call: Call) -> Reply:
    return Reply([text("rest.")]) if habit.asked_to_continue(call) else habit.cut_text("Start, ")


def beside(call: Call) -> Reply:
    return (
        habit.empty()
        if call.tool_results()
        else Reply([text("Ok."), tool("remember", content="x")])
    )


def team(call: Call) -> Reply:
    if call.agent == "coordinator":
        if "published its result" in call.last_text:
            return Reply([text("done")])
        return (
            habit.empty()
            if call.tool_results()
            else Reply([tool("spawn_worker", name="W", task="t")])
        )
    return Reply([tool("publish", result="r")])


async def main() -> None:
    with FakeAnthropic() as fake:
        await run(fake, team, "go")
        coordinator = next(c for c in fake.calls if c.agent == "coordinator")
        worker = next(c for c in fake.calls if c.agent == "W")
        added = (len(ROLE) + len(WORKER_ROLE)) // 2 // CHARS_PER_TOKEN
        print(f"fixed prefix, coordinator: ~{prefix_tokens(coordinator)} tokens")
        print(f"fixed prefix, worker:      ~{prefix_tokens(worker)} tokens")
        print(f"  of which the role lines this change adds: ~{added} tokens each")
        for name, responder in (
            ("text beside a call", beside),
            ("answer cut at max_tokens", cut_answer),
        ):
            calls, posts = await run(fake, responder, "hi")
            print(f"{name}: {calls} model calls, {len(posts)} post(s): {posts}")
        assert not fake.violations, fake.violations


if __name__ == "__main__":
    asyncio.run(main())
