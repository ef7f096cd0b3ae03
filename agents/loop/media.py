"""Images and documents in a conversation: what they cost the model (which their JSON
size does not tell, for compaction), and leaving them out when the API refuses them.
"""

from __future__ import annotations

from agents.model.blocks import (
    Blocks,
    DocumentBlock,
    ImageBlock,
    Messages,
    ResultPart,
    TextBlock,
    ToolResultBlock,
    blocks_of,
    text_block,
)

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
    blocks = [b for m in messages for b in blocks_of(m["content"])]
    kinds = [b["type"] for b in blocks]
    kinds += [p["type"] for r in blocks if r["type"] == "tool_result" for p in _parts(r)]
    images = kinds.count("image")
    documents = kinds.count("document")
    return images * IMAGE_TOKENS + documents * DOCUMENT_TOKENS


def strip_media(messages: Messages, error: str) -> int:
    """Replace every image and document block by a note; how many were replaced."""
    count = 0
    for message in messages:
        message["content"], n = _strip(blocks_of(message["content"]), error)
        count += n
    return count


def _strip(content: Blocks, error: str) -> tuple[Blocks, int]:
    out: Blocks = []
    count = 0
    for block in content:
        if block["type"] == "image" or block["type"] == "document":
            out.append(_note(block, error))
            count += 1
        elif block["type"] == "tool_result" and isinstance(block.get("content"), list):
            parts = _parts(block)
            inner: list[ResultPart] = [_note(p, error) if p["type"] != "text" else p for p in parts]
            out.append({**block, "content": inner})
            count += sum(1 for p in parts if p["type"] != "text")
        else:
            out.append(block)
    return out, count


def _note(block: ImageBlock | DocumentBlock, error: str) -> TextBlock:
    kind = "Image" if block["type"] == "image" else "Document"
    return text_block(MEDIA_NOTE.format(kind=kind, error=error[:200]))


def _parts(result: ToolResultBlock) -> list[ResultPart]:
    """The parts of a tool result's content ([] for a plain string)."""
    content = result.get("content")
    return content if isinstance(content, list) else []
