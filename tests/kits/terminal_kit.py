"""The terminal channel in-process, as `switchboard chat` runs it: a script of lines on
stdin, what a person would read on stdout."""

from __future__ import annotations

import functools
import io

from bot.app import App
from bot.channel_context import ChannelContext
from bot.settle import parked_report, settle
from bot.store.core import Store
from channels.terminal import TerminalChannel
from config.settings import Settings


async def chat(settings: Settings, script: str) -> tuple[str, Store]:
    """Run the chat over `script` until its input ends (or /quit): what it printed,
    and the data dir's store (read-only) as it was left."""
    out = io.StringIO()
    app = App(settings, [])
    app.build()
    term = TerminalChannel(ChannelContext(app.human), settings, io.StringIO(script), out)
    term.settle = functools.partial(settle, app)
    term.leftovers = functools.partial(parked_report, app)
    app.add_channel(term)
    await app.start()
    try:
        assert [h[:2] for h in app.store.health()] == [("terminal", "connected")]
        await term.closed.wait()
    finally:
        await app.stop()
    return out.getvalue(), Store(settings.db_path, readonly=True)
