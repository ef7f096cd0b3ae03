"""The model contract every provider keeps, in Anthropic's block form.

The runtime stores and builds conversations as Anthropic Messages API blocks (`text`,
`tool_use`, `tool_result`, `image`, `document`, `thinking`): the project's stored
conversations already are, and the prompt cache, thinking and the repair paths of
agents/loop are written against them. A request is an Anthropic request body
(agents/model/llm.py `Provider.request`); a provider that speaks another API
translates it at its edge, and translates the answer back into an `LLMResponse` with
an Anthropic `stop_reason` (`end_turn`, `tool_use`, `max_tokens`, `refusal`...).
Nothing outside agents/model/providers knows which API runs.

Each provider's errors are mapped at its edge to the two of this module:
`ModelUnavailable` (try again later: overloaded, 429, 5xx, a broken stream) and
`ModelError` (the request is refused; the same request will not do better).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired, Protocol, TypedDict

from agents.errors import AgentError
from agents.model.blocks import Blocks, Messages, TextBlock, ToolUseBlock
from bot.core.model_calls import Usage

#: hears the model's text as it streams (agents/loop/loop.py passes the progress feed)
TextSink = Callable[[str], None]


class ThinkingParams(TypedDict):
    """How much a model thinks, as the Messages API takes it (agents/model/capabilities.py)."""

    thinking: NotRequired[dict[str, str]]
    output_config: NotRequired[dict[str, str]]


class StopDetails(TypedDict):
    """Why the model declined (`stop_reason: refusal`), as the API says it."""

    type: NotRequired[str]
    category: NotRequired[str | None]
    explanation: NotRequired[str | None]


class Request(ThinkingParams):
    """A Messages API request body, as agents/model/llm.py builds it."""

    model: str
    max_tokens: int
    system: list[TextBlock]
    messages: Messages
    #: the tools' specs (a JSON Schema each: arbitrary JSON)
    tools: NotRequired[list[dict[str, Any]]]


class ModelUnavailable(AgentError):
    """The API still failed after the SDK's retries; try again later."""


class ModelError(AgentError):
    """The API refused the request; retrying the same request will not help."""


@dataclass(slots=True)
class LLMResponse:
    content: Blocks
    stop_reason: str | None
    usage: Usage = field(default_factory=Usage)
    #: why the model declined (`stop_reason: refusal`)
    stop_details: StopDetails | None = None

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b["type"] == "text").strip()

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        return [b for b in self.content if b["type"] == "tool_use"]


class Backend(Protocol):
    """One provider's connection: its SDK client, made at the first call."""

    #: the API it speaks (`anthropic`, `openai`): thinking is bound to it
    api: str
    #: the module `warm` imports ahead of the first call
    sdk: str

    async def create(self, request: Request, on_text: TextSink | None) -> LLMResponse:
        """One streamed call of an Anthropic-form request, its errors mapped to ours."""

    async def describe(self, model: str) -> Any:
        """The API's own description of `model` (Anthropic's `ModelInfo`), or None."""

    async def close(self) -> None: ...
