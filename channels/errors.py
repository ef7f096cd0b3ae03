"""The channels' errors: one family, whatever the platform.

Each adapter maps its SDK's or protocol's exceptions once, at its edge (`raise ... from
exc`): IMAP's in channels/email/imap_client.py, an OAuth sign-in's in
channels/email/oauth.py, Slack's history reads in channels/slack/history.py. A failed
delivery is told to the outbox with the seam's own errors (`bot.seam`: the outbox,
below the channels, decides retry or give up), so those are the core's, not this family.
tests/core/test_layers.py checks that every exception class of `channels/` derives from
`ChannelError`; the CLI catches it as it catches settings errors (`switchboard email
login`).
"""

from __future__ import annotations


class ChannelError(Exception):
    """A channel could not reach, sign in to or read its platform."""
