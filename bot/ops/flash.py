"""What an operator action answers, shown on the page it came from (post/redirect/get).

An action keeps its sentence here under a random id and redirects (303) back to the
page its form was on with `?done=<id>`; that page shows the sentence above its body.
A reload shows it again and posts nothing. Only ids made here show anything, so a link
cannot put words of its own on an operator's page; the newest FLASHES are kept.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from bot.core.bounded import Bounded
from bot.ops.html import Markup, esc

FLASHES = 512
PARAM = "done"


@dataclass(frozen=True, slots=True)
class Flash:
    text: str
    ok: bool


class Flashes:
    def __init__(self) -> None:
        self._kept: Bounded[str, Flash] = Bounded(FLASHES)  # the newest FLASHES

    def keep(self, text: str, ok: bool) -> str:
        key = secrets.token_urlsafe(12)
        self._kept[key] = Flash(text, ok)
        return key

    def redirect_to(self, back: str, text: str, ok: bool) -> str:
        """Where an action's answer goes: `back` (a path on this site) with the flash."""
        path = safe_back(back)
        parts = urlsplit(path)
        params = [(k, v) for k, v in parse_qsl(parts.query) if k != PARAM]
        return f"{parts.path}?{urlencode([*params, (PARAM, self.keep(text, ok))])}"

    def shown(self, key: str | None) -> Markup:
        flash = self._kept.get(key or "")
        if flash is None:
            return Markup("")
        kind = "ok" if flash.ok else "error"
        return Markup(f'<div class="flash {kind}" role="status">{esc(flash.text)}</div>')


def safe_back(back: object) -> str:
    """A path on this site, else the overview: never another host (`//evil`, `/\\evil`)."""
    if not isinstance(back, str) or not back.startswith("/") or back.startswith("//"):
        return "/"
    if "\\" in back or any(ord(c) < 32 for c in back) or len(back) > 2000:
        return "/"
    return back
