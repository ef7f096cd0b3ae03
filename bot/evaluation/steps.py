"""What the scripted person does, one step at a time: each step is a small async
function of the `World`, built by the helpers below so that a task reads as a script.

    say("What is 17 times 23?")                 # a new thread; waits for the answer
    say("And 18 times 23?", thread="maths")     # in the named thread
    answer_question("Teal.")                    # once a worker asks: the answer
    approve(user="UBOB")                        # once an approval is asked: yes
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.evaluation.world import World

Step = Callable[[World], Awaitable[None]]


def say(text: str, thread: str = "", settle: bool = True) -> Step:
    """Ann posts `text` (a new thread, or in the thread named `thread` once it has
    begun) and waits until the bot has answered and (`settle`) its agents are idle."""

    async def step(w: World) -> None:
        await w.say(text, thread, settle)

    return step


def answer_question(text: str) -> Step:
    """Once a worker has asked a person something: Ann answers in the thread."""

    async def step(w: World) -> None:
        await w.event("human.question")
        await w.settle()  # the question is posted before the answer comes
        await w.answer(text)
        await w.event("human.response")
        await w.settle()

    return step


def approve(user: str = "UBOB") -> Step:
    """Once a tool call waits for approval: `user` (an approver) says `approve` in the
    thread, as a person types it."""

    async def step(w: World) -> None:
        await w.event("approval.requested")
        await w.settle()
        await w.answer("approve", user)
        await w.event("approval.decided")
        await w.settle()

    return step


def mention_when_working(worker: str, text: str, tool: str) -> Step:
    """Once `worker` has made its first `tool` call (so it is busy with its task): Ann
    writes `@worker text` in the thread and waits for the runtime to settle."""

    async def step(w: World) -> None:
        await w.expect(lambda: bool(_calls(w, worker, tool)), f"{worker}'s first {tool}")
        w.mark("mention")
        await w.answer(f"@{worker} {text}")
        await w.expect(lambda: bool(w.since("mention")), f"an answer to @{worker}")
        await w.settle()

    return step


def chatter(channel: str, *lines: str) -> Step:
    """People talk in `channel` among themselves (not to the bot)."""

    async def step(w: World) -> None:
        for line in lines:
            await w.post_elsewhere(line, channel)

    return step


def fire_schedule(mark: str) -> Step:
    """The scheduler fires the task's `[[schedules]]` entry now (as its cron would);
    the bot's posts from here on are counted under `mark`."""

    async def step(w: World) -> None:
        w.mark(mark)
        row = next(r for r in w.app.store.triggers.active() if r.source == "config")
        fired = len(w.of_type("trigger.fired"))
        w.app.triggers.firing.fire(row, f"eval-{mark}")
        await w.event("trigger.fired", fired + 1)
        await w.settle()

    return step


def _calls(w: World, worker: str, tool: str) -> list[dict[str, object]]:
    return [c for c in w.tools(worker) if c.get("tool") == tool]
