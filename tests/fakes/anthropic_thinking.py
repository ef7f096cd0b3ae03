"""The fake Anthropic API's thinking: what a thinking model answers, and whether its
thinking came back as the real API demands.

A `Ledger` belongs to one fake server. It shapes each scripted answer as the request's
model would send it (`issue`): a signed thinking block first when the model thinks, the
notes before a tool call as thinking blocks on Sonnet 5.5 and its kin, the text left
empty when `display` is `omitted`. It remembers every answer that called tools, by the
tool_use ids, and every paused one (`record`). On each request it checks (`problems`):
every thinking block carries a signature this server made for this model (so an edited,
forged or other model's block is refused), the assistant message the newest tool
results answer starts with exactly the thinking blocks issued with it, and a model that
refuses a prefill gets none. Earlier turns may drop their thinking blocks: the API
allows it. Signatures are an HMAC with a per-server secret over the model and the text.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import secrets
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic_models import ModelSpec
from tests.fakes.anthropic_params import Mode, display, mode
from tests.fakes.anthropic_rules import THINKING_BLOCKS

Blocks = list[dict[str, Any]]
NONCE = 16

REQUIRE_THINKING = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking "
    "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend "
    "you include thinking blocks from previous turns. To avoid this requirement, disable "
    "`thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)  # "preceeding" is the API's own spelling
UNMODIFIED = (
    "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
    "modified. These blocks must remain as they were in the original response."
)
#: UNCONFIRMED: the docs say only that a prefill is a 400 on these models
PREFILL = (
    "This model does not support assistant message prefill. The conversation must end "
    "with a user message."
)


@dataclass
class Answer:
    """What the model sends: its content, and the output tokens its thinking took."""

    content: Blocks
    thinking_tokens: int


class Ledger:
    """What one fake server has issued, and the secret it signs thinking with."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        #: each answer that called tools, as issued, by its tool_use ids
        self._by_tool: dict[str, Blocks] = {}
        #: the texts of each answer that ended with `pause_turn` (continued, not prefilled)
        self._paused: list[list[str]] = []

    # -- answering -------------------------------------------------------------------
    def issue(
        self,
        scripted: Blocks,
        body: dict[str, Any],
        spec: ModelSpec,
        summary: str,
        thinks: bool | None,
    ) -> Answer:
        """`scripted` as the model answers this request, its thinking blocks signed.
        `thinks` False adds no thinking block, True thinks even with thinking off;
        `summary` is the text of the thinking block added in front."""
        how = "on" if thinks and mode(body, spec) == "off" else mode(body, spec)
        blocks = _thought(scripted, how, spec, summary, adds=thinks is not False)
        shown = display(body, spec) == "summarized"
        model = str(body.get("model", ""))
        content = [self._signed(model, b, shown) for b in blocks]
        # billed for the thinking done, shown or not
        tokens = sum(len(b.get("thinking", "")) // 4 + 20 for b in blocks if _is_thinking(b))
        return Answer(content, tokens)

    def record(self, content: Blocks, stop_reason: str) -> None:
        """Remember an issued answer, so the next request can be checked against it."""
        for block in content:
            if block.get("type") == "tool_use":
                self._by_tool[block["id"]] = content
        if stop_reason == "pause_turn":
            self._paused.append(_texts(content))

    def _signed(self, model: str, block: dict[str, Any], shown: bool) -> dict[str, Any]:
        if block.get("type") == "redacted_thinking":
            return {"type": "redacted_thinking", "data": self._seal("redacted_thinking", model)}
        if block.get("type") != "thinking":
            return block
        text = block.get("thinking", "") if shown else ""
        signature = self._seal("thinking", model, text)
        return {"type": "thinking", "thinking": text, "signature": signature}

    def _seal(self, kind: str, model: str, text: str = "", nonce: bytes | None = None) -> str:
        """A fresh token (or the one with `nonce`) that binds a block of `kind` holding
        `text` to `model` and to this server."""
        nonce = nonce if nonce is not None else secrets.token_bytes(NONCE)
        said = "\0".join((kind, model, text)).encode()
        mac = hmac.new(self._secret, nonce + said, hashlib.sha256)
        return base64.b64encode(nonce + mac.digest()).decode()

    def _sealed(self, model: str, block: dict[str, Any]) -> bool:
        """Whether this server issued `block`, as it is, for `model`."""
        kind = str(block.get("type"))
        token = str(block.get("signature" if kind == "thinking" else "data"))
        try:
            nonce = base64.b64decode(token, validate=True)[:NONCE]
        except ValueError:
            return False
        expected = self._seal(kind, model, str(block.get("thinking", "")), nonce)
        return hmac.compare_digest(expected, token)

    # -- checking --------------------------------------------------------------------
    def problems(self, body: dict[str, Any], spec: ModelSpec) -> list[str]:
        """Every reason the real API would refuse this request's thinking blocks or prefill."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        return [
            *self._signatures(body, messages),
            *self._cycle(body, spec, messages),
            *self._prefill(spec, messages),
        ]

    def _signatures(self, body: dict[str, Any], messages: Blocks) -> list[str]:
        """Every thinking block in the history was issued by this server for this model:
        not edited, not forged, not another model's (the words for a bad `data` are ours)."""
        model, out = str(body.get("model", "")), []
        for n, message in enumerate(messages):
            said = _content(message) if message.get("role") == "assistant" else []
            for m, block in enumerate(said):
                if _is_thinking(block) and not self._sealed(model, block):
                    field = "signature" if block.get("type") == "thinking" else "data"
                    out.append(
                        f"messages.{n}.content.{m}: Invalid `{field}` in `{block['type']}` block"
                    )
        return out

    def _cycle(self, body: dict[str, Any], spec: ModelSpec, messages: Blocks) -> list[str]:
        """While thinking is on, the assistant message the newest tool results answer
        starts with the thinking blocks issued with it, unmodified."""
        if mode(body, spec) == "off" or len(messages) < 2 or messages[-1].get("role") != "user":
            return []
        answered = [
            b.get("tool_use_id") for b in _content(messages[-1]) if b.get("type") == "tool_result"
        ]
        issued = next((self._by_tool[i] for i in answered if i in self._by_tool), [])
        expected = [b for b in issued if _is_thinking(b)]
        if not expected:
            return []
        return [
            f"messages.{len(messages) - 2}.{p}" for p in _echoed(_content(messages[-2]), expected)
        ]

    def _prefill(self, spec: ModelSpec, messages: Blocks) -> list[str]:
        """A final assistant message of text only is a prefill, unless it continues a
        paused turn as the API asks (`pause_turn`: send the response back as-is)."""
        last = (
            _content(messages[-1]) if messages and messages[-1].get("role") == "assistant" else []
        )
        if spec.prefill or not last or any(b.get("type") != "text" for b in last):
            return []
        return [] if _texts(last) in self._paused else [PREFILL]


def _echoed(sent: Blocks, expected: Blocks) -> list[str]:
    """`sent` starts with exactly the thinking blocks `expected`, or the API's words why not."""
    first = sent[0].get("type") if sent else None
    if first not in THINKING_BLOCKS:
        found = f"Expected `thinking` or `redacted_thinking`, but found `{first}`."
        return [f"content.0.type: {found} {REQUIRE_THINKING}"]
    run = list(itertools.takewhile(_is_thinking, sent))
    if run == expected:
        return []
    pairs = zip(run, expected, strict=False)
    changed = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(run), len(expected)))
    return [f"content.{changed}: {UNMODIFIED}"]


def _thought(scripted: Blocks, how: Mode, spec: ModelSpec, summary: str, adds: bool) -> Blocks:
    """The blocks the model sends, unsigned: with thinking off, no thinking at all (a
    scripted thinking block is then a slip of the test); with it on, a thinking block
    first unless the test scripted its own; notes before a tool call as thinking on the
    models that send them so, also under `between_tools`."""
    if how == "off":
        return [b for b in scripted if not _is_thinking(b)]
    blocks = _notes_as_thinking(scripted) if adds and spec.updates_as_thinking else scripted
    if adds and how == "on" and not _thinks(scripted):
        return [{"type": "thinking", "thinking": summary}, *blocks]
    return list(blocks)


def _notes_as_thinking(blocks: Blocks) -> Blocks:
    """What the model writes before its first tool call comes back as thinking blocks."""
    first_call = next((i for i, b in enumerate(blocks) if b.get("type") == "tool_use"), 0)
    return [
        {"type": "thinking", "thinking": b["text"]}
        if i < first_call and b.get("type") == "text"
        else b
        for i, b in enumerate(blocks)
    ]


def _thinks(blocks: Blocks) -> bool:
    return any(_is_thinking(b) for b in blocks)


def _is_thinking(block: dict[str, Any]) -> bool:
    return block.get("type") in THINKING_BLOCKS


def _content(message: dict[str, Any]) -> Blocks:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _texts(blocks: Blocks) -> list[str]:
    return [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
