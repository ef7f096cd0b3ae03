"""Outbound text for Slack: markdown to mrkdwn, the speaker shown, split under the limit.

Conversion is slackify-markdown's (a markdown-it parser): it turns `**bold**` into
`*bold*`, links into `<url|label>`, and escapes `&`, `<`, `>` as Slack requires.
mrkdwn has no tables, so a table becomes an aligned code block first (channels/tables.py).
Splitting is `channels.split.split_message` on the converted text, so a code block cut
in two is closed and reopened and every chunk renders on its own.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING, Any

from bot.seam import Outbound, lazy
from channels.split import split_message
from channels.tables import tables_as_code

if TYPE_CHECKING:
    import markdown_it
    from slackify_markdown import slackify
else:  # a markdown-it parser: loaded after the socket opens (WARM in channels/slack)
    slackify = lazy("slackify_markdown.slackify")
    markdown_it = lazy("markdown_it")

log = logging.getLogger(__name__)

#: Slack truncates `text` past 40,000 characters and advises staying under 4,000.
TEXT_LIMIT = 3900
#: User and channel mentions the agent wrote (`<@U123>`, `<#C123>`) survive escaping;
#: `<!channel>`/`<!here>` deliberately do not: an agent must not page a whole channel.
_BLOCK_START = re.compile(r"(```|&gt;|>|•|◦|\d+\.\s)")
#: Code the converter leaves raw; Slack needs `&`, `<`, `>` escaped there too.
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_MENTION = re.compile(r"&lt;([@#][UWC][A-Z0-9]+(?:\|[^&]*)?)&gt;")


#: the converter of each thread that converts (the loop's, in practice): one parser
_held = threading.local()


def to_mrkdwn(markdown: str) -> str:
    markdown = tables_as_code(markdown)
    try:
        converted = _converter().render(markdown.replace(slackify.SlackifyMarkdown.NEW_LINE, ""))
    except Exception:  # a converter bug must not lose the message
        _held.parser = None  # its renderer may be left mid-list: the next call builds anew
        log.exception("markdown conversion failed; sending escaped plain text")
        converted = escape(markdown)
    converted = _CODE.sub(lambda m: escape(m.group(0)), converted)
    return _MENTION.sub(r"<\1>", converted).strip("\n")


def _converter() -> Any:
    """What `slackify_markdown.slackify_markdown` builds at every call (its parser, ~0.4
    ms of CPU, three times the conversion of a short answer), built once per thread. Its
    renderer keeps state only within a render (a heading or list open, closed by the end
    of it), so a render leaves it as it found it."""
    parser = getattr(_held, "parser", None)
    if parser is None:
        parser = markdown_it.MarkdownIt(
            "gfm-like",
            renderer_cls=slackify.SlackifyMarkdown,
            options_update={"html": False, "linkify": False, "breaks": False},
        ).disable("table")
        _held.parser = parser
    return parser


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def heading(msg: Outbound, custom_username: bool) -> str:
    """Who speaks, when the post itself cannot show it as its username."""
    if custom_username:
        return ""
    if msg.kind == "question":
        return f"*{escape(msg.agent)} asks:*"
    return f"*{escape(msg.agent)}:*"


def footer(msg: Outbound) -> str:
    if msg.kind != "question":
        return ""
    return f"_Reply in this thread to answer {escape(msg.agent)}._"


def render(msg: Outbound, custom_username: bool) -> list[str]:
    """The chunks to post, in order: the speaker on the first, the reply hint on the last."""
    head, foot = heading(msg, custom_username), footer(msg)
    budget = TEXT_LIMIT - len(head) - len(foot) - 2
    chunks = split_message(to_mrkdwn(msg.text), budget) or ["_(empty message)_"]
    if head:
        # a fence, quote or list must start its own line to render
        sep = "\n" if _BLOCK_START.match(chunks[0]) else " "
        chunks[0] = f"{head}{sep}{chunks[0]}"
    if foot:
        chunks[-1] = f"{chunks[-1]}\n{foot}"
    return chunks
