"""What each model can do: one entry per model the runtime knows, and the only place
model-specific facts live (agents/model/ reads them to build a request, the ledger to
price a call, the settings to check `SWITCHBOARD_MAX_TOKENS`).

A `ModelSpec` says which `thinking` types the API accepts for the model, whether it
thinks when a request sets none, which `output_config.effort` levels it takes, its
output limit and context window, and its price. Facts are Anthropic's documentation
as of Nov 2026 (models overview, the migration guides to Claude Sonnet 5 and 5.5,
pricing). A model missing here is asked for its capabilities once (agents/model/
capabilities.py, `models.retrieve`), else treated conservatively.
Imports nothing of the project but config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from config.prices import ModelPrice, cloud_name

#: the `thinking.type` values of the Messages API
ThinkingType = str  # "adaptive" | "enabled" | "disabled" | "between_tools"
#: effort levels from the least to the most thinking; `off` is ours: as little as the
#: model allows (no thinking where it may be turned off)
EFFORTS = ("off", "low", "medium", "high", "xhigh", "max")
Effort = Literal["off", "low", "medium", "high", "xhigh", "max"]
#: whose model calls: the coordinator's, the workers', or the background's (compaction
#: and memory upkeep)
Role = Literal["coordinator", "workers", "background"]
ROLES: tuple[Role, ...] = ("coordinator", "workers", "background")
MODEL_VARIABLES: dict[Role, str] = {
    "coordinator": "SWITCHBOARD_MODEL",
    "workers": "SWITCHBOARD_MODEL_WORKERS",
    "background": "SWITCHBOARD_MODEL_BACKGROUND",
}
#: quick answers at the front desk, deeper work in tasks, little for summaries
DEFAULT_EFFORT: dict[Role, Effort] = {
    "coordinator": "low",
    "workers": "medium",
    "background": "low",
}
_SNAPSHOT = re.compile(r"^\d{8}$")


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    #: the `thinking.type` values the API accepts for this model
    thinking: frozenset[ThinkingType]
    #: whether a request without `thinking` thinks (adaptive, at the API's default effort)
    thinks_by_default: bool
    #: the `output_config.effort` levels it takes; empty: no effort parameter
    efforts: tuple[str, ...]
    max_output: int
    context_window: int
    price: ModelPrice | None = None
    #: known from the table (False: learnt from the API, or guessed)
    known: bool = True

    def effort(self, wanted: str) -> str | None:
        """The nearest level at or below `wanted` that the model takes, else its lowest
        (`off` on a model that always thinks); None when it takes no effort parameter."""
        if not self.efforts:
            return None
        rank = EFFORTS.index(wanted)
        fitting = [e for e in self.efforts if EFFORTS.index(e) <= rank]
        return fitting[-1] if fitting else self.efforts[0]


def _price(
    input: float, output: float, read: float | None = None, write: float | None = None
) -> ModelPrice:
    return ModelPrice(input=input, output=output, cache_read=read, cache_write=write)


_CURRENT = ("low", "medium", "high", "xhigh", "max")
_NO_XHIGH = ("low", "medium", "high", "max")
_ADAPTIVE_OFF = frozenset({"adaptive", "disabled"})
_ALWAYS = frozenset({"adaptive"})
_MANUAL = frozenset({"enabled", "disabled"})
_M, _K = 1_000_000, 1_000


def _spec(
    name: str,
    thinking: frozenset[str],
    default: bool,
    efforts: tuple[str, ...],
    price: ModelPrice | None,
    out: int = 128 * _K,
    window: int = _M,
) -> ModelSpec:
    return ModelSpec(name, thinking, default, efforts, out, window, price)


#: the models the runtime knows; a dated snapshot (`-20250929`) or `-latest` finds its
#: family's entry
MODELS: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        _spec("claude-sonnet-5", _ADAPTIVE_OFF, True, _CURRENT, _price(2, 10, 0.20, 2.50)),
        # refuses `disabled` (between_tools is its lowest setting); cache reads at half
        # of Sonnet 5's since 2026-10-07
        _spec(
            "claude-sonnet-5-5",
            frozenset({"adaptive", "between_tools"}),
            True,
            _CURRENT,
            _price(2, 10, 0.10, 2.50),
        ),
        _spec("claude-opus-5", _ADAPTIVE_OFF, True, _CURRENT, _price(5, 25, 0.50, 6.25)),
        _spec("claude-opus-5-5", _ALWAYS, True, _CURRENT, _price(4, 20, 0.20, 5)),
        # tiered: prompts over 100K tokens cost five times as much (not modelled here)
        _spec("claude-haiku-5-5", _ALWAYS, True, _CURRENT, _price(0.10, 0.50, 0.01, 0.125)),
        _spec("claude-fable-5", _ALWAYS, True, _CURRENT, _price(10, 50, 1.00, 12.50)),
        _spec("claude-mythos-5", _ALWAYS, True, _CURRENT, _price(10, 50, 1.00, 12.50)),
        _spec("claude-fable-5-1", _ALWAYS, True, _CURRENT, _price(10, 50, 0.25, 12.50)),
        _spec("claude-mythos-5-1", _ALWAYS, True, _CURRENT, _price(10, 50, 0.25, 12.50)),
        # prices not yet published where we could read them: set [prices."..."]
        _spec("claude-fable-5-2", _ALWAYS, True, _CURRENT, None),
        _spec("claude-mythos-5-2", _ALWAYS, True, _CURRENT, None),
        _spec("claude-opus-4-8", frozenset({"adaptive"}), False, _CURRENT, _price(5, 25)),
        _spec("claude-opus-4-7", frozenset({"adaptive"}), False, _CURRENT, _price(5, 25)),
        _spec("claude-opus-4-6", _ADAPTIVE_OFF | {"enabled"}, False, _NO_XHIGH, _price(5, 25)),
        _spec(
            "claude-sonnet-4-6",
            _ADAPTIVE_OFF | {"enabled"},
            False,
            _NO_XHIGH,
            _price(3, 15),
            out=64 * _K,
        ),
        _spec("claude-opus-4-5", _MANUAL, False, (), _price(5, 25), 64 * _K, 200 * _K),
        _spec("claude-opus-4-1", _MANUAL, False, (), _price(15, 75), 32 * _K, 200 * _K),
        _spec("claude-opus-4", _MANUAL, False, (), _price(15, 75), 32 * _K, 200 * _K),
        _spec("claude-sonnet-4-5", _MANUAL, False, (), _price(3, 15), 64 * _K, 200 * _K),
        _spec("claude-sonnet-4", _MANUAL, False, (), _price(3, 15), 64 * _K, 200 * _K),
        _spec("claude-haiku-4-5", _MANUAL, False, (), _price(1, 5), 64 * _K, 200 * _K),
        _spec("claude-3-7-sonnet", _MANUAL, False, (), _price(3, 15), 64 * _K, 200 * _K),
        _spec("claude-3-5-sonnet", _MANUAL, False, (), _price(3, 15), 8 * _K, 200 * _K),
        _spec("claude-3-5-haiku", _MANUAL, False, (), _price(0.8, 4), 8 * _K, 200 * _K),
        _spec("claude-3-haiku", _MANUAL, False, (), _price(0.25, 1.25), 4 * _K, 200 * _K),
    )
}

#: Anthropic's list prices (USD per million tokens, standard API, 5-minute cache
#: writes), as the ledger reads them before the config's `[prices."<model>"]`
DEFAULT_PRICES: dict[str, ModelPrice] = {
    name: spec.price for name, spec in MODELS.items() if spec.price is not None
}

#: a model nobody could tell us about: no thinking parameter, no effort (nothing a
#: server might refuse), the output limit the settings ask for
UNKNOWN_WINDOW = 200 * _K


#: the providers a model setting may name (`provider:model`); a bare model name is
#: Anthropic's, or the Anthropic-compatible server's at ANTHROPIC_BASE_URL
PROVIDERS = ("anthropic", "openai", "vertex", "bedrock")
LATER: tuple[str, ...] = ()
#: prefixes that name a provider Switchboard does not speak to (other tools' names);
#: any other prefix is part of a bare model name (`llama3:8b`, `qwen2.5:7b`)
FOREIGN = ("azure", "google", "gemini", "google-vertex", "groq", "cohere", "deepseek",
           "openrouter", "together", "fireworks", "xai", "grok", "ollama", "vllm",
           "litellm", "huggingface", "mistral-api")  # fmt: skip


def model_name(value: str) -> str:
    """A model setting as the runtime keeps it: `anthropic:` dropped (a bare name is
    Anthropic's), another provider's prefix kept (`openai:gpt-5.2`: the runtime routes
    by it). A ValueError (one sentence) for a provider this version does not speak to."""
    provider, _, name = value.strip().partition(":")
    if provider in LATER:
        raise ValueError(
            f"the {provider}: provider is not supported in this version; use anthropic:, "
            "vertex:, openai: (any OpenAI-compatible server through OPENAI_BASE_URL) or a bare "
            "model name (any Anthropic-compatible server through ANTHROPIC_BASE_URL)"
        )
    if provider in FOREIGN:
        raise ValueError(
            f"unknown provider {provider}:; use anthropic:<model>, openai:<model> with "
            "OPENAI_BASE_URL for an OpenAI-compatible server, or a bare model name with "
            "ANTHROPIC_BASE_URL for an Anthropic-compatible one"
        )
    if provider in PROVIDERS and not name:
        raise ValueError(f"{provider}: names no model (write {provider}:<model>)")
    if provider == "anthropic":
        return name
    return value.strip()


def provider_of(model: str) -> str:
    """The provider of a model as `model_name` keeps it."""
    provider, sep, _ = model.partition(":")
    return provider if sep and provider in PROVIDERS else "anthropic"


def spec_of(model: str) -> ModelSpec | None:
    """The table's entry for `model`: exact, else its family's for a snapshot name
    (`-20250929`, `-latest`), a cloud's model id read as Anthropic's (`cloud_name`)."""
    model = cloud_name(model)
    if model in MODELS:
        return MODELS[model]
    base, _, suffix = model.rpartition("-")
    if base in MODELS and (suffix == "latest" or _SNAPSHOT.match(suffix)):
        return MODELS[base]
    return None


def conservative(model: str, max_output: int) -> ModelSpec:
    """What the runtime assumes of a model it cannot learn about."""
    return ModelSpec(model, frozenset(), False, (), max_output, UNKNOWN_WINDOW, known=False)
