"""What the configured model can do, and how a request asks it to think.

The capability map (config/models.py) knows the current Claude models. A model it does
not know is asked once (`models.retrieve`: the API's own list of thinking types, effort
levels and limits); when that fails too (a server without the models endpoint), the
model is treated conservatively: no thinking parameter and no effort, nothing a server
could refuse, and one warning says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agents.model.providers.base import ThinkingParams
from config.models import EFFORTS, UNKNOWN_WINDOW, ModelSpec, conservative, spec_of

log = logging.getLogger(__name__)

THINKING_TYPES = ("adaptive", "between_tools", "disabled", "enabled")
_said: set[tuple[str, str]] = set()  # (model, effort) pairs already named in the log


class Capabilities:
    """The model's `ModelSpec`: the map's entry at once, else learnt at the first call."""

    def __init__(self, model: str, max_output: int) -> None:
        self.model = model
        self._max_output = max_output
        known = spec_of(model)
        self._learnt = known is not None
        self.spec: ModelSpec = known or conservative(model, max_output)
        self._lock = asyncio.Lock()

    async def learn(self, describe: Callable[[str], Awaitable[Any]]) -> None:
        """Ask the API about a model the map does not know, once per process (a provider
        whose API cannot say answers None: the conservative spec stays, quietly)."""
        if self._learnt:
            return
        async with self._lock:
            if self._learnt:
                return
            self._learnt = True
            try:
                info = await describe(self.model)
            except Exception as exc:  # any answer but a model's: stay conservative
                log.warning(
                    "model %s is not in Switchboard's capability map and the API did not "
                    "describe it (%s): it is sent no thinking or effort setting",
                    self.model,
                    type(exc).__name__,
                )
                return
            if info is None:
                return
            self.spec = from_info(self.model, info, self._max_output)
            log.info("model %s: capabilities read from the API", self.model)


def from_info(model: str, info: Any, max_output: int) -> ModelSpec:
    """A `ModelSpec` from the SDK's `ModelInfo` (no price: the config gives one)."""
    caps = getattr(info, "capabilities", None)
    thinking = getattr(caps, "thinking", None)
    types = getattr(thinking, "types", None)
    accepted = frozenset(
        t for t in THINKING_TYPES if getattr(getattr(types, t, None), "supported", False)
    )
    effort = getattr(caps, "effort", None)
    levels = tuple(
        e
        for e in EFFORTS[1:]
        if getattr(effort, "supported", False)
        and getattr(getattr(effort, e, None), "supported", False)
    )
    return ModelSpec(
        model,
        accepted,
        thinks_by_default="adaptive" in accepted and "disabled" not in accepted,
        efforts=levels,
        max_output=getattr(info, "max_tokens", None) or max_output,
        context_window=getattr(info, "max_input_tokens", None) or UNKNOWN_WINDOW,
        known=False,
    )


def thinking_params(spec: ModelSpec, effort: str) -> ThinkingParams:
    """`thinking` and `output_config` for a call at `effort` (config/models.py EFFORTS),
    as the model takes them: adaptive thinking with an effort where it thinks adaptively;
    `off` as `disabled` where allowed, else `between_tools` (Claude Sonnet 5.5), else
    nothing where the model does not think by default, else the lowest effort. A model
    without adaptive thinking (older ones, unknown ones) is sent neither: it runs as it
    does by default, without thinking."""
    if "adaptive" not in spec.thinking:
        return {}
    level = spec.effort(effort)
    if effort == "off" and "disabled" in spec.thinking:
        return {"thinking": {"type": "disabled"}}
    if effort == "off" and "between_tools" in spec.thinking:
        return {"thinking": {"type": "between_tools"}, "output_config": {"effort": "low"}}
    if effort == "off" and not spec.thinks_by_default:
        return {}  # a request that says nothing runs without thinking
    if level != effort:
        _note(spec.name, effort, level)
    params: ThinkingParams = {"thinking": {"type": "adaptive"}}
    if level is not None:
        params["output_config"] = {"effort": level}
    return params


def _note(model: str, wanted: str, used: str | None) -> None:
    if (model, wanted) not in _said:
        _said.add((model, wanted))
        log.warning(
            "model %s takes no effort %r; it runs at %r", model, wanted, used or "its default"
        )
