"""Live progress in the terminal and `stop`: the real app, the fake model streaming its
answer (server-sent events, paced), and what a person reads on stdout."""

from __future__ import annotations

import io

from bot.app import App
from bot.channel_context import ChannelContext
from bot.core.messages import COORDINATOR, HUMAN, BusMessage
from channels.terminal import BANNER, TerminalChannel
from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, Reply, text, tool
from tests.kits.app_kit import Recorder, events, eventually, inbound, running_app


def streaming(settings: Settings) -> Settings:
    return settings.model_copy(update={"streaming": "on"})


ANSWER = "The deploy went out at noon; all checks are green and nothing needs doing."


def terminal(app: App, settings: Settings, out: io.StringIO, status: bool) -> TerminalChannel:
    term = TerminalChannel(ChannelContext(app.human), settings, io.StringIO(""), out)
    term.live.show_status = status
    return term


async def test_terminal_shows_status_then_streams_the_answer_once(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: Reply([text(ANSWER)], pace=0.05, piece=8)
    settings = streaming(settings)
    out = io.StringIO()
    app = App(settings, [])
    app.build()
    term = terminal(app, settings, out, status=True)
    app.add_channel(term)
    await app.start()
    try:
        app.human.accept(inbound("how did the deploy go?"))
        thinking = "⋯ coordinator is thinking…"
        await eventually(lambda: thinking in out.getvalue(), 1.0)  # before any text
        await eventually(lambda: "[coordinator] The deploy" in out.getvalue())
        partial = out.getvalue()
        assert ANSWER not in partial  # seen as it is written, before the whole answer
        await eventually(lambda: ANSWER + "\n" in out.getvalue())
        await eventually(
            lambda: any(e["type"] == "message.sent" for e in events(settings.data_dir))
        )
    finally:
        await app.stop()
    printed = out.getvalue()
    assert printed.count(ANSWER) == 1
    assert f"[coordinator] {ANSWER}\n" in printed
    assert fake.calls[0].body.get("stream") is True


async def test_streaming_off_shows_the_answer_once_whole(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text(ANSWER)]
    out = io.StringIO()
    app = App(settings, [])
    app.build()
    app.add_channel(terminal(app, settings, out, status=False))
    await app.start()
    try:
        app.human.accept(inbound("hi"))
        await eventually(lambda: ANSWER in out.getvalue())
    finally:
        await app.stop()
    assert fake.calls[0].body["stream"]  # every call streams (any max_tokens works)
    assert out.getvalue() == f"{BANNER}\n[coordinator] {ANSWER}\n"


def slow_then_quick(call: Call) -> Reply:
    if "second" in call.last_text:
        return Reply([text("second answer")])
    return Reply([text("this answer will never be posted")], delay=30)


async def test_stop_alone_cancels_the_model_call_and_acknowledges(
    settings: Settings, fake: FakeAnthropic
) -> None:
    fake.responder = slow_then_quick
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("first question"))
        await eventually(lambda: len(fake.calls) == 1)
        app.human.accept(inbound("stop"))
        await rec.wait_text("Stopped.")
        app.human.accept(inbound("second question"))
        await rec.wait_text("second answer")
    assert rec.texts() == ["Stopped.", "second answer"]
    assert len(fake.calls) == 2  # nobody saw the word `stop`; the slow call was not repeated
    assert "stop" not in fake.calls[1].last_text.split()
    assert [e["type"] for e in events(settings.data_dir, "turn.stopped")] == ["turn.stopped"]
    messages = fake.calls[1].messages  # no words put in the model's mouth: a runtime note
    assert [m["role"] for m in messages] == ["user"]
    assert "ended this turn" in fake.calls[1].all_text


async def test_stop_with_nothing_running_says_so(settings: Settings, fake: FakeAnthropic) -> None:
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("stop"))
        await rec.wait_text("Nothing is running here")
    assert fake.calls == []


async def test_at_worker_stop_stops_that_worker(settings: Settings, fake: FakeAnthropic) -> None:
    def responder(call: Call) -> list[dict] | Reply:
        if call.agent == "Alice":
            return Reply([text("still digging")], delay=30)
        if "start alice" in call.last_text:
            return [tool("spawn_worker", name="Alice", task="dig")]
        return [text("ok")]

    fake.responder = responder
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("start alice"))
        await eventually(lambda: any(c.agent == "Alice" for c in fake.calls))
        app.human.accept(inbound("@Alice stop"))
        await rec.wait_text("Worker Alice stopped.")
        assert "alice" not in app.team.workers
    assert [e["type"] for e in events(settings.data_dir, "worker.stopped")] == ["worker.stopped"]


async def test_only_the_routers_stop_stops(settings: Settings, fake: FakeAnthropic) -> None:
    """The word alone on the bus, not marked a stop by the router (here a broadcast, and
    a person's message put on the bus without the mark), is words for the model."""
    fake.responder = lambda call: [text("noted")]
    rec = Recorder()
    async with running_app(settings, [rec]) as app:
        app.human.accept(inbound("@all stop"))
        await eventually(lambda: len(fake.calls) == 1 and not app.coordinator.sessions)
        app.bus.send(BusMessage(HUMAN, COORDINATOR, "stop", kind="human", conversation="terminal",
                                meta={"reply_to": "terminal"}))  # fmt: skip
        await eventually(lambda: len(fake.calls) == 2 and not app.coordinator.sessions)
    assert [c.last_text.split()[-1] for c in fake.calls] == ["stop", "stop"]
    assert not any("Nothing is running here" in m.text for m in rec.sent)
