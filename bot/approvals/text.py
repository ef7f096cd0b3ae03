"""What an approval request and its decision say to people.

The request names the tool, whose conversation asked, and every argument: keys in the
tool's own schema order (the gate stores them so), each value as JSON on its own line
inside a code block. A value too long to show, and everything past the message's
budget, is named with its size and is in full in an attached file, never cut out of
sight. JSON's own escapes (`\\u0060` for a backtick, `\\u003c` for `<`...) keep the
text equal to the arguments while no platform can read markup in it: no code block
closed early, no Slack link or mention, no Discord markdown, no HTML in an email.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from bot.core.names import who
from bot.store.approvals import ApprovalRow

VALUE_SHOWN = 300  # characters of one value's JSON shown inline
ARGS_SHOWN = 1200  # characters of all arguments shown inline (a Discord post is 2,000)
KEY_SHOWN = 80
#: characters of a place a crossing reaches (or a requester's name) shown in the request
PLACE_SHOWN = 120
#: characters markup could read inside a code block (Slack's `<@U1>` mentions and
#: `<url|label>` links, a closing fence, HTML), as the JSON escapes that mean the same:
#: they occur in JSON only inside strings, so the text stays equal JSON
_TABLE = str.maketrans({"`": "\\u0060", "<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def inert_json(value: Any) -> str:
    """Compact JSON of `value` that no markdown, mrkdwn or HTML renderer reads as markup."""
    return json.dumps(value, ensure_ascii=False, default=str).translate(_TABLE)


def ordered(args: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments with the keys of the tool's schema first, in its order."""
    props = list(((schema or {}).get("properties") or {}).keys())
    first = {key: args[key] for key in props if key in args}
    return {**first, **{k: v for k, v in args.items() if k not in first}}


def argument_lines(args: dict[str, Any], file_name: str) -> tuple[list[str], bool]:
    """The lines showing `args` and whether some value is only in the attached file."""
    lines: list[str] = []
    budget, attached = ARGS_SHOWN, False
    for index, (key, value) in enumerate(args.items()):
        name = inert_json(key if len(key) <= KEY_SHOWN else key[:KEY_SHOWN] + "…")
        shown = inert_json(value)
        if budget <= 0:
            rest = len(args) - index
            lines.append(f"... and {rest} more argument(s), in full in {file_name}")
            return lines, True
        if len(shown) > min(VALUE_SHOWN, budget) or len(key) > KEY_SHOWN:
            size = len(json.dumps(value, ensure_ascii=False, default=str))
            shown, attached = f"({size:,} characters, in full in {file_name})", True
        budget -= len(name) + len(shown)
        lines.append(f"{name}: {shown}")
    return lines, attached


def arguments_file(args: dict[str, Any]) -> bytes:
    """The attached file: every argument, exactly, in the schema's order."""
    return json.dumps(args, indent=2, ensure_ascii=False, default=str).encode("utf-8")


def file_name(row: ApprovalRow) -> str:
    return f"{row.tool}-arguments.json"


def request_text(row: ApprovalRow) -> str:
    """The request; a call reaching outside its conversation (bot/inbox/scope.py) names what
    it reaches first, so the text rebuilt when the decision edits it still says so. Every
    part but the arguments is bounded (`PLACE_SHOWN`), so the tool, what it reaches and
    how to answer fit in one Slack section (3,000 characters) and one Discord post."""
    lines, _ = argument_lines(row.args, file_name(row))
    asker = shortened(who(row.requester, row.requester_id))
    asked = f", asked in {asker}'s conversation" if asker else ""
    body = "\n".join(lines) if lines else "(no arguments)"
    return scope_line(row) + (
        f"Approval needed: {row.speaker} wants to run {row.tool}{asked}, with\n"
        f"```\n{body}\n```\n"
        "Reply `approve` or `deny <reason>` in this thread."
    )


def scope_line(row: ApprovalRow) -> str:
    """`Outside this conversation: <what> (<why>).` for a crossing, else "". What the
    model named (a path, a target) is shown as it is, or, holding characters markup
    could read, as inline code no platform reads as markup; a long one by its start and
    end (an address's domain), with its size: a 3,000-character address must not push
    the rest of the request out of a Slack section."""
    if "scope" not in row.held:
        return ""
    full = str(row.held["scope"])
    what = shortened(full)
    why = str(row.held.get("why") or "").replace(full, what)
    if len(why) > 3 * PLACE_SHOWN:
        why = why[: 3 * PLACE_SHOWN] + "…"
    if not _PLAIN.fullmatch(what) or "__" in what:
        what = f"`{inert_text(what)}`"
    if len(full) > PLACE_SHOWN:
        what += f" ({len(full):,} characters: in full in the arguments)"
    why = _MARKUP.sub(r"\\\g<0>", inert_text(why))
    return f"Outside this conversation: {what}" + (f" ({why})" if why else "") + ".\n"


def shortened(text: str) -> str:
    """`text` within PLACE_SHOWN characters: its start and its end (an address's domain,
    a path's file name), the middle left out with a mark."""
    if len(text) <= PLACE_SHOWN:
        return text
    tail = PLACE_SHOWN * 2 // 3
    return f"{text[: PLACE_SHOWN - tail - 1]}…{text[-tail:]}"


def inert_text(text: str) -> str:
    """`text` with the characters markup reads in code (backtick, `<`, `>`, `&`) as the
    JSON escapes that name them, so it shows as text inside a code span."""
    return text.translate(_TABLE)


#: a path or target no platform reads as markup, shown as it is
_PLAIN = re.compile(r"[\w./:@+=,-]*")
#: markdown punctuation outside code, escaped with a backslash (links, emphasis)
_MARKUP = re.compile(r"[\\\[\]()*_~|#!]")


def needs_file(row: ApprovalRow) -> bool:
    return argument_lines(row.args, file_name(row))[1]


def decision_text(row: ApprovalRow) -> str:
    when = datetime.fromtimestamp(row.decided_at or 0, UTC).strftime("%Y-%m-%d %H:%M UTC")
    by = who(row.decided_by, row.decider_id)
    if row.how == "timeout":
        return f"{(row.reason or 'no decision').capitalize()} ({when}). {row.tool} was not run."
    if row.status != "denied":  # approved, or already running
        return f"Approved by {by} at {when}: {row.tool} runs now."
    reason = f": {row.reason}" if row.reason else ""
    return f"Denied by {by} at {when}{reason}. {row.tool} was not run."


def timeout_reason(seconds: float) -> str:
    return f"no decision within {seconds:g} s, treated as denied"
