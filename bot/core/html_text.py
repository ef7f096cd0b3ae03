"""HTML -> readable text (markdown-ish, html2text), bounded in size, nesting and time.

Mail bodies and fetched pages are written by strangers. html2text's output grows with
the square of list nesting (a 200 KB page of nested lists took 47 s and gigabytes), so
the input is cut at `max_chars`, tags nested deeper than `max_depth` are flattened to
spaces (their text stays), and the converter is fed in chunks against a deadline:
past `seconds` it stops and says the rest was not converted. `html_to_text` is for a
worker thread; `to_text` runs it there so the event loop never waits on it.
Touches nothing but html2text, loaded at the first conversion.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.core.lazy import lazy

if TYPE_CHECKING:
    import html2text
else:  # loaded at the first page or mail converted, not at start (~10 ms, ~0.5 MB)
    html2text = lazy("html2text")

_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*>")
_TAGS = re.compile(r"<[^>]*>")
#: elements that never have a closing tag, so never nest
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
CHUNK = 16_384
CUT_NOTE = "\n\n[The rest of this HTML was not converted: it is too large or too slow.]"


@dataclass(frozen=True, slots=True)
class HtmlLimits:
    max_chars: int = 1_000_000
    max_depth: int = 24
    seconds: float = 2.0


DEFAULT = HtmlLimits()


def html_to_text(html: str, limits: HtmlLimits = DEFAULT) -> str:
    """The text of `html`, within `limits`; never raises. Blocking: call it off the loop."""
    cut = len(html) > limits.max_chars
    flat = flatten(html[: limits.max_chars], limits.max_depth)
    try:
        text, done = _convert(flat, time.monotonic() + limits.seconds)
    except Exception:  # html2text on broken markup: the text without its tags
        text, done = _TAGS.sub(" ", flat), True
    return text + (CUT_NOTE if cut or not done else "")


async def to_text(html: str, limits: HtmlLimits = DEFAULT) -> str:
    """`html_to_text` in a worker thread: the event loop keeps serving meanwhile."""
    return await asyncio.to_thread(html_to_text, html, limits)


def flatten(html: str, max_depth: int) -> str:
    """`html` with every tag opened deeper than `max_depth` replaced by a space."""
    depth = 0

    def keep(match: re.Match[str]) -> str:
        nonlocal depth
        closing, name = match.group(1), match.group(2).lower()
        if name in VOID or match.group(0).endswith("/>"):
            return match.group(0) if depth < max_depth else " "
        if closing:
            depth = max(0, depth - 1)
            return match.group(0) if depth < max_depth else " "
        depth += 1
        return match.group(0) if depth <= max_depth else " "

    return _TAG.sub(keep, html)


def _convert(html: str, deadline: float) -> tuple[str, bool]:
    converter = html2text.HTML2Text()
    converter.body_width = 0  # keep paragraphs on one line; the model does not need wrapping
    converter.ignore_images = True
    done = True
    for start in range(0, len(html), CHUNK):
        if time.monotonic() > deadline:
            done = False
            break
        converter.feed(html[start : start + CHUNK])
    converter.feed("")
    return converter.optwrap(converter.finish()), done
