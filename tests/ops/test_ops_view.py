"""The operator surface is handed a view (bot/ops/desk.py) and wires nothing itself: the
composition root (bot/operating.py) puts the API's channel on the outbox and records
model calls, and the view's acts reach the running parts."""

from __future__ import annotations

from pathlib import Path

from bot.app import App
from bot.core.messages import Outbound, Target
from bot.ops.operator import Operator
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, make_settings, running_app

API = {"SWITCHBOARD_API_TOKEN": "ci:" + "c" * 24}


async def test_an_operator_built_from_its_view_changes_nothing_of_the_app(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    app = App(make_settings(tmp_path, fake, **API), [])
    app.build()
    try:
        assert "api" in app.human.outbox.channels  # the root put the API's channel there
        assert app.ops.on_call in app.llm.observers
        channels = dict(app.human.outbox.channels)
        observers = list(app.llm.observers)
        again = Operator(app.ops.view)
        assert again.api is not None  # the API is served from the view's settings...
        assert app.human.outbox.channels == channels  # ...but the operator adds no channel
        assert app.llm.observers == observers  # nor hooks itself into the model client
        again.live.close()
    finally:
        app.events.close()
        app.store.close()


async def test_without_an_api_token_no_api_channel_is_registered(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    app = App(make_settings(tmp_path, fake), [])
    app.build()
    try:
        assert app.ops.api is None
        assert "api" not in app.human.outbox.channels
        assert "api" not in app.ops.view.outbox_kinds
    finally:
        app.events.close()
        app.store.close()


async def test_the_views_reads_and_acts_reach_the_running_parts(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    rec = Recorder()
    async with running_app(make_settings(tmp_path, fake, **API), [rec]) as app:
        view = app.ops.view
        assert view.leading() and view.scheduling()  # this node leads, its scheduler runs
        assert "api" in view.outbox_kinds and "terminal" in view.outbox_kinds
        assert view.live_workers() == {} and view.sessions() == 0
        assert view.acts.cancel_trigger("no-such-trigger") is False
        view.acts.say(Outbound("system", Target("terminal"), "said through the view"))
        await rec.wait_text("said through the view")  # through the durable outbox
    assert not view.scheduling()  # stopped with the app
