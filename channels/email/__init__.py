"""The email channel (IMAP in, SMTP out): `build(settings, human)` for the app.

Modules by role: `imap` (connection), `parse` and `compose` (protocol), `safety`
(who may be answered), `smtp` (sending), `channel` (dispatch to the human node).
"""

from __future__ import annotations

from bot.human import HumanNode
from channels.email.channel import EmailChannel
from config.settings import Settings

__all__ = ["EmailChannel", "build"]


def build(settings: Settings, human: HumanNode) -> EmailChannel:
    return EmailChannel(settings, human)
