"""What a model refuses in a request's settings (`thinking`, `output_config.effort`,
sampling, `max_tokens`, `tool_choice`), and how it thinks for a request it accepts.

Part of the fake Anthropic API's rules (tests/fakes/anthropic_rules.py calls
`param_problems`); the behaviour per model is tests/fakes/anthropic_models.py. Texts the
docs quote are verbatim; the others (marked UNCONFIRMED in model-facts.md) name the
field and what to do, as the real ones do. Pure functions of the request body.
"""

from __future__ import annotations

from typing import Any, Literal

from tests.fakes.anthropic_models import EFFORTS, THINKING_TYPES, Display, Effort, ModelSpec

#: how a request makes the model think: `on` (adaptive or enabled), `between_tools`
#: (only its progress notes between tool calls come back, as thinking blocks), `off`
Mode = Literal["on", "between_tools", "off"]

GUIDE = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
#: the fields each `thinking.type` takes (SDK types/thinking_config_*_param.py)
FIELDS = {
    "adaptive": {"type", "display"},
    "enabled": {"type", "budget_tokens", "display"},
    "disabled": {"type"},
    "between_tools": {"type"},
}
MODES: dict[str, Mode] = {
    "adaptive": "on",
    "enabled": "on",
    "between_tools": "between_tools",
    "disabled": "off",
}
MIN_BUDGET = 1024
ADAPTIVE = 'Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
SAMPLING_DEFAULTS = {"temperature": 1.0, "top_p": 1.0}


def mode(body: dict[str, Any], spec: ModelSpec) -> Mode:
    """How the model thinks for this request; a request without `thinking` gets the
    model's default (adaptive on Claude 5 models, off on older ones)."""
    kind = _thinking(body).get("type")
    if kind in MODES:
        return MODES[kind]
    return "on" if spec.thinks_by_default else "off"


def display(body: dict[str, Any], spec: ModelSpec) -> Display:
    """Whether issued thinking text is shown (`summarized`) or left empty (`omitted`);
    progress notes under `between_tools` always carry their text."""
    if mode(body, spec) == "between_tools":
        return "summarized"
    chosen = _thinking(body).get("display")
    return chosen if chosen in ("summarized", "omitted") else spec.display


def param_problems(body: dict[str, Any], spec: ModelSpec) -> list[str]:
    """Every setting of this request the model refuses."""
    return [
        *_thinking_problems(body, spec),
        *_effort_problems(body, spec),
        *_sampling_problems(body, spec),
        *_max_tokens_problems(body, spec),
        *_tool_choice_problems(body, spec),
    ]


def _thinking(body: dict[str, Any]) -> dict[str, Any]:
    thinking = body.get("thinking")
    return thinking if isinstance(thinking, dict) else {}


def _effort(body: dict[str, Any], spec: ModelSpec) -> Effort | None:
    config = body.get("output_config")
    chosen = config.get("effort") if isinstance(config, dict) else None
    return chosen if chosen in EFFORTS else spec.effort


def _thinking_problems(body: dict[str, Any], spec: ModelSpec) -> list[str]:
    if "thinking" not in body:
        return []
    thinking, kind = _thinking(body), _thinking(body).get("type")
    if kind not in THINKING_TYPES:
        tags = ", ".join(f"'{t}'" for t in THINKING_TYPES)
        return [
            f"thinking: Input tag {kind!r} found using 'type' does not match any of the "
            f"expected tags: {tags}"
        ]
    if kind not in spec.thinking:
        return [_unsupported(kind, spec)]
    out = [
        f"thinking.{kind}.{key}: Extra inputs are not permitted"
        for key in sorted(set(thinking) - FIELDS[kind])
    ]
    if thinking.get("display") not in (None, "summarized", "omitted"):
        out.append(f"thinking.{kind}.display: Input should be 'summarized' or 'omitted'")
    if kind == "enabled":
        out.extend(_budget_problems(thinking, body.get("max_tokens")))
    out.extend(_off_effort_problems(kind, _effort(body, spec), spec))
    return out


def _unsupported(kind: str, spec: ModelSpec) -> str:
    """The docs' text for `enabled`/`disabled` on always-on models; on Sonnet 5.5 the
    text for `disabled` points to `between_tools` (its exact words are UNCONFIRMED)."""
    said = f'"thinking.type.{kind}" is not supported for this model.'
    if kind == "disabled" and "between_tools" in spec.thinking:
        return f'{said} Use "thinking.type.between_tools" to turn off up-front thinking. {ADAPTIVE}'
    if "adaptive" not in spec.thinking:
        return f'{said} Use "thinking.type.enabled" with "budget_tokens" to turn thinking on.'
    return f"{said} {ADAPTIVE}"


def _budget_problems(thinking: dict[str, Any], max_tokens: Any) -> list[str]:
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int):
        return ["thinking.enabled.budget_tokens: Field required"]
    if budget < MIN_BUDGET:
        return [
            f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}"
        ]
    if isinstance(max_tokens, int) and budget >= max_tokens:
        return [
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            f"documentation at {GUIDE}#max-tokens-and-context-window-size"
        ]
    return []


def _off_effort_problems(kind: str, effort: Effort | None, spec: ModelSpec) -> list[str]:
    """Opus 5 turns thinking off, and Sonnet 5.5 thinks only between tools, only at effort
    high or below (the text is UNCONFIRMED)."""
    cap = spec.off_effort_cap
    if kind not in ("disabled", "between_tools") or cap is None or effort is None:
        return []
    if EFFORTS.index(effort) <= EFFORTS.index(cap):
        return []
    return [
        f'"thinking.type.{kind}" is not supported with "output_config.effort" "{effort}". '
        f'Use effort "{cap}" or lower, or omit "thinking" to think adaptively.'
    ]


def _effort_problems(body: dict[str, Any], spec: ModelSpec) -> list[str]:
    config = body.get("output_config")
    if not isinstance(config, dict) or config.get("effort") is None:
        return []
    if not spec.efforts:
        return ["output_config.effort: This model does not support the effort parameter."]
    if config["effort"] not in spec.efforts:
        levels = ", ".join(f"'{e}'" for e in spec.efforts)
        return [f"output_config.effort: Input should be one of {levels} for this model"]
    return []


def _sampling_problems(body: dict[str, Any], spec: ModelSpec) -> list[str]:
    changed = [k for k, v in SAMPLING_DEFAULTS.items() if k in body and body[k] != v]
    changed += ["top_k"] if "top_k" in body else []
    if spec.sampling == "fixed" and changed:
        return [
            f"{k}: sampling parameters are not supported for this model; remove "
            "`temperature`, `top_p` and `top_k`"
            for k in changed
        ]
    if spec.sampling == "one" and "temperature" in body and "top_p" in body:
        return [
            "`temperature` and `top_p` cannot both be specified for this model. "
            "Please use only one."
        ]
    if "temperature" in changed and _thinking(body).get("type") == "enabled":
        return [
            "`temperature` may only be set to 1 when thinking is enabled. Please consult "
            f"our documentation at {GUIDE}#feature-compatibility"
        ]
    return []


def _max_tokens_problems(body: dict[str, Any], spec: ModelSpec) -> list[str]:
    asked = body.get("max_tokens")
    if isinstance(asked, int) and asked > spec.max_tokens:
        return [
            f"max_tokens: {asked} > {spec.max_tokens}, which is the maximum allowed number "
            f"of output tokens for {body.get('model')}"
        ]
    return []


def _tool_choice_problems(body: dict[str, Any], spec: ModelSpec) -> list[str]:
    """Forcing a tool is refused with manual thinking everywhere, and always on Sonnet
    5.5, Opus 5.5 and Fable 5.1+ (their text is UNCONFIRMED)."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") not in ("any", "tool"):
        return []
    if not spec.forced_tools:
        return [
            "tool_choice: forcing tool use (`any` or `tool`) is not supported for this "
            'model. Use `"auto"` and say in the prompt which tool to call.'
        ]
    if _thinking(body).get("type") == "enabled":
        return ["Thinking may not be enabled when tool_choice forces tool use."]
    return []
