"""The dashboard's hooks card: per hook its kind, where it posts and its last delivery,
then the newest deliveries and what became of each (handed over, coalesced, posted,
filtered...). Ids and outcomes only, never a payload. Empty when no hook is configured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.ops.html import Markup, section, table, when

if TYPE_CHECKING:
    from bot.ops.hooks import Hooks

SHOWN = 15


def hooks_card(hooks: Hooks | None) -> Markup:
    if hooks is None:
        return Markup("")
    desk = hooks.desk
    summary = [
        (h.name, h.kind, h.deliver_to, h.agent, desk.last.get(h.name, {}).get("count", 0),
         when(desk.last.get(h.name, {}).get("at")), desk.last.get(h.name, {}).get("outcome", "-"))
        for h in hooks.configs.values()
    ]  # fmt: skip
    recent = [
        (when(d["at"]), d["hook"], d["id"], d["status"], d["outcome"])
        for d in list(desk.recent)[:SHOWN]
    ]
    body = Markup("".join([
        table(["hook", "kind", "posts to", "agent", "taken", "last", "outcome"], summary),
        table(["received", "hook", "delivery", "status", "outcome"], recent, "no delivery yet"),
    ]))  # fmt: skip
    return section(f"Hooks ({len(summary)})", body, id="hooks")
