"""Images and documents in a conversation: what they cost the model (which their JSON
size does not tell, for compaction), and leaving them out when the API refuses them.
"""

from __future__ import annotations

from typing import Any

Messages = list[dict[str, Any]]
Blocks = list[dict[str, Any]]
MEDIA_NOTE = "[{kind} left out: the model's API refused it ({error})]"


#: what an image costs the model: up to about 1,600 tokens (a ~1.15 megapixel image;
#: larger ones are scaled down), while its stored reference is a few characters
IMAGE_TOKENS = 1600
#: a PDF is read page by page as text and an image (~1,500-3,000 tokens a page); the
#: stored reference does not know its pages, so a few pages' worth is counted
DOCUMENT_TOKENS = 10_000


def media_tokens(messages: Messages) -> int:
    """The tokens of the images and documents a conversation shows the model, which
    its JSON size does not tell (they count toward compaction)."""
    blocks = [b for m in messages for b in _blocks(m["content"])]
    blocks += [
        b
        for r in blocks
        if r.get("type") == "tool_result" and isinstance(r.get("content"), list)
        for b in r["content"]
    ]
    images = sum(1 for b in blocks if b.get("type") == "image")
    documents = sum(1 for b in blocks if b.get("type") == "document")
    return images * IMAGE_TOKENS + documents * DOCUMENT_TOKENS


def strip_media(messages: Messages, error: str) -> int:
    """Replace every image and document block by a note; how many were replaced."""
    count = 0
    for message in messages:
        message["content"], n = _strip(_blocks(message["content"]), error)
        count += n
    return count


def _strip(content: Blocks, error: str) -> tuple[Blocks, int]:
    out: Blocks = []
    count = 0
    for block in content:
        if block.get("type") in ("image", "document"):
            kind = "Image" if block["type"] == "image" else "Document"
            out.append({"type": "text", "text": MEDIA_NOTE.format(kind=kind, error=error[:200])})
            count += 1
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            inner, n = _strip(block["content"], error)
            out.append({**block, "content": inner})
            count += n
        else:
            out.append(block)
    return out, count


def _blocks(content: Any) -> Blocks:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
