"""The email channel (IMAP in, SMTP out): `build(settings, ctx)` for the app.

Modules by role: `imap` (connection), `parse` and `compose` (protocol), `safety` and
`auth` (who may be answered, who is verified), `threads` (whose each thread is),
`smtp` (sending), `channel` (dispatch to the human node).
"""

from __future__ import annotations

from bot.seam import ChannelContext
from channels.email.channel import EmailChannel
from config.settings import Settings

__all__ = ["EmailChannel", "build"]


def build(settings: Settings, ctx: ChannelContext) -> EmailChannel:
    return EmailChannel(settings, ctx)
