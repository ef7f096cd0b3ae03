"""How each Claude model behaves, as the fake Anthropic API plays it
(tests/fakes/anthropic_api.py): what it accepts, what it refuses, how it thinks.

The table follows /work/scratch/model-facts.md (researched 2026-11-27): the SDK 2.14 and
Anthropic's docs, third-party sources where the docs were silent (marked below). A test
may add a model to a fake's own copy (`fake.models["claude-new-1"] = replace(...)`), and
`GET /v1/models/{id}` answers for it. A `claude-*` name the table does not know is played
as an old model that thinks only when asked (`enabled`/`disabled`): `GENERIC`.
This module touches nothing; it is data and the `ModelInfo` JSON made from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

Effort = Literal["low", "medium", "high", "xhigh", "max"]
ThinkingType = Literal["adaptive", "enabled", "disabled", "between_tools"]
Display = Literal["summarized", "omitted"]
#: `fixed`: a non-default temperature/top_p/top_k is a 400; `one`: temperature and top_p
#: together are a 400 (Haiku 4.5); `free`: anything goes
Sampling = Literal["free", "fixed", "one"]

EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")
THINKING_TYPES: tuple[ThinkingType, ...] = ("adaptive", "between_tools", "disabled", "enabled")


@dataclass(frozen=True)
class ModelSpec:
    """One model's behaviour. The defaults are a Claude 5 model's."""

    display_name: str
    line: str | None = None
    #: the `thinking.type` values it accepts; any other is a 400
    thinking: frozenset[ThinkingType] = frozenset({"adaptive", "disabled"})
    #: whether it thinks (adaptively) when the request has no `thinking`
    thinks_by_default: bool = True
    #: what `thinking.display` is when the request does not say
    display: Display = "omitted"
    #: the `output_config.effort` levels it accepts (empty: effort is a 400) and the default
    efforts: tuple[Effort, ...] = EFFORTS
    effort: Effort | None = "high"
    #: thinking turned off (`disabled`, `between_tools`) only at this effort or below
    off_effort_cap: Effort | None = None
    max_tokens: int = 128_000
    context: int = 1_000_000
    sampling: Sampling = "fixed"
    #: whether `tool_choice` `any`/`tool` is accepted (with adaptive thinking)
    forced_tools: bool = True
    #: whether a final assistant message (a prefill) is accepted
    prefill: bool = True
    #: text it writes before a tool call comes back as thinking blocks (Sonnet 5.5 ...)
    updates_as_thinking: bool = False
    created_at: str = "2026-01-01T00:00:00Z"


_FIVE = ModelSpec("Claude 5")
_ALWAYS_ON = replace(_FIVE, thinking=frozenset({"adaptive"}))
#: Sonnet 5.5, Opus 5.5, Fable/Mythos 5.1+: no forced tool use, notes before a tool call
#: come back as thinking blocks
_LATEST = replace(
    _ALWAYS_ON, forced_tools=False, updates_as_thinking=True, created_at="2026-09-01T00:00:00Z"
)
_FOUR = ModelSpec(
    "Claude 4",
    thinking=frozenset({"adaptive", "enabled", "disabled"}),
    thinks_by_default=False,
    display="summarized",
    efforts=("low", "medium", "high", "max"),
    sampling="free",
    created_at="2025-09-01T00:00:00Z",
)


def _named(base: ModelSpec, name: str, **changes: Any) -> ModelSpec:
    """`base` as the model called "Claude <name>", of the line its first word names."""
    return replace(base, display_name=f"Claude {name}", line=name.split()[0].lower(), **changes)


MODELS: dict[str, ModelSpec] = {
    "claude-sonnet-5": _named(_FIVE, "Sonnet 5"),
    "claude-sonnet-5-5": _named(
        _LATEST,
        "Sonnet 5.5",
        thinking=frozenset({"adaptive", "between_tools"}),
        off_effort_cap="high",
        prefill=False,
    ),
    # sampling is free per the docs; the prefill refusal is OpenRouter's word
    "claude-opus-5": _named(_FIVE, "Opus 5", sampling="free", prefill=False, off_effort_cap="high"),
    "claude-opus-5-5": _named(_LATEST, "Opus 5.5", effort="medium", prefill=False),
    "claude-haiku-5-5": _named(_ALWAYS_ON, "Haiku 5.5", effort="medium", prefill=False),
    # Fable/Mythos 5: sampling refused per third-party claude-mods; 5.2 "like 5.1"
    # (its details are UNCONFIRMED)
    "claude-fable-5": _named(_ALWAYS_ON, "Fable 5"),
    "claude-mythos-5": _named(_ALWAYS_ON, "Mythos 5"),
    "claude-fable-5-1": _named(_LATEST, "Fable 5.1"),
    "claude-mythos-5-1": _named(_LATEST, "Mythos 5.1"),
    "claude-fable-5-2": _named(_LATEST, "Fable 5.2"),
    "claude-mythos-5-2": _named(_LATEST, "Mythos 5.2"),
    # Opus 4.7/4.8: `enabled` refused, no thinking unless asked; sampling per third parties
    "claude-opus-4-8": _named(_FIVE, "Opus 4.8", thinks_by_default=False),
    "claude-opus-4-7": _named(_FIVE, "Opus 4.7", thinks_by_default=False),
    "claude-opus-4-6": _named(_FOUR, "Opus 4.6"),
    "claude-sonnet-4-6": _named(_FOUR, "Sonnet 4.6", max_tokens=64_000),
    "claude-haiku-4-5": _named(
        _FOUR,
        "Haiku 4.5",
        thinking=frozenset({"enabled", "disabled"}),
        efforts=(),
        effort=None,
        max_tokens=64_000,
        context=200_000,
        sampling="one",
    ),
}

#: any model the table does not know: an old one that thinks only with `enabled`
GENERIC = replace(
    _FOUR,
    display_name="Claude (unknown to the fake)",
    thinking=frozenset({"enabled", "disabled"}),
    efforts=(),
    effort=None,
    max_tokens=64_000,
    context=200_000,
)


def spec_for(model: str, models: Mapping[str, ModelSpec]) -> ModelSpec:
    """The behaviour the fake plays for `model`."""
    return models.get(model, GENERIC)


def model_info(model_id: str, spec: ModelSpec) -> dict[str, Any]:
    """`GET /v1/models/{id}` as the API answers it (SDK types/model_info.py)."""
    return {
        "id": model_id,
        "type": "model",
        "display_name": spec.display_name,
        "created_at": spec.created_at,
        "lifecycle": "active",
        "deprecated_at": None,
        "retires_at": None,
        "line": spec.line,
        "max_input_tokens": spec.context,
        "max_tokens": spec.max_tokens,
        "capabilities": _capabilities(spec),
    }


def _capabilities(spec: ModelSpec) -> dict[str, Any]:
    """SDK types/model_capabilities.py: every key present; what the fake does not play
    (batch, citations, server tools...) is reported as supported, as on today's models."""
    yes = {"supported": True}
    return {
        **{k: yes for k in ("batch", "citations", "code_execution", "image_input", "pdf_input")},
        "structured_outputs": yes,
        "context_management": {
            **yes,
            "clear_thinking_20251015": yes,
            "clear_tool_uses_20250919": yes,
            "compact_20260112": yes,
        },
        "server_tools": {**yes, "code_execution": yes, "web_search": yes},
        "effort": {
            "supported": bool(spec.efforts),
            **{level: {"supported": level in spec.efforts} for level in EFFORTS},
        },
        "thinking": {
            "supported": bool(spec.thinking - {"disabled"}),
            "types": {t: {"supported": t in spec.thinking} for t in THINKING_TYPES},
        },
    }
