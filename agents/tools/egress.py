"""Nothing leaves unseen: the check in front of the calls that can carry data out.

Two kinds of call can carry what a model read to a place outside Switchboard: `web_fetch`
(its URL is a message to the host: the path, the query, even the host's name) and an MCP
tool its `[[mcp_servers]]` entry marks `sends` (a mail, a post, a ticket) that needs no
approval of its own. While the model's conversation holds no untrusted content
(agents/tools/seen.py: a page, a file, a tool's result, another agent's words, memory
written in another conversation), both run as before: everything the model knows came
from the people of this conversation. Once it holds some:

- `web_fetch` runs at once when the URL is one a person of the conversation gave (the
  exact URL, or the root page of a host they named), or when its host is in
  SWITCHBOARD_WEB_ALLOW (host names or globs: `docs.python.org`, `*.example.com`);
- anything else, and every call of a `sends` tool, waits for a person's yes through the
  approval flow of gated tools (agents/tools/approvals.py), its first line saying what
  would leave and why; with SWITCHBOARD_CROSS_SCOPE=deny it is refused at once.

Each is a `scope.crossed` event (so an audit line) naming the host, never the query.
Redirects a fetched server answers with are its own and are not checked here (the SSRF
checks of web_fetch still apply at every hop).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agents.loop.prompts import snapshot
from agents.loop.step import Step
from agents.model.blocks import stored
from agents.services import AgentInfo, Services
from agents.tools.scope_guard import ScopeGuard
from agents.tools.seen import Read, read
from agents.tools.toolbox import Guard, ToolResult
from bot.inbox.scope import Crossing, Scope

WEB_FETCH = "web_fetch"
REFUSED = (
    "Error: refused: {why} (SWITCHBOARD_CROSS_SCOPE=deny). Fetch only addresses the people "
    "of this conversation gave, or hosts in SWITCHBOARD_WEB_ALLOW."
)


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    #: SWITCHBOARD_WEB_ALLOW: hosts (or globs) web_fetch may reach whatever it read
    allow: tuple[str, ...] = ()
    #: is this tool an MCP tool marked `sends` that needs no approval of its own?
    sends: Callable[[str], bool] = lambda tool: False

    def allowed_host(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(fnmatch.fnmatchcase(host, glob.lower()) for glob in self.allow)


class EgressGuard:
    """The egress check for one agent (its id names it in approvals and events)."""

    def __init__(
        self, services: Services, scope: Scope, policy: EgressPolicy, info: AgentInfo
    ) -> None:
        self.services = services
        self.scope = scope
        self.policy = policy
        self.info = info

    async def check(self, tool: str, args: dict[str, Any], step: Step) -> ToolResult | None:
        if tool == WEB_FETCH:
            url = str(args.get("url", ""))
            host = _host(url)
            if not host or self.policy.allowed_host(host):
                return None  # not a URL (the tool says so), or a host the operator allows
        elif not self.policy.sends(tool):
            return None
        seen = self._read(step)
        if seen.why is None or (tool == WEB_FETCH and seen.supplied(url)):
            return None
        crossing = _crossing(tool, args, seen.why)
        return self._cross(tool, args, step, crossing)

    def _read(self, step: Step) -> Read:
        conv = step.conv
        if conv is None:  # a call made outside a model's turn: nothing read, all untrusted
            return Read(why="no conversation to read")
        seen = read(conv.messages, snapshot(self.services, conv), step.conversation)
        if self.info.kind == "worker" and step.conversation:  # its people spoke there
            store = self.services.store
            messages, _target = store.agents.load_conversation("coordinator", step.conversation)
            origin = read(stored(messages), None, step.conversation)
            seen.hosts |= origin.hosts
            seen.urls |= origin.urls
        return seen

    def _cross(
        self, tool: str, args: dict[str, Any], step: Step, crossing: Crossing
    ) -> ToolResult | None:
        asker = self.scope.asker(step.conversation)
        if step.crossing_approved:
            self.scope.crossed(self.info.agent_id, asker, tool, crossing, "allowed")
            return None
        outcome = self.scope.outcome(approved=False)
        self.scope.crossed(self.info.agent_id, asker, tool, crossing, outcome)
        if outcome == "denied" or self.services.approvals is None:
            return ToolResult(REFUSED.format(why=crossing.why), is_error=True)
        result: ToolResult = self.services.approvals.cross(
            self.info.agent_id, tool, args, step, crossing
        )
        return result


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # `http://[::1` and the like: web_fetch refuses it itself
        return ""


def _crossing(tool: str, args: dict[str, Any], why: str) -> Crossing:
    """What would leave (the host, never the query: audit lines hold no content)."""
    if tool != WEB_FETCH:
        return Crossing(
            f"whatever {tool} sends",
            f"{tool} sends data out ([[mcp_servers]] sends) and this conversation holds "
            f"untrusted content ({why})",
        )
    url = str(args.get("url", ""))
    parts = urlsplit(url)
    place = f"{parts.scheme}://{_host(url)}"
    beyond = "/…" if (parts.path not in ("", "/") or parts.query) else ""
    return Crossing(
        place + beyond,
        f"this conversation holds untrusted content ({why}), no person in it gave this "
        "address, and SWITCHBOARD_WEB_ALLOW does not list the host",
    )


@dataclass(frozen=True, slots=True)
class Guards:
    """Each agent's guard (`Services.guard_for`): the scope check, then the egress check."""

    scope: Scope
    egress: EgressPolicy

    def __call__(self, services: Services, info: AgentInfo) -> Guard:
        return chained(
            ScopeGuard(services, self.scope, info).check,
            EgressGuard(services, self.scope, self.egress, info).check,
        )


def chained(*guards: Guard) -> Guard:
    """One guard made of several, asked in order: the first that stops a call wins."""

    async def check(tool: str, args: dict[str, Any], step: Step) -> ToolResult | None:
        for guard in guards:
            stop = await guard(tool, args, step)
            if stop is not None:
                return stop
        return None

    return check


def sends_matcher(servers: Sequence[tuple[str, list[str], list[str]]]) -> Callable[[str], bool]:
    """For (server, `sends` globs, `approval` globs) entries: does `<server>__<tool>` send
    data out without an approval of its own (then the egress check asks for one)?"""
    table = {name: (sends, approval) for name, sends, approval in servers}

    def sends(tool: str) -> bool:
        server, sep, name = tool.partition("__")
        globs = table.get(server) if sep else None
        if not globs:
            return False
        matches = [any(fnmatch.fnmatchcase(name, g) for g in group) for group in globs]
        return matches[0] and not matches[1]

    return sends
