"""Linking Slack users to `[[people]]` by email address (`users.info`).

A Slack id not listed in `[[people]]` may still be a listed person: when the bot
token has `users:read.email`, `users.info` returns the account's address, and an
address a person lists links that id to them (the link is kept in the store by
`bot.inbox.people.People`). The lookup runs before the event is journaled, so the
message is routed as that person, but only for the first event of an id this
process has not looked up, and within `LOOKUP_SECONDS` so the ack stays well
inside Slack's 3 seconds. A failed or slow lookup leaves the id unlinked (it is
the person named by its Slack id) and is not retried until the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.seam import People

log = logging.getLogger(__name__)

KIND = "slack"
LOOKUP_SECONDS = 1.0
#: Slack users whose address lookup is remembered; past this the oldest is forgotten
#: (written to the bot again, it is looked up again: one users.info call)
USERS_MAX = 10_000


class EmailLinks:
    def __init__(self, client: AsyncWebClient, people: People) -> None:
        self.client = client
        self.people = people
        #: user -> address found (until the person is linked: people keep the link)
        self._emails: dict[str, str] = {}
        # one lookup per user; events of that user arriving meanwhile (Slack sends a
        # mention twice: app_mention and message) wait for the same one. Both maps are
        # per Slack user who wrote: bounded at USERS_MAX, the oldest lookup forgotten
        self._lookups: dict[str, asyncio.Task[None]] = {}

    def email_of(self, user: str) -> str:
        return self._emails.get(user, "")

    async def prepare(self, body: dict[str, Any]) -> None:
        """Before the event is journaled: learn its user's address when that could
        link the user to a person."""
        event = body.get("event")
        if not isinstance(event, dict) or event.get("bot_id"):  # bots are nobody's
            return
        user = event.get("user")
        if not isinstance(user, str) or not user:
            return
        lookup = self._lookups.get(user)
        if lookup is None:
            if not self.people.wants_email(KIND, user):
                return
            lookup = self._lookups[user] = asyncio.create_task(self._look_up(user))
            self._forget_oldest()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(lookup), LOOKUP_SECONDS)

    def _forget_oldest(self) -> None:
        while len(self._lookups) > USERS_MAX:
            oldest = next(iter(self._lookups))
            if not self._lookups[oldest].done():
                break  # still under way (its events wait for it): it goes later
            del self._lookups[oldest]
            self._emails.pop(oldest, None)

    async def _look_up(self, user: str) -> None:
        try:
            answer = await self.client.users_info(user=user)
        except (SlackClientError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            log.info("users.info for %s gave no address: %s", user, exc)
            return
        profile = (answer.get("user") or {}).get("profile") or {}
        email = profile.get("email")
        if isinstance(email, str) and "@" in email:
            self._emails[user] = email.lower()
