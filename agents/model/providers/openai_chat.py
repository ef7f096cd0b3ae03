"""OpenAI-compatible Chat Completions through the `openai` SDK (`openai:<model>`):
OpenAI itself, Azure OpenAI's v1 endpoint, vLLM, Ollama, llama.cpp, LiteLLM... at
OPENAI_BASE_URL with OPENAI_API_KEY.

The SDK is imported at the first call (or by `warm`), never when no `openai:` model is
configured. Every call streams; the request and the answer are translated at this edge
(agents/model/providers/openai_wire.py). SDK errors are mapped to ours here: 429,
5xx, 408/409 and a broken connection are `ModelUnavailable`, another 4xx is a
`ModelError`, and a body that is not a stream (a server that is not an OpenAI-
compatible one) is a `ModelError` that says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agents.model.providers.anthropic import NOT_A_STREAM, describe_error
from agents.model.providers.base import (
    LLMResponse,
    ModelError,
    ModelUnavailable,
    Request,
    TextSink,
)
from agents.model.providers.openai_wire import Gathered, chat_request
from bot.core.lazy import lazy

if TYPE_CHECKING:
    import openai
else:
    openai = lazy("openai")


class OpenAIBackend:
    api = "openai"
    sdk = "openai"

    def __init__(self, connect: Callable[[], openai.AsyncOpenAI]) -> None:
        self._connect = connect
        self._client: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = self._connect()
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def describe(self, model: str) -> Any:
        return None  # `/models` says nothing of thinking or limits: the map's defaults

    async def create(self, request: Request, on_text: TextSink | None) -> LLMResponse:
        body = chat_request(request, request["model"])
        gathered = Gathered()
        try:
            stream = await self.client.chat.completions.create(**body)
            async for chunk in stream:
                text = gathered.add(chunk)
                if text and on_text is not None:
                    on_text(text)
        except (
            openai.APIConnectionError,
            openai.RateLimitError,
            openai.InternalServerError,
        ) as exc:
            raise ModelUnavailable(describe_error(exc)) from exc
        except openai.APIStatusError as exc:
            if exc.status_code in (408, 409) or exc.status_code >= 500:
                raise ModelUnavailable(describe_error(exc)) from exc
            raise ModelError(describe_error(exc)) from exc
        except openai.APIError as exc:  # an error event in the stream
            raise ModelUnavailable(describe_error(exc)) from exc
        if not gathered.choices and not _streamed(stream):
            raise ModelError(NOT_A_STREAM)
        return gathered.response()


def _streamed(stream: Any) -> bool:
    """Whether the server answered with an event stream (not a JSON body)."""
    response = getattr(stream, "response", None)
    kind = response.headers.get("content-type", "") if response is not None else ""
    return "text/event-stream" in kind
