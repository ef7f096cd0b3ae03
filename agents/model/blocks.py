"""The model transcript, typed: the messages and content blocks of a conversation as the
runtime stores, repairs and sends them (one `Messages` for all of agents/).

The form is Anthropic's Messages API block form (agents/model/providers/base.py says
why); the OpenAI-compatible provider translates it at its edge. These are our own
TypedDicts, not the anthropic SDK's `MessageParam`/`ContentBlockParam`, because what
we store is not quite what the SDK's types allow, and their shape would make the
provider-neutral code worse:

- a `tool_use` input may be the text a model wrote that is not a JSON object (an
  OpenAI-compatible server's arguments; the toolbox answers it with an error, and
  agents/model/providers/anthropic_wire.py wraps it for Anthropic's API); the SDK
  says `Dict[str, object]`;
- an image or document stored as a reference to a saved file (`source.type` =
  `saved_file`, agents/model/attachments.py), turned into base64 only in the request;
- the SDK types content as `Iterable[...]` (a request may take a generator), which
  a conversation that is appended to, indexed and repaired in place cannot use, and
  its union holds sixteen block kinds (server tools, search results, containers) the
  runtime never stores, each a case every `match` on `type` would have to name;
- the SDK's types are its own to change: a stored conversation outlives SDK versions.

Only the keys the runtime reads or writes are named. A block from the API may carry
more (`citations`, `caller`...): they are kept as they came and sent back as they are.
A stored conversation is JSON the runtime wrote itself: `stored` reads it as this type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict, cast


class CacheControl(TypedDict):
    """A prompt-cache breakpoint (agents/model/llm.py puts them in the request only)."""

    type: Literal["ephemeral"]


class Base64Source(TypedDict):
    type: Literal["base64"]
    media_type: str
    data: str


class UrlSource(TypedDict):
    type: Literal["url"]
    url: str


class SavedFile(TypedDict):
    """A file people sent, saved below the data dir; expanded to base64 per request."""

    type: Literal["saved_file"]
    media_type: str
    path: str


Source = Base64Source | UrlSource | SavedFile


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: Source
    cache_control: NotRequired[CacheControl]


class DocumentBlock(TypedDict):
    type: Literal["document"]
    source: Source
    cache_control: NotRequired[CacheControl]


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    #: the arguments (arbitrary JSON), or the text a model wrote that is not an object
    input: dict[str, Any] | str
    cache_control: NotRequired[CacheControl]


#: what a tool result may hold besides text (images from an MCP tool)
ResultPart = TextBlock | ImageBlock | DocumentBlock


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: NotRequired[str | list[ResultPart]]
    is_error: NotRequired[bool]
    cache_control: NotRequired[CacheControl]


class ThinkingBlock(TypedDict):
    """Kept verbatim: the API checks the signature."""

    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(TypedDict):
    type: Literal["redacted_thinking"]
    data: str


Block = (
    TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock
    | RedactedThinkingBlock
)  # fmt: skip
Blocks = list[Block]
Role = Literal["user", "assistant"]


class Message(TypedDict):
    role: Role
    #: a string in conversations older versions stored, and in one-off requests
    content: str | Blocks


Messages = list[Message]
#: the blocks of a response kept as they came (the API checks them, signed)
THINKING: tuple[Literal["thinking"], Literal["redacted_thinking"]] = (
    "thinking",
    "redacted_thinking",
)


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def text_in(block: Block) -> str:
    """A text block's text, '' for any other block."""
    return block["text"] if block["type"] == "text" else ""


def blocks_of(content: str | Sequence[Block]) -> Blocks:
    """A message's content as a new list of blocks (a string is one text block)."""
    return [text_block(content)] if isinstance(content, str) else list(content)


def stored(messages: Sequence[Mapping[str, Any]]) -> Messages:
    """A conversation as the store gives it back (the JSON the runtime saved): read as
    the transcript it was when saved. Only this, `blocks_from` and `results_from` turn
    untyped data into the transcript."""
    return cast(Messages, messages)


def blocks_from(blocks: Sequence[Mapping[str, Any]]) -> Blocks:
    """A Messages API answer as the SDK dumps it (agents/model/providers/anthropic.py
    keeps only the kinds above)."""
    return cast(Blocks, blocks)


def results_from(blocks: Sequence[Mapping[str, Any]]) -> list[ToolResultBlock]:
    """A parked worker's tool results as the store kept them (agents/team/worker.py)."""
    return cast(list[ToolResultBlock], blocks)
