"""The LLM provider: Anthropic's Messages API through the official SDK, with tool use.

The stable prefix (system prompt, then tools) carries cache breakpoints so that the
consecutive turns of one agent reuse the prompt cache; callers keep it
byte-identical between turns. A global semaphore caps calls in flight; waiting for
it is counted for `switchboard status`. SDK errors are mapped here, once:
`ModelUnavailable` after the SDK's own retries (429, 529, 5xx, connection; a refused key
or an unreachable endpoint said in words a person can act on: agents/model/reasons.py), and
`ModelError` for a request the API refuses.

How much the model thinks is each role's effort (SWITCHBOARD_EFFORT...), sent the way
the model takes it (agents/model/capabilities.py reads the capability map). Every call
streams, so any `max_tokens` the model allows works (the SDK refuses a long
non-streamed one), and the answer's blocks are kept as they came: thinking and
redacted-thinking blocks go back to the API unchanged within a tool-use cycle.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.model.attachments import Expander
from agents.model.capabilities import Capabilities, thinking_params
from agents.model.reasons import Outage, explain
from bot.core.lazy import lazy, preload
from bot.core.messages import COORDINATOR
from bot.core.model_calls import UNLABELLED, CallLabel, CallOutcome, CallRecord, Usage
from config.models import DEFAULT_EFFORT, Effort, Role

if TYPE_CHECKING:
    import anthropic
else:  # ~1 s and ~60 MB: preloaded in a thread by App.start, or loaded at the first call
    anthropic = lazy("anthropic")

log = logging.getLogger(__name__)
CACHE = {"type": "ephemeral"}
#: the blocks of a response the runtime keeps (thinking ones verbatim, for the API)
KEPT_BLOCKS = ("text", "tool_use", "thinking", "redacted_thinking")
THINKING_BLOCKS = ("thinking", "redacted_thinking")
_unknown_blocks: set[str] = set()  # block types already named in the log


class ModelUnavailable(Exception):
    """The API still failed after the SDK's retries; try again later."""


class ModelError(Exception):
    """The API refused the request; retrying the same request will not help."""


@dataclass(slots=True)
class LLMResponse:
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: Usage = field(default_factory=Usage)
    #: why the model declined (`stop_reason: refusal`): `category`, `explanation`
    stop_details: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [b for b in self.content if b.get("type") == "tool_use"]


Observer = Callable[[CallRecord], None]
#: hears the model's text as it streams (agents/loop/loop.py passes the progress feed)
TextSink = Callable[[str], None]
Gate = Callable[[], Awaitable[None]]


class Provider:
    """`observers` hear of every call (usage, cost, metrics, health); `gate`, when
    set, is awaited before each call (the daily budget holds new model work there)."""

    def __init__(
        self,
        connect: Callable[[], anthropic.AsyncAnthropic],
        model: str,
        max_tokens: int,
        max_calls: int,
        efforts: dict[Role, Effort] | None = None,
        models: dict[Role, str] | None = None,
    ) -> None:
        self._connect = connect
        self._client: anthropic.AsyncAnthropic | None = None
        #: the coordinator's model; workers and background calls may have their own
        self.model = model
        self.models: dict[Role, str] = {"coordinator": model, "workers": model,
                                        "background": model, **(models or {})}  # fmt: skip
        self.max_tokens = max_tokens
        #: each role's effort, from the settings
        self.efforts: dict[Role, Effort] = {**DEFAULT_EFFORT, **(efforts or {})}
        self._capabilities = {m: Capabilities(m, max_tokens) for m in set(self.models.values())}
        self._slots = asyncio.Semaphore(max_calls)
        self.in_flight = 0
        self.waiting = 0
        self.observers: list[Observer] = []
        self.gate: Gate | None = None
        #: turns saved-file references (images, PDFs people sent) into base64 blocks
        self.expander: Expander | None = None
        #: the console hears of an outage once per change of its reason
        self.outage = Outage()

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client, made (and the SDK imported) at the first use."""
        if self._client is None:
            self._client = self._connect()
        return self._client

    async def warm(self) -> None:
        """Import the SDK in a worker thread ahead of the first call."""
        await preload("anthropic")

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def complete(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        label: CallLabel = UNLABELLED,
        on_text: TextSink | None = None,
        once: bool = False,
    ) -> LLMResponse:
        """One model call; `on_text` (when given) hears the text as the model writes it.
        `once`: a one-off request (a summary) whose messages nothing reads again, so they
        get no cache breakpoint (a cache write costs 1.25 times the input)."""
        model = self.models[role_of(label, once)]
        await self._capabilities[model].learn(lambda: self.client)
        request = self.request(system, tools, messages, label, once)
        if self.gate is not None:
            await self.gate()
        self.waiting += 1
        async with self._slots:
            self.waiting -= 1
            self.in_flight += 1
            started = time.monotonic()
            try:
                response = _response(await self._create(request, on_text))
            except (ModelUnavailable, ModelError) as exc:
                if isinstance(exc, ModelUnavailable):
                    self.outage.failed(str(exc))
                outcome: CallOutcome = (
                    "unavailable" if isinstance(exc, ModelUnavailable) else "refused"
                )
                self._observe(
                    CallRecord(label, model, outcome, time.monotonic() - started, Usage(), str(exc))
                )
                raise
            finally:
                self.in_flight -= 1
        self.outage.answered()
        self._observe(CallRecord(label, model, "ok", time.monotonic() - started, response.usage))
        return response

    async def _create(self, request: dict[str, Any], on_text: TextSink | None = None) -> Any:
        """The SDK call, streamed (`on_text`, when given, hears each text delta; text
        blocks after the first start after a blank line), its errors mapped to ours."""
        try:
            async with self.client.messages.stream(**request) as stream:
                if on_text is not None:
                    await _read_along(stream, on_text)
                return await stream.get_final_message()
        except (
            anthropic.APIConnectionError,  # names the URL; a refused key names its variable
            anthropic.AuthenticationError,
            anthropic.PermissionDeniedError,
        ) as exc:
            raise ModelUnavailable(explain(exc, str(self.client.base_url))) from exc
        except (anthropic.RateLimitError, anthropic.InternalServerError) as exc:
            raise ModelUnavailable(_describe(exc)) from exc
        except anthropic.APIStatusError as exc:
            if exc.status_code in (408, 409) or exc.status_code >= 500:
                raise ModelUnavailable(_describe(exc)) from exc
            raise ModelError(_describe(exc)) from exc
        except anthropic.APIError as exc:  # an error event in the stream, a broken body
            raise ModelUnavailable(_describe(exc)) from exc

    def _observe(self, record: CallRecord) -> None:
        for observer in self.observers:
            try:
                observer(record)
            except Exception:  # an observer's bug must never cost the agent its answer
                log.exception("LLM call observer failed")

    def request(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        label: CallLabel = UNLABELLED,
        once: bool = False,
    ) -> dict[str, Any]:
        """The request body, with cache breakpoints on system, tools and (unless `once`)
        the last turns, and the model and thinking of the label's role, as it takes them."""
        role = role_of(label, once)
        model = self.models[role]
        spec = self._capabilities[model].spec
        expanded = self.expander.expand(messages) if self.expander else messages
        if not spec.known:  # a server that is not Anthropic's may refuse what it lacks
            tools = [{k: v for k, v in t.items() if k != "input_examples"} for t in tools]
        cached_tools = [*tools[:-1], {**tools[-1], "cache_control": CACHE}] if tools else []
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": min(self.max_tokens, spec.max_output),
            "system": [{"type": "text", "text": system, "cache_control": CACHE}],
            "messages": expanded if once else _mark_last(expanded),
            **thinking_params(spec, self.efforts[role]),
        }
        if cached_tools:
            request["tools"] = cached_tools
        return request


def role_of(label: CallLabel, once: bool) -> Role:
    """Whose model and effort a call uses. A one-off call (a summary, consolidation) is
    the background's; every other call is its conversation's agent's, a compaction's
    flush turn included: it sends that conversation, whose thinking is bound to the
    model and the effort it was written with."""
    if once:
        return "background"
    if label.kind == "worker" or (label.kind == "memory" and label.agent != COORDINATOR):
        return "workers" if label.agent else "background"
    return "coordinator"


async def _read_along(stream: Any, on_text: TextSink) -> None:
    """Hand each text delta of a streamed answer to `on_text` as it arrives."""
    texts = 0
    async for event in stream:
        if event.type == "content_block_start" and event.content_block.type == "text":
            if texts:
                on_text("\n\n")
            texts += 1
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            on_text(event.delta.text)


def _mark_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Breakpoints on the newest message, so the next turn reads the history from cache,
    and on the person's turn before it, where the previous request put its own: a turn
    of many blocks (parallel calls, a batch of messages) would otherwise outrun the
    cache's look-back. Never on a thinking block."""
    marked = [*messages]
    for i in {len(messages) - 1, len(messages) - 3}:
        if i >= 0 and (i == len(messages) - 1 or messages[i]["role"] == "user"):
            marked[i] = _marked(messages[i])
    return marked


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` with a breakpoint on its last block that may carry one."""
    message = copy.deepcopy(message)
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    allowed = [i for i, b in enumerate(content) if b.get("type") not in THINKING_BLOCKS]
    if allowed:
        content[allowed[-1]] = {**content[allowed[-1]], "cache_control": CACHE}
    message["content"] = content
    return message


def _response(reply: Any) -> LLMResponse:
    """The SDK's message as the runtime keeps it: text, tool calls and thinking blocks
    (verbatim: the API wants them back unchanged); another block type is left out and
    named in the log once."""
    blocks = [b.model_dump(exclude_none=True) for b in reply.content]
    for kind in {b.get("type") for b in blocks} - set(KEPT_BLOCKS) - _unknown_blocks:
        _unknown_blocks.add(str(kind))
        log.warning("the model answered with a %r block; it is left out", kind)
    blocks = [b for b in blocks if b.get("type") in KEPT_BLOCKS]
    details = getattr(reply, "stop_details", None)
    return LLMResponse(
        blocks,
        reply.stop_reason,
        _usage(reply.usage),
        details.model_dump(exclude_none=True) if details is not None else None,
    )


def _usage(u: Any) -> Usage:
    details = getattr(u, "output_tokens_details", None)
    return Usage(
        u.input_tokens,
        u.output_tokens,
        getattr(u, "cache_read_input_tokens", None) or 0,
        getattr(u, "cache_creation_input_tokens", None) or 0,
        getattr(details, "thinking_tokens", None) or 0,
    )


def _describe(exc: Exception) -> str:
    """`HTTP 400: <the API's own message>`, else the error's class and text."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if status and isinstance(message, str):
        return f"HTTP {status}: {message}"[:300]
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"[:300]
