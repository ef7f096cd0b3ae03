"""Anthropic's Messages API through the official SDK: the default provider, and any
Anthropic-compatible server at ANTHROPIC_BASE_URL (Ollama, vLLM, llama.cpp with
`--jinja`, LiteLLM).

The request goes out as built (agents/model/llm.py) and streams; the answer's blocks
are put together from the stream's events (anthropic_stream.py) and kept as they came
(thinking verbatim). A compatible server may lack what
Anthropic's API has: a 400 that names `cache_control`, `thinking`/`output_config` or
`tool_choice` is learnt from once: the part is left out of this and every later
request to that server (one warning), and the request is sent again. SDK errors are
mapped here to `ModelUnavailable` / `ModelError`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from agents.model.blocks import blocks_from
from agents.model.providers.anthropic_stream import Reading
from agents.model.providers.anthropic_wire import anthropic_form
from agents.model.providers.base import (
    LLMResponse,
    ModelError,
    ModelUnavailable,
    Request,
    TextSink,
)
from agents.model.reasons import explain
from bot.core.lazy import lazy
from bot.core.model_calls import Usage

if TYPE_CHECKING:
    import anthropic
else:  # ~1 s and ~60 MB: preloaded in a thread by App.start, or loaded at the first call
    anthropic = lazy("anthropic")

log = logging.getLogger(__name__)
#: the blocks of a response the runtime keeps (thinking ones verbatim, for the API)
KEPT_BLOCKS = ("text", "tool_use", "thinking", "redacted_thinking")
#: what a compatible server may refuse, by the word its 400 names: the request keys
#: left out from then on
OPTIONAL = {
    "cache_control": ("cache_control",),
    "thinking": ("thinking", "output_config"),
    "output_config": ("thinking", "output_config"),
    "tool_choice": ("tool_choice",),
}
#: what a 400 says of a parameter a server does not take (Ollama, vLLM, llama.cpp,
#: LiteLLM word it differently)
UNSUPPORTED = ("not supported", "unsupported", "unknown", "unrecognized", "not permitted",
               "extra inputs", "extra fields", "unexpected")  # fmt: skip
_unknown_blocks: set[str] = set()  # block types already named in the log


class AnthropicBackend:
    api = "anthropic"

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        #: what `warm` imports (Vertex's client loads google.auth at its first call)
        self.sdk = "anthropic"
        self._client: Any = None
        #: request keys this server refused once (a compatible server's missing features)
        self.refused: set[str] = set()

    @property
    def client(self) -> Any:
        """The SDK client, made (and the SDK imported) at the first use."""
        if self._client is None:
            self._client = self._connect()
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def describe(self, model: str) -> Any:
        return await self.client.models.retrieve(model)

    async def create(self, request: Request, on_text: TextSink | None) -> LLMResponse:
        request = anthropic_form(request)  # what another API wrote (after a failover)
        try:
            return await self._create(without(request, self.refused), on_text)
        except ModelError as exc:
            if self._renewed(str(exc)):  # a cloud credential revoked or expired early
                return await self._renew_and_send(request, on_text)
            lacking = self._lacking(str(exc), request)
            if not lacking:
                raise
            self.refused |= lacking
            log.warning("the model's server refused %s: left out from now on (%s)",
                        ", ".join(sorted(lacking)), exc)  # fmt: skip
            return await self._create(without(request, self.refused), on_text)

    async def _renew_and_send(self, request: Request, on_text: TextSink | None) -> LLMResponse:
        """The request again with renewed credentials; still expired, the model counts as
        unavailable (retried with backoff, the person told once), so the message waits
        for fresh credentials and is answered then, never dropped."""
        try:
            return await self._create(without(request, self.refused), on_text)
        except ModelError as exc:
            if "expired" not in str(exc).lower():
                raise
            raise ModelUnavailable(f"the cloud credentials expired; renew them: {exc}") from exc

    def _renewed(self, error: str) -> bool:
        """A 401/403 with cloud credentials: Vertex's token is dropped (the SDK gets a new
        one), Bedrock's session is made anew (botocore reads the credential chain again:
        a rotated credentials file, a renewed SSO or role). Whether to send it again."""
        if not re.search(r"HTTP 40[13]\b", error):
            return False
        credentials = getattr(self._client, "credentials", None)
        if credentials is not None:
            credentials.token = None
        elif not (type(self._client).__name__ == "AsyncAnthropicBedrock" and _new_aws_session()):
            return False
        log.warning("the cloud credentials were refused (%s): renewed", error)
        return True

    def _lacking(self, error: str, request: Request) -> set[str]:
        """The optional request keys a 400 names that this request carries."""
        lowered = error.lower()
        if not error.startswith("HTTP 400") or not any(w in lowered for w in UNSUPPORTED):
            return set()
        named = {k for word, keys in OPTIONAL.items() if word in error for k in keys}
        sent = {k for k in named if k in request or (k == "cache_control" and k in str(request))}
        return sent - self.refused

    async def _create(self, request: Request, on_text: TextSink | None) -> LLMResponse:
        """The SDK call, streamed: its raw events put together by `Reading`
        (agents/model/providers/anthropic_stream.py; `on_text`, when given, hears each
        text piece), its errors mapped to ours."""
        reading = Reading(on_text)
        try:
            async with await self.client.messages.create(**request, stream=True) as events:
                async for event in events:
                    reading.take(event)
        except anthropic.APIConnectionError as exc:  # said with the URL it cannot reach
            raise ModelUnavailable(explain(exc, str(self.client.base_url))) from exc
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            if type(self._client).__name__ != "AsyncAnthropic":  # a cloud's token: renewed
                raise ModelError(describe_error(exc)) from exc
            raise ModelUnavailable(explain(exc, str(self.client.base_url))) from exc  # the key
        except (anthropic.RateLimitError, anthropic.InternalServerError) as exc:
            raise ModelUnavailable(describe_error(exc)) from exc
        except anthropic.APIStatusError as exc:
            if exc.status_code in (408, 409) or exc.status_code >= 500:
                raise ModelUnavailable(describe_error(exc)) from exc
            raise ModelError(describe_error(exc)) from exc
        except anthropic.APIError as exc:  # an error event in the stream, a broken body
            raise ModelUnavailable(describe_error(exc)) from exc
        except Exception as exc:
            raise _credentials_error(exc) from exc
        if not reading.started:  # no `message_start`: the body was not a stream
            raise ModelError(NOT_A_STREAM)
        reading.finish()
        return _response(reading)


def _new_aws_session() -> bool:
    """The SDK keeps one botocore session per set of keys (an lru_cache in its private
    `anthropic.lib.aws._auth`): emptied, the next request resolves the chain again.
    False when this SDK version keeps it elsewhere."""
    from anthropic.lib.aws import _auth

    clear = getattr(getattr(_auth, "_get_session", None), "cache_clear", None)
    if clear is None:
        return False
    clear()
    return True


def _credentials_error(exc: Exception) -> Exception:
    """A cloud credential that cannot be loaded is a ModelError saying so; one that
    could not be refreshed (expired mid-conversation, the token server down) is
    ModelUnavailable: the turn is asked again, nothing is lost. Anything else is a bug."""
    kind = type(exc).__name__
    if kind == "MissingDependencyError":  # the SDK's: an extra is not installed
        return ModelError(f"{exc}".strip()[:300])
    module = type(exc).__module__
    if not module.startswith(("google.auth", "botocore")):
        return exc
    if kind == "DefaultCredentialsError":
        return ModelError(
            "no Google credentials for vertex: set GOOGLE_APPLICATION_CREDENTIALS or run "
            f"`gcloud auth application-default login` ({exc})"[:300]
        )
    if kind in ("NoCredentialsError", "PartialCredentialsError", "ProfileNotFound"):
        return ModelError(
            f"no AWS credentials for bedrock ({exc}): set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run on a role"[:300]
        )
    return ModelUnavailable(f"cloud credentials could not be refreshed: {kind}: {exc}"[:300])


NOT_A_STREAM = (
    "the server at the model's base URL did not answer a streamed request with a stream: "
    "is it the API the model's provider speaks (ANTHROPIC_BASE_URL / OPENAI_BASE_URL)?"
)


def without(request: Request, keys: set[str]) -> Request:
    """`request` less the keys a server refused (`cache_control` wherever it is)."""
    if not keys:
        return request
    out = {k: v for k, v in request.items() if k not in keys}
    return cast(Request, _uncached(out) if "cache_control" in keys else out)


def _uncached(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _uncached(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_uncached(v) for v in value]
    return value


def _response(reading: Reading) -> LLMResponse:
    """The answer as the runtime keeps it: text, tool calls and thinking blocks (verbatim:
    the API wants them back unchanged); another block type is left out and named in the
    log once."""
    blocks = reading.blocks
    for kind in {b.get("type") for b in blocks} - set(KEPT_BLOCKS) - _unknown_blocks:
        _unknown_blocks.add(str(kind))
        log.warning("the model answered with a %r block; it is left out", kind)
    blocks = [b for b in blocks if b.get("type") in KEPT_BLOCKS]
    return LLMResponse(
        blocks_from(blocks), reading.stop_reason, _usage(reading.usage), reading.stop_details
    )


def _usage(u: dict[str, Any]) -> Usage:
    details = u.get("output_tokens_details") or {}
    return Usage(
        u.get("input_tokens") or 0,
        u.get("output_tokens") or 0,
        u.get("cache_read_input_tokens") or 0,
        u.get("cache_creation_input_tokens") or 0,
        details.get("thinking_tokens") or 0,
    )


def describe_error(exc: Exception) -> str:
    """`HTTP 400: <the API's own message>`, else the error's class and text."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if status and isinstance(message, str):
        return f"HTTP {status}: {message}"[:300]
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"[:300]
