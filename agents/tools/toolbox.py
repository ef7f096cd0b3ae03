"""Tools as the model sees them: a spec (name, description, JSON schema) and a handler.

Arguments are validated against the schema before the handler runs; a bad argument,
an unknown tool or a handler's `ToolError` becomes an error text returned to the
model (`is_error`), so a loop never dies on the model's mistake. Handlers return a
`ToolResult`; `park` asks the agent loop to park until a person answers, `end` ends
a worker's task. A tool that acts in the agent's step (queues a message, parks) takes
a `step_handler(args, step)`: the agent loop passes it the step's `Step`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agents.errors import AgentError
from agents.loop.step import Step
from agents.model.blocks import ResultPart, ToolResultBlock, text_block
from bot.core.bounded import Bounded
from bot.core.lazy import lazy

if TYPE_CHECKING:
    import jsonschema
else:  # loaded at the first tool call's check (~2 MB, ~0.1 s)
    jsonschema = lazy("jsonschema")

log = logging.getLogger(__name__)


class ToolError(AgentError):
    """A problem with the model's request; the text goes back to the model."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    schema: dict[str, Any]
    #: inputs shown to the model beside the schema (the API's `input_examples`); each
    #: must be valid against `schema`, or the API refuses the request
    examples: tuple[dict[str, Any], ...] = ()
    #: the API form and the validator, built at first use and kept with the spec (bounded
    #: by the specs that exist: module constants, and the MCP registry's current ones), so
    #: every toolbox offering this tool shares one copy: never mutate what `to_api` gives
    _api: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def to_api(self) -> dict[str, Any]:
        """The tool as the API takes it (one dict per spec, shared: read it, never change
        it). A closed schema's `"additionalProperties": false` stays out: it costs every
        request tokens and tells the model nothing it acts on, while the check before each
        call still refuses an unknown argument by name."""
        if self._api is None:
            object.__setattr__(self, "_api", self._build_api())
        assert self._api is not None
        return self._api

    def validator(self) -> Any:
        """The schema's validator (a `jsonschema.Draft202012Validator`), built once."""
        if self._validator is None:
            object.__setattr__(self, "_validator", jsonschema.Draft202012Validator(self.schema))
        return self._validator

    def _build_api(self) -> dict[str, Any]:
        shown = {k: v for k, v in self.schema.items() if (k, v) != ("additionalProperties", False)}
        spec: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "input_schema": shown,
        }
        if self.examples:
            spec["input_examples"] = list(self.examples)
        return spec


@dataclass(slots=True)
class ToolResult:
    text: str
    is_error: bool = False
    park: str | None = None  # question id: park until it is answered
    end: bool = False  # the worker's task is over (publish)
    #: content blocks after the text (images from an MCP tool), as the API takes them
    blocks: list[ResultPart] = field(default_factory=list)
    #: a gated call's request (agents/tools/approvals.py): the node waits for a person's yes
    approval: Any = None


Handler = Callable[[dict[str, Any]], Awaitable[ToolResult | str]]
StepHandler = Callable[[dict[str, Any], Step], Awaitable[ToolResult | str]]
#: a check before a call's handler (the scope, agents/tools/scope_guard.py): a result stops it
Guard = Callable[[str, dict[str, Any], Step], Awaitable[ToolResult | None]]


def result_block(tool_use_id: str, result: ToolResult) -> ToolResultBlock:
    """The `tool_result` block that answers one tool call."""
    block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id}
    if result.blocks:
        text: list[ResultPart] = [text_block(result.text)] if result.text else []
        block["content"] = [*text, *result.blocks]
    else:
        block["content"] = result.text
    if result.is_error:
        block["is_error"] = True
    return block


@dataclass(frozen=True, slots=True)
class Tool:
    """A spec and exactly one handler: `handler(args)` for a tool that needs nothing of
    the step, `step_handler(args, step)` for one that acts in it."""

    spec: ToolSpec
    handler: Handler | None = None
    step_handler: StepHandler | None = None

    def __post_init__(self) -> None:
        if (self.handler is None) == (self.step_handler is None):
            raise TypeError(f"tool {self.spec.name}: give handler or step_handler, not both")

    async def run(self, args: dict[str, Any], step: Step | None) -> ToolResult | str:
        if self.handler is not None:
            return await self.handler(args)
        assert self.step_handler is not None
        if step is None:
            raise ToolError(f"{self.spec.name} cannot be used here")
        return await self.step_handler(args, step)


def schema(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON object schema from {name: property schema}."""
    props = {**required, **(optional or {})}
    return {
        "type": "object",
        "properties": props,
        **({"required": list(required)} if required else {}),
        "additionalProperties": False,
    }


STR = {"type": "string"}
INT = {"type": "integer"}


def arg(base: dict[str, Any], description: str, **more: Any) -> dict[str, Any]:
    """A property schema with its own description (every parameter has one)."""
    return {**base, **more, "description": description}


class ToolSource(Protocol):
    """Tools that come and go at run time (an MCP server's); `version` changes with them."""

    @property
    def version(self) -> int: ...

    def tools(self) -> list[Tool]: ...


class Toolbox:
    """The tools of one agent, in a fixed order (the prompt-cache prefix): its own tools,
    then each source's. The specs are rebuilt only when a source's version moved, so
    they stay byte-identical between turns otherwise."""

    def __init__(
        self, tools: Iterable[Tool], sources: Sequence[ToolSource] = (), guard: Guard | None = None
    ) -> None:
        self._own = list(tools)
        self._sources = list(sources)
        self.guard = guard
        self._versions: list[int] | None = None
        self._refresh()

    def _refresh(self) -> None:
        versions = [source.version for source in self._sources]
        if versions == self._versions:
            return
        self._versions = versions
        tools = [*self._own, *(t for source in self._sources for t in source.tools())]
        self._tools = {tool.spec.name: tool for tool in tools}
        self._specs = shared_specs([tool.spec for tool in self._tools.values()])

    @property
    def specs(self) -> list[dict[str, Any]]:
        self._refresh()
        return self._specs

    def names(self) -> list[str]:
        return list(self._tools)

    async def call(self, name: str, args: Any, step: Step | None = None) -> ToolResult:
        self._refresh()
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(
                f"Error: there is no tool {name!r}. Tools: {', '.join(self._tools)}.", is_error=True
            )
        problem = _check(tool.spec, args)
        if problem is not None:
            return ToolResult(f"Error: bad arguments for {name}: {problem}", is_error=True)
        try:
            if self.guard is not None and step is not None:
                stop = await self.guard(name, args, step)
                if stop is not None:
                    return stop
            result = await tool.run(args, step)
        except ToolError as exc:
            return ToolResult(f"Error: {exc}", is_error=True)
        except Exception as exc:
            log.exception("tool %s failed", name)
            return ToolResult(
                f"Error: {name} failed inside: {type(exc).__name__}: {exc}", is_error=True
            )
        return result if isinstance(result, ToolResult) else ToolResult(result)


#: the tool lists in use, one per distinct sequence of specs (an agent kind's own tools and
#: factories' tools, then the MCP tools it sees at the registry's version), keyed by the
#: specs' ids and holding the specs (so an id is never reused while its entry lives): every
#: session of one agent kind sends the same list object. Bounded: at most _LISTS_MAX, the
#: least recently used dropped (a dropped list lives on only in the toolboxes using it).
_LISTS_MAX = 64
_lists: Bounded[tuple[int, ...], tuple[list[ToolSpec], list[dict[str, Any]]]] = Bounded(_LISTS_MAX)


def shared_specs(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    """The API tool list of `specs`, shared with every toolbox offering the same specs in
    the same order (the prompt-cache prefix): read it, never change it."""
    key = tuple(id(spec) for spec in specs)
    held = _lists.get(key)
    if held is not None:
        _lists.touch(key)
        return held[1]
    api = [spec.to_api() for spec in specs]
    _lists[key] = (specs, api)
    return api


def _check(spec: ToolSpec, args: Any) -> str | None:
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {json.dumps(args)[:100]}"
    # a `oneOf` shows the model the shapes a value may take; which shape is meant (a
    # trigger's type) is the handler's to check, with a text that says what to send
    errors = spec.validator().iter_errors(args)
    error = jsonschema.exceptions.best_match(e for e in errors if e.validator != "oneOf")
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
