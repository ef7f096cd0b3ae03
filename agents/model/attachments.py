"""How files people sent read in an agent's conversation, and their bytes at request time.

A text file up to INLINE_BYTES is put in the message itself; an image the model
reads (png, jpeg, gif, webp, within the API's limits) becomes an image block, a PDF
a document block; anything else is named with its type, size and the path
`read_file` opens. Image and document blocks are kept in the conversation as a
reference to the saved file (`source.type` = `saved_file`), so the stored
conversation and its token estimate stay small; `expand` turns them into base64
blocks when the request is built (`agents/model/llm.py`).
"""

from __future__ import annotations

import base64
import logging
from copy import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agents.loop.marking import untrusted
from agents.model.blocks import (
    Block,
    Blocks,
    DocumentBlock,
    ImageBlock,
    Message,
    Messages,
    SavedFile,
    TextBlock,
    text_block,
)
from bot.core.bounded import Bounded
from bot.core.image_size import pixel_size
from bot.core.messages import Attachment
from bot.inbox.files import IMAGE_TYPES, human_size

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


def blocks(atts: list[Attachment], root: Path) -> Blocks:
    """The content blocks that show these files to the model, in order."""
    out: Blocks = []
    for att in atts:
        out.extend(_blocks(att, root))
    return out


def _blocks(att: Attachment, root: Path) -> Blocks:
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
    return f"[File {label(att)}, saved as {att.path}]\n" + untrusted(body, f"file {att.path}")


def _text(text: str) -> TextBlock:
    return text_block(text)


def _ref(kind: Literal["image", "document"], att: Attachment) -> ImageBlock | DocumentBlock:
    source: SavedFile = {"type": "saved_file", "media_type": att.content_type, "path": att.path}
    if kind == "image":
        return {"type": "image", "source": source}
    return {"type": "document", "source": source}


#: The Messages API takes at most 100 images in one request, and when a request holds
#: more than 20, none over 2000 pixels a side; a long conversation's images are resent
#: every turn, so the request is checked as a whole when it is built.
MAX_IMAGES = 100
MANY_IMAGES = 20
MANY_IMAGES_MAX_SIDE = 2000


@dataclass(slots=True)
class _Room:
    """What one request still allows: images to leave out (the oldest), and the largest
    side an image may have."""

    skip: int
    max_side: int | None


class Expander:
    """Turns saved-file references into base64 blocks for one request.

    A few recent files are kept encoded: every turn of a conversation resends its
    images, and re-reading and encoding megabytes each turn would stall the loop.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: Bounded[str, tuple[str, int]] = Bounded(_CACHE_ITEMS)

    def expand(self, messages: Messages) -> Messages:
        if not any(_has_ref(m) for m in messages):
            return messages
        images = sum(1 for m in messages for b in _listed(m) if _is_image_ref(b))
        room = _Room(
            skip=max(0, images - MAX_IMAGES),
            max_side=MANY_IMAGES_MAX_SIDE if images > MANY_IMAGES else None,
        )
        return [self._message(m, room) if _has_ref(m) else m for m in messages]

    def _message(self, message: Message, room: _Room) -> Message:
        return {**message, "content": [self._block(b, room) for b in _listed(message)]}

    def _block(self, block: Block, room: _Room) -> Block:
        if block["type"] != "image" and block["type"] != "document":
            return block
        source = block["source"]
        if source["type"] != "saved_file":
            return block
        path = source["path"]
        if _is_image_ref(block) and room.skip > 0:
            room.skip -= 1
            return _text(
                f"[Image {path}: left out of this request, which holds more than "
                f"{MAX_IMAGES} images (the model's limit); it is still saved]"
            )
        entry = self._encoded(path, source["media_type"])
        if entry is None:
            return _text(f"[The file {path} is no longer in the data dir]")
        data, side = entry
        if _is_image_ref(block) and room.max_side is not None and side > room.max_side:
            return _text(
                f"[Image {path}: {side} pixels a side, over the {room.max_side} the model "
                f"takes when a request holds more than {MANY_IMAGES} images; it is still saved]"
            )
        block = copy(block)
        block["source"] = {"type": "base64", "media_type": source["media_type"], "data": data}
        return block

    def _encoded(self, relative: str, media_type: str) -> tuple[str, int] | None:
        """(base64 data, largest pixel side or 0) of a saved file."""
        if relative in self._cache:
            self._cache.touch(relative)
            return self._cache[relative]
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root.resolve()):
            return None
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        size = pixel_size(media_type, raw)
        entry = base64.b64encode(raw).decode("ascii"), max(size) if size else 0
        self._cache[relative] = entry  # past _CACHE_ITEMS the least recently used leaves
        return entry


def _has_ref(message: Message) -> bool:
    return any(_is_ref(b) for b in _listed(message))


def _listed(message: Message) -> Blocks:
    """The blocks of a message's content ([] for a string: it holds no reference)."""
    content = message["content"]
    return content if isinstance(content, list) else []


def _is_image_ref(block: Block) -> bool:
    return block["type"] == "image" and block["source"]["type"] == SAVED


def _is_ref(block: Block) -> bool:
    if block["type"] == "image" or block["type"] == "document":
        return block["source"]["type"] == SAVED
    return False
