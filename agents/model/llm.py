"""The model call: one `Provider` for the whole runtime, whatever API each model speaks.

It builds the request in Anthropic's block form (agents/model/providers/base.py says
why) and hands it to the backend of the model's provider (agents/model/providers/:
Anthropic and compatible servers, OpenAI-compatible Chat Completions). The stable
prefix (system prompt, then tools) carries cache breakpoints so that the consecutive
turns of one agent reuse the prompt cache; callers keep it byte-identical between
turns. A global semaphore caps calls in flight; waiting for it is counted for
`switchboard status`. Each backend maps its SDK's errors to `ModelUnavailable` (after
the SDK's own retries: 429, 529, 5xx, connection; a refused key or an unreachable
endpoint said in words a person can act on, agents/model/reasons.py) and `ModelError`
(refused).

How much the model thinks is each role's effort (SWITCHBOARD_EFFORT...), sent the way
the model takes it (agents/model/capabilities.py reads the capability map). Every call
streams, so any `max_tokens` the model allows works, and the answer's blocks are kept
as they came: thinking blocks go back to the API unchanged within a tool-use cycle.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agents.model.attachments import Expander
from agents.model.blocks import THINKING, CacheControl, Message, Messages, blocks_of
from agents.model.capabilities import Capabilities, thinking_params
from agents.model.providers import Backend, split
from agents.model.providers.base import (
    LLMResponse,
    ModelError,
    ModelUnavailable,
    Request,
    TextSink,
)
from agents.model.reasons import Outage
from bot.core.bounded import Bounded
from bot.core.lazy import preload
from bot.core.messages import COORDINATOR
from bot.core.model_calls import UNLABELLED, CallLabel, CallOutcome, CallRecord, Usage
from config.models import DEFAULT_EFFORT, Effort, Role

__all__ = ["LLMResponse", "ModelError", "ModelUnavailable", "Provider", "TextSink", "role_of"]
log = logging.getLogger(__name__)
CACHE: CacheControl = {"type": "ephemeral"}
Observer = Callable[[CallRecord], None]
Gate = Callable[[], Awaitable[None]]


#: turns remembered on a fallback (`failed_over`, written by agents/loop/failover.py); an
#: entry leaves when its conversation's next turn starts, and past this the oldest goes
#: (its conversation never came back: a long outage touches many)
FAILED_OVER_MAX = 4_096


class Connect(Protocol):
    """The backends of the providers (agents/model/providers `Connector`)."""

    def __call__(self, provider: str) -> Backend:
        """The backend of a provider (`anthropic`, `openai`), made at its first use."""

    async def close(self) -> None:
        """Every backend made closed."""


class Provider:
    """`observers` hear of every call (usage, cost, metrics, health); `gate`, when
    set, is awaited before each call (the daily budget holds new model work there)."""

    def __init__(
        self,
        connect: Connect,
        model: str,
        max_tokens: int,
        max_calls: int,
        efforts: dict[Role, Effort] | None = None,
        models: dict[Role, str] | None = None,
        fallbacks: list[str] | None = None,
        expander: Expander | None = None,
        gate: Gate | None = None,
    ) -> None:
        self._connect = connect
        self._backends: dict[str, Backend] = {}
        #: the coordinator's model; workers and background calls may have their own
        self.model = model
        self.models: dict[Role, str] = {"coordinator": model, "workers": model,
                                        "background": model, **(models or {})}  # fmt: skip
        self.max_tokens = max_tokens
        #: where a turn goes on when its model stays unavailable (agents/loop/failover.py)
        self.fallbacks: list[str] = list(fallbacks or [])
        #: (agent, conversation) → (its turn's first message, the fallback it runs on);
        #: bounded: FAILED_OVER_MAX, and removed at the conversation's next turn
        self.failed_over: Bounded[tuple[str, str], tuple[int | None, str]] = Bounded(
            FAILED_OVER_MAX
        )
        #: each role's effort, from the settings
        self.efforts: dict[Role, Effort] = {**DEFAULT_EFFORT, **(efforts or {})}
        self._capabilities: dict[str, Capabilities] = {}
        self._slots = asyncio.Semaphore(max_calls)
        self.in_flight = 0
        self.waiting = 0
        self.observers: list[Observer] = []
        self.gate = gate
        #: turns saved-file references (images, PDFs people sent) into base64 blocks
        self.expander = expander
        #: the console hears of an outage once per change of its reason
        self.outage = Outage()
        #: SDKs known imported whole: until then a call waits for the import in a thread
        self._imported: set[str] = set()

    def backend(self, model: str) -> Backend:
        """The backend of `model`'s provider (its SDK client is made at the first call)."""
        provider = split(model)[0]
        if provider not in self._backends:
            self._backends[provider] = self._connect(provider)
        return self._backends[provider]

    def capabilities(self, model: str) -> Capabilities:
        if model not in self._capabilities:
            self._capabilities[model] = Capabilities(model, self.max_tokens)
        return self._capabilities[model]

    async def warm(self) -> None:
        """Import the configured providers' SDKs in a worker thread ahead of the first call."""
        for sdk in sorted({self.backend(m).sdk for m in self.models.values()}):
            await preload(sdk)

    async def _import(self, sdk: str) -> None:
        """The SDK imported before its client is made. The start's preload may still be
        importing it in a thread: an import on the loop would wait for that thread under
        the import lock, and the loop with it (no ack, no status line, for seconds)."""
        if sdk not in self._imported:
            await preload(sdk)
            self._imported.add(sdk)

    async def close(self) -> None:
        """Every backend made (a fallback's too) closed, and the thread they ran in."""
        await self._connect.close()

    async def complete(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: Messages,
        label: CallLabel = UNLABELLED,
        on_text: TextSink | None = None,
        once: bool = False,
        model: str | None = None,
    ) -> LLMResponse:
        """One model call; `on_text` (when given) hears the text as the model writes it.
        `once`: a one-off request (a summary) whose messages nothing reads again, so they
        get no cache breakpoint (a cache write costs 1.25 times the input). `model`: a
        fallback's, instead of the role's (agents/loop/calling.py)."""
        model = model or self.models[role_of(label, once)]
        backend = self.backend(model)
        await self._import(backend.sdk)
        await self.capabilities(model).learn(backend.describe)
        request = self.request(system, tools, messages, label, once, model)
        if self.gate is not None:
            await self.gate()
        self.waiting += 1
        async with self._slots:
            self.waiting -= 1
            self.in_flight += 1
            started = time.monotonic()
            try:
                response = await backend.create(request, on_text)
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
        messages: Messages,
        label: CallLabel = UNLABELLED,
        once: bool = False,
        model: str | None = None,
    ) -> Request:
        """The request body, with cache breakpoints on system, tools and (unless `once`)
        the last turns, and the model and thinking of the label's role, as it takes them."""
        role = role_of(label, once)
        model = model or self.models[role]
        spec = self.capabilities(model).spec
        expanded = self.expander.expand(messages) if self.expander else messages
        if not spec.known:  # a server that is not Anthropic's may refuse what it lacks
            tools = [{k: v for k, v in t.items() if k != "input_examples"} for t in tools]
        cached_tools = [*tools[:-1], {**tools[-1], "cache_control": CACHE}] if tools else []
        request: Request = {
            "model": split(model)[1],
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


def _mark_last(messages: Messages) -> Messages:
    """Breakpoints on the newest message, so the next turn reads the history from cache,
    and on the person's turn before it, where the previous request put its own: a turn
    of many blocks (parallel calls, a batch of messages) would otherwise outrun the
    cache's look-back. Never on a thinking block."""
    marked = [*messages]
    for i in {len(messages) - 1, len(messages) - 3}:
        if i >= 0 and (i == len(messages) - 1 or messages[i]["role"] == "user"):
            marked[i] = _marked(messages[i])
    return marked


def _marked(message: Message) -> Message:
    """A copy of `message` with a breakpoint on its last block that may carry one."""
    content = blocks_of(copy.deepcopy(message["content"]))
    allowed = [b for b in content if b["type"] not in THINKING]
    if allowed:
        allowed[-1]["cache_control"] = CACHE  # on the copy
    return {**message, "content": content}
