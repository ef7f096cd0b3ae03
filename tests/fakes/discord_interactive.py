"""The fake Discord's message components (a mixin of `FakeDiscord`): a person's click
goes out as INTERACTION_CREATE (type 3); the bot must answer within 3 s at the
interaction callback (type 7 updates the message; a second answer is refused, as
Discord does), and may edit its messages with PATCH.
"""

from __future__ import annotations

import re
import time

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import json_response, message_body

#: Discord's rule for a CHAT_INPUT command's and option's name; descriptions 1-100 chars
_NAME = re.compile(r"^[-_\w]{1,32}$")


class InteractiveApi:
    def command(
        self, name: str, options: list[p.Payload], user: int = p.ANN, channel: str | int = p.GENERAL
    ) -> str:
        """A person uses a slash command the app registered: INTERACTION_CREATE type 2
        (APPLICATION_COMMAND); returns the interaction's token. Discord sends only
        commands that exist, so an unregistered one raises here."""
        registered = {c["name"]: c for c in self.app_commands}
        found = registered[name]
        chan = self.channels[str(channel)]
        body: p.Payload = {"id": found["id"], "name": name, "type": 1, "options": options}
        if "guild_id" in chan:
            body["guild_id"] = chan["guild_id"]
        return self._interact(chan, 2, user, None, data=body)

    async def _put_commands(self, request: web.Request) -> web.Response:
        """Bulk overwrite of the application's global commands (validated as Discord
        does: names, descriptions); answers the stored commands with their ids."""
        body = await request.json()
        if request.match_info["app"] != str(p.BOT_ID) or not isinstance(body, list):
            return json_response({"message": "Invalid Form Body", "code": 50035}, 400)
        stored = []
        for cmd in body:
            named = [cmd, *(cmd.get("options") or [])]
            if not all(_NAME.match(str(c.get("name", ""))) for c in named) or not all(
                0 < len(str(c.get("description", ""))) <= 100 for c in named
            ):
                return json_response({"message": "Invalid Form Body", "code": 50035}, 400)
            stored.append({"id": str(p.snowflake()), "application_id": str(p.BOT_ID),
                           "version": str(p.snowflake()), "default_member_permissions": None,
                           "type": cmd.get("type", 1), "nsfw": False, **cmd})  # fmt: skip
        with self._changed:
            self.app_commands = stored
            self._changed.notify_all()
        return json_response(stored)

    def click(self, message_id: str, custom_id: str, user: int = p.ANN) -> str:
        """A person clicks a button of a message: INTERACTION_CREATE (type 3, a message
        component) goes out; returns the interaction's token."""
        message = self.messages[message_id]
        chan = self.channels[str(message["channel_id"])]
        body = {"custom_id": custom_id, "component_type": 2}
        return self._interact(chan, 3, user, message_id, data=body, message=message)

    def _interact(
        self, chan: p.Payload, kind: int, user: int, message_id: str | None, **fields: object
    ) -> str:
        """INTERACTION_CREATE of `kind` by `user` in `chan` goes out, as Discord sends it
        (`fields`: its `data`, and the `message` of a component); returns its token."""
        iid = p.snowflake()
        token = f"token-{iid}"
        data: p.Payload = {
            "id": str(iid),
            "application_id": str(p.BOT_ID),
            "type": kind,
            "token": token,
            "version": 1,
            "channel_id": chan["id"],
            "channel": chan,
            **fields,
            "app_permissions": "0",
            "attachment_size_limit": 26214400,
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {},
            "context": 0,
        }
        if "guild_id" in chan:
            data.update(guild_id=chan["guild_id"], guild_locale="en-US", member=p.member(user))
        else:
            data["user"] = p.USERS[user]
        self.interactions[token] = {
            "sent_at": time.monotonic(),
            "responses": [],
            "message_id": message_id,
        }
        self._call(self.gateway.dispatch("INTERACTION_CREATE", data))
        return token

    def responses(self, token: str) -> list[p.Payload]:
        return list(self.interactions[token]["responses"])

    async def _interaction_callback(self, request: web.Request) -> web.Response:
        body, _ = await message_body(request)
        record = self.interactions.get(request.match_info["token"])
        late = record is not None and time.monotonic() - record["sent_at"] > 3.0
        if record is None or late:  # Discord: an interaction not answered within 3 s is gone
            return json_response({"message": "Unknown interaction", "code": 10062}, 404)
        if record["responses"]:
            return json_response(
                {"message": "Interaction has already been acknowledged.", "code": 40060}, 400
            )
        if body.get("type") == 7:  # UPDATE_MESSAGE: edit the message the button is on
            message = self.messages[record["message_id"]]
            update = body.get("data") or {}
            message.update({k: update[k] for k in ("content", "components") if k in update})
            message["edited_timestamp"] = p.now_iso()
        with self._changed:
            record["responses"].append(body)
            self._changed.notify_all()
        return web.Response(status=204)

    async def _edit_message(self, request: web.Request) -> web.Response:
        """PATCH a message; `edit_failures` answer the next edits first (429s...)."""
        self._seen(request)
        body, _ = await message_body(request)
        if self.edit_failures:
            status, payload, headers = self.edit_failures.pop(0)
            return json_response(payload, status, headers)
        message = self.messages.get(request.match_info["mid"])
        if message is None or str(message["channel_id"]) != request.match_info["cid"]:
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        if (refused := self._refuse_if_archived(request.match_info["cid"])) is not None:
            return refused
        message.update({k: body[k] for k in ("content", "components") if k in body})
        message["edited_timestamp"] = p.now_iso()
        with self._changed:
            self.edits.append(request.match_info["mid"])
            self._changed.notify_all()
        return json_response(message)
