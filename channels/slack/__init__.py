"""The Slack channel (issue 4): slack-bolt's AsyncApp over Socket Mode or HTTP Events.

Imported by the app only when Slack is configured, so slack-bolt loads only then.
Roles: `connection` (bolt app, Socket Mode or HTTP endpoint), `events` (Slack event
to Inbound: filters, threads as conversations), `post` and `format` (Outbound to
chat.postMessage: mrkdwn, speaker, split, error mapping), `identity` (auth.test),
`threads` (the threads the bot is in), `types` (raw payloads).
"""

from __future__ import annotations

from bot.seam import ChannelContext
from channels.slack.channel import SlackChannel
from config.settings import Settings

__all__ = ["WARM", "SlackChannel", "build"]
#: modules the first answer needs but the connection does not: loaded in a worker
#: thread once the channels are up (bot/app.py `_warm`)
WARM = ("slackify_markdown",)


def build(settings: Settings, ctx: ChannelContext) -> SlackChannel:
    return SlackChannel(settings, ctx)
