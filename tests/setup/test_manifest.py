"""The one Slack app manifest (docs/slack.md) covers what the code uses: every Web API
method channels/slack calls has a scope in it that allows the call, every event the
code listens to is subscribed with its scope, and the page shows exactly the manifest
`switchboard init` prints."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from slack_sdk.web.async_client import AsyncWebClient

from bot.setup.manifest import manifest, render

ROOT = Path(__file__).resolve().parents[2]
SLACK = ROOT / "channels" / "slack"

#: Web API method -> the bot scopes it needs, from each method's page on docs.slack.dev
#: ("Scopes: Bot token"); where a method serves several kinds of conversation and the
#: code uses it for all of them (history of channels, private channels, DMs, group
#: DMs), every kind's scope. () = no scope (auth.test, views.publish); None = an
#: app-level token's `connections:write`, not a bot scope.
METHOD_SCOPES: dict[str, tuple[str, ...] | None] = {
    "auth.test": (),
    "apps.connections.open": None,
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "chat.startStream": ("chat:write",),
    "chat.appendStream": ("chat:write",),
    "chat.stopStream": ("chat:write",),
    "assistant.threads.setStatus": ("chat:write",),  # or assistant:write (2026-03 change)
    "reactions.add": ("reactions:write",),
    "conversations.open": ("im:write",),
    "conversations.members": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.history": (
        "channels:history",
        "groups:history",
        "im:history",
        "mpim:history",
    ),
    "conversations.replies": (
        "channels:history",
        "groups:history",
        "im:history",
        "mpim:history",
    ),
    "users.info": ("users:read", "users:read.email"),  # the profile's email too
    "views.publish": (),
    "files.info": ("files:read",),
    "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
}

#: event -> the scope Slack requires to subscribe to it (docs.slack.dev/reference/events)
EVENT_SCOPES = {
    "app_mention": "app_mentions:read",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
    "app_home_opened": None,
    "agent_session_stopped": "assistant:write",
}

FAMILIES = ("chat", "conversations", "assistant", "reactions", "files", "users", "views")
FAMILIES += ("auth", "apps", "team", "bots", "pins", "bookmarks", "reminders", "search")


def _sdk_method(name: str) -> str | None:
    """`chat_postMessage` -> `chat.postMessage` when the SDK has it as a Web API method."""
    if name.split("_")[0] in FAMILIES and callable(getattr(AsyncWebClient, name, None)):
        return name.replace("_", ".")
    return None


def methods_called() -> dict[str, str]:
    """Every Web API method channels/slack calls, with a file that calls it."""
    found: dict[str, str] = {}
    for path in sorted(SLACK.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Attribute):
                names.append(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.append(node.value)
                if re.fullmatch(r"[a-z]+(\.[a-zA-Z]+)+", node.value):
                    names.append(node.value.replace(".", "_"))
            for name in names:
                method = _sdk_method(name)
                if method:
                    found.setdefault(method, path.name)
    return found


def events_listened() -> set[str]:
    """The events channels/slack handles: bolt's `app.event("...")` and the dispatch on
    an event's `type` (events.py listens to every event and picks these)."""
    events: set[str] = set()
    for path in SLACK.glob("*.py"):
        text = path.read_text()
        events |= set(re.findall(r'app\.event\("([a-z_]+)"\)', text))
        if path.name == "events.py":
            events |= set(re.findall(r'kind == "([a-z_]+)"', text))
    expanded = set()
    for event in events:
        if event == "message":  # channels, private channels, DMs, group DMs
            expanded |= {"message.channels", "message.groups", "message.im", "message.mpim"}
        else:
            expanded.add(event)
    return expanded


def documented() -> dict:
    page = (ROOT / "docs" / "slack.md").read_text()
    blocks = re.findall(r"```json\n(.*?)\n```", page, re.S)
    assert len(blocks) == 1, "docs/slack.md holds exactly one app manifest"
    return json.loads(blocks[0])


def test_the_page_shows_the_manifest_init_prints() -> None:
    assert documented() == manifest("Switchboard")
    assert json.loads(render("Ops Bot"))["features"]["bot_user"]["display_name"] == "Ops Bot"


def test_every_method_the_code_calls_has_its_scope() -> None:
    called = methods_called()
    # the scan finds what we know the code calls (a broken scan must not pass)
    assert {"chat.postMessage", "conversations.replies", "auth.test"} <= set(called)
    assert {"assistant.threads.setStatus", "files.completeUploadExternal"} <= set(called)
    unknown = {m: f for m, f in called.items() if m not in METHOD_SCOPES}
    assert not unknown, f"add these methods' scopes (docs.slack.dev) to METHOD_SCOPES: {unknown}"
    granted = set(documented()["oauth_config"]["scopes"]["bot"])
    for method, where in called.items():
        needed = METHOD_SCOPES[method] or ()
        missing = set(needed) - granted
        assert not missing, f"{method} ({where}) needs {sorted(missing)} in the manifest"


def test_every_event_the_code_handles_is_subscribed_with_its_scope() -> None:
    app = documented()
    subscribed = set(app["settings"]["event_subscriptions"]["bot_events"])
    granted = set(app["oauth_config"]["scopes"]["bot"])
    listened = events_listened()
    assert {"app_mention", "message.im", "app_home_opened", "agent_session_stopped"} <= listened
    assert listened <= subscribed, f"subscribe to {sorted(listened - subscribed)}"
    for event in subscribed:
        assert event in EVENT_SCOPES, f"add {event}'s scope to EVENT_SCOPES"
        scope = EVENT_SCOPES[event]
        assert scope is None or scope in granted, f"{event} needs {scope}"


def test_commands_buttons_and_home_are_declared() -> None:
    app = documented()
    code = "\n".join(p.read_text() for p in SLACK.glob("*.py"))
    if "app.command(" in code:
        assert "commands" in app["oauth_config"]["scopes"]["bot"]
        assert [c["command"] for c in app["features"]["slash_commands"]] == ["/switchboard"]
    if "app.action(" in code:
        assert app["settings"]["interactivity"]["is_enabled"] is True
    if "views_publish" in code:
        assert app["features"]["app_home"]["home_tab_enabled"] is True
