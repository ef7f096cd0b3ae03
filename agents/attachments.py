"""How files people sent read in an agent's conversation, and their bytes at request time.

A text file up to INLINE_BYTES is put in the message itself; an image the model
reads (png, jpeg, gif, webp, within the API's limits) becomes an image block, a PDF
a document block; anything else is named with its type, size and the path
`read_file` opens. Image and document blocks are kept in the conversation as a
reference to the saved file (`source.type` = `saved_file`), so the stored
conversation and its token estimate stay small; `expand` turns them into base64
blocks when the request is built (`agents/llm.py`).
"""

from __future__ import annotations

import base64
import logging
from collections import OrderedDict
from pathlib import Path
from typing import Any

from bot.files import IMAGE_TYPES, human_size
from bot.messages import Attachment

log = logging.getLogger(__name__)

INLINE_BYTES = 20_000  # the contract: text files up to 20 KB go in the message
SAVED = "saved_file"
TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/x-yaml",
    "application/yaml",
    "application/x-sh",
    "application/javascript",
    "application/sql",
    "application/toml",
    "application/x-ndjson",
)
_CACHE_ITEMS = 16


def is_text_type(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type in TEXT_TYPES


def label(att: Attachment) -> str:
    return f"{att.name} ({human_size(att.size)}, {att.content_type})"


def blocks(atts: list[Attachment], root: Path) -> list[dict[str, Any]]:
    """The content blocks that show these files to the model, in order."""
    out: list[dict[str, Any]] = []
    for att in atts:
        out.extend(_blocks(att, root))
    return out


def _blocks(att: Attachment, root: Path) -> list[dict[str, Any]]:
    if not att.path:
        return [_text(f"[File {att.name}: {att.note or 'not available'}]")]
    where = f"saved as {att.path}"
    if att.note:
        return [_text(f"[File {label(att)}, {where}; {att.note}. Open it with read_file.]")]
    if att.content_type in IMAGE_TYPES:
        return [_text(f"[Image {label(att)}, {where}]"), _ref("image", att)]
    if att.content_type == "application/pdf":
        return [_text(f"[PDF {label(att)}, {where}]"), _ref("document", att)]
    if is_text_type(att.content_type) or att.content_type == "application/octet-stream":
        inline = _inline(att, root)
        if inline is not None:
            return [_text(inline)]
    return [_text(f"[File {label(att)}, {where}. Open it with read_file.]")]


def _inline(att: Attachment, root: Path) -> str | None:
    """The file as text inside the message, or None (too big, binary, unreadable)."""
    if att.size > INLINE_BYTES:
        return None
    try:
        data = (root / att.path).read_bytes()
    except OSError:
        return None
    if b"\x00" in data:
        return None
    try:
        body = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return f"[File {label(att)}, saved as {att.path}]\n```\n{body}\n```"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _ref(kind: str, att: Attachment) -> dict[str, Any]:
    return {
        "type": kind,
        "source": {"type": SAVED, "media_type": att.content_type, "path": att.path},
    }


class Expander:
    """Turns saved-file references into base64 blocks for one request.

    A few recent files are kept encoded: every turn of a conversation resends its
    images, and re-reading and encoding megabytes each turn would stall the loop.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: OrderedDict[str, str] = OrderedDict()

    def expand(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not any(_has_ref(m) for m in messages):
            return messages
        return [self._message(m) if _has_ref(m) else m for m in messages]

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        return {**message, "content": [self._block(b) for b in message["content"]]}

    def _block(self, block: dict[str, Any]) -> dict[str, Any]:
        source = block.get("source")
        if not isinstance(source, dict) or source.get("type") != SAVED:
            return block
        data = self._encoded(str(source.get("path", "")))
        if data is None:
            return _text(f"[The file {source.get('path')} is no longer in the data dir]")
        expanded = {"type": "base64", "media_type": source["media_type"], "data": data}
        return {**block, "source": expanded}

    def _encoded(self, relative: str) -> str | None:
        if relative in self._cache:
            self._cache.move_to_end(relative)
            return self._cache[relative]
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root.resolve()):
            return None
        try:
            data = base64.b64encode(path.read_bytes()).decode("ascii")
        except OSError:
            return None
        self._cache[relative] = data
        if len(self._cache) > _CACHE_ITEMS:
            self._cache.popitem(last=False)
        return data


def _has_ref(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(_is_ref(b) for b in content)


def _is_ref(block: Any) -> bool:
    source = block.get("source") if isinstance(block, dict) else None
    return isinstance(source, dict) and source.get("type") == SAVED
