"""A streamed Messages API answer put together from the API's own events.

The SDK's `messages.stream()` helper rebuilds a typed snapshot of the whole message at
every event, wraps each event in a parametrised model of its own and parses a tool
call's input anew at each of its pieces: ~2-3 ms of CPU a call, a quarter to a third of
the SDK's work (tests/bench/bench_cpu.py --part call). The raw events of
`messages.create(stream=True)` are put together here as the API documents them
(platform.claude.com, "Streaming messages"): a block opens with `content_block_start`,
grows by `text_delta`, `thinking_delta`, `signature_delta`, `citations_delta` and
`input_json_delta` pieces, and a tool call's input is parsed once, at its end;
`message_delta` carries the stop reason and the usage so far (its counts are totals:
they replace, and one it leaves out keeps `message_start`'s value). A delta of a type
this does not know is passed over, as the SDK does.
"""

from __future__ import annotations

import json
from typing import Any, cast

from agents.model.providers.base import ModelUnavailable, StopDetails, TextSink

#: the usage counts a `message_delta` may carry (totals; an absent one keeps its value)
USAGE_TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "server_tool_use",
    "output_tokens_details",
)


class Reading:
    """One answer as its events arrive: `take` each, then `finish`; then `blocks`,
    `stop_reason`, `stop_details` and `usage` hold the message (`started` is False if
    no `message_start` came).
    `on_text`, when given, hears each text piece as it comes (text blocks after the first
    start after a blank line)."""

    def __init__(self, on_text: TextSink | None = None) -> None:
        self.on_text = on_text
        self.started = False
        self.blocks: list[dict[str, Any]] = []
        self.stop_reason: str | None = None
        self.stop_details: StopDetails | None = None
        self.usage: dict[str, Any] = {}
        #: the pieces of a block's text, thinking or tool input, joined at its end (adding
        #: each to the string so far would copy the whole of it at every piece)
        self._pieces: dict[tuple[int, str], list[str]] = {}
        self._texts = 0

    def take(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_delta":
            self._delta(event.index, event.delta)
        elif kind == "content_block_start":
            self._open(event.index, event.content_block)
        elif kind == "content_block_stop":
            self._close(event.index)
        elif kind == "message_start":
            self.started = True
            usage = getattr(event.message, "usage", None)  # a compatible server may send none
            self.usage = usage.model_dump() if usage is not None else {}
        elif kind == "message_delta":
            self._ending(event)
        # `message_stop` and `ping` add nothing; an `error` event the SDK raises itself

    def _open(self, index: int, block: Any) -> None:
        if index != len(self.blocks):
            raise ModelUnavailable(f"the model's stream opened block {index} out of order")
        opened = block.model_dump(exclude_none=True, warnings=False)
        self.blocks.append(opened)
        if opened.get("type") == "text" and self.on_text is not None:
            if self._texts:
                self.on_text("\n\n")
            self._texts += 1

    def _delta(self, index: int, delta: Any) -> None:
        if not 0 <= index < len(self.blocks):
            raise ModelUnavailable(f"the model's stream sent a piece of block {index} unopened")
        kind = delta.type
        if kind == "text_delta":
            self._piece(index, "text", delta.text)
            if self.on_text is not None:
                self.on_text(delta.text)
        elif kind == "input_json_delta":
            self._piece(index, "input", delta.partial_json)
        elif kind == "thinking_delta":
            self._piece(index, "thinking", delta.thinking)
        elif kind == "signature_delta":
            self.blocks[index]["signature"] = delta.signature
        elif kind == "citations_delta":
            cited = delta.citation.model_dump(exclude_none=True, warnings=False)
            self.blocks[index].setdefault("citations", []).append(cited)

    def _piece(self, index: int, field: str, piece: str) -> None:
        key = (index, field)
        if key in self._pieces:
            self._pieces[key].append(piece)
        else:
            self._pieces[key] = [piece]

    def _close(self, index: int) -> None:
        """A block's pieces joined. A tool call's input is parsed once: JSON that does not
        parse (a stream cut at max_tokens) stays the text it is, and the loop answers the
        call with an error."""
        block = self.blocks[index] if 0 <= index < len(self.blocks) else None
        for field in ("text", "thinking", "input"):
            pieces = self._pieces.pop((index, field), None)
            if pieces is None or block is None:
                continue
            joined = "".join(pieces)
            if field != "input":
                block[field] = str(block.get(field) or "") + joined
                continue
            try:
                block["input"] = json.loads(joined) if joined.strip() else {}
            except ValueError:
                block["input"] = joined

    def _ending(self, event: Any) -> None:
        delta = event.delta
        self.stop_reason = getattr(delta, "stop_reason", None)
        details = getattr(delta, "stop_details", None)
        if details is not None:
            self.stop_details = cast(StopDetails, details.model_dump(exclude_none=True))
        usage = event.usage
        for name in USAGE_TOTALS:
            value = getattr(usage, name, None)
            if value is not None:
                self.usage[name] = value.model_dump() if hasattr(value, "model_dump") else value

    def finish(self) -> None:
        """The end of the stream: a block left open (no `content_block_stop`, a stream cut
        at max_tokens) gets its pieces all the same."""
        for index in sorted({index for index, _ in self._pieces}):
            self._close(index)
