"""What is the same for every session of one agent kind is held once (issue 33): two
coordinator sessions (two workers) send the very same tool list, built from one API
dict per tool, and an extra session costs the tool definitions nothing."""

from __future__ import annotations

import gc
import inspect
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agents.tools import toolbox as toolbox_mod
from agents.tools.toolbox import STR, Tool, Toolbox, ToolSpec, arg, schema
from bot.app import App
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, running_app
from tests.kits.session_kit import built_app, coordinator_session, sessions, worker
from tests.kits.tools_kit import stdio_entry, tools_settings


@pytest.fixture
async def app(tmp_path: Path, fake: FakeAnthropic) -> AsyncIterator[App]:
    with built_app(tmp_path / "data", fake) as built:
        yield built


async def test_sessions_of_one_kind_hold_one_copy_of_the_tool_definitions(app: App) -> None:
    first, second = coordinator_session(app, 1)[0], coordinator_session(app, 2)[0]
    assert first.toolbox is not second.toolbox  # each session its own tools (handlers)
    assert first.toolbox.specs is second.toolbox.specs
    assert len(first.toolbox.specs) >= 10
    one, two = worker(app, 1)[0], worker(app, 2)[0]
    assert one.toolbox.specs is two.toolbox.specs
    # across kinds, a tool both offer (memory, files, triggers) is one dict
    theirs = {spec["name"]: spec for spec in one.toolbox.specs}
    common = [s for s in first.toolbox.specs if s["name"] in theirs and s["name"] != "send_message"]
    assert len(common) >= 8
    assert all(spec is theirs[spec["name"]] for spec in common)


def lines_of(*code: Any) -> set[int]:
    out: set[int] = set()
    for item in code:
        source, first = inspect.getsourcelines(item)
        out |= set(range(first, first + len(source)))
    return out


async def test_an_extra_session_costs_the_tool_definitions_nothing(app: App) -> None:
    """What the code that builds tool definitions (`ToolSpec`, `shared_specs`) allocates
    for 110 more sessions: nothing that stays (before: ~8 KB of API dicts a session)."""
    sessions(app, 3, 1, first=1000)  # warm
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        held = sessions(app, 100, 10)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    building = lines_of(ToolSpec, toolbox_mod.shared_specs)
    grown = sum(
        stat.size_diff
        for stat in after.compare_to(before, "lineno")
        if stat.traceback[0].filename == toolbox_mod.__file__
        and stat.traceback[0].lineno in building
    )
    assert grown / len(held) < 50, grown / len(held)
    assert len({id(session.toolbox.specs) for session, *_ in held}) == 2  # one per kind


async def test_a_request_leaves_the_shared_definitions_as_they_are(app: App) -> None:
    session, _conv, system, request = coordinator_session(app, 7)
    specs = session.toolbox.specs
    snapshot = [dict(spec) for spec in specs]
    app.services.llm.request(system, specs, [{"role": "user", "content": "hi"}])
    assert "cache_control" in request["tools"][-1]  # the request's own copy carries it
    assert [dict(spec) for spec in specs] == snapshot
    assert all("cache_control" not in spec for spec in specs)


def handler_tool(spec: ToolSpec) -> Tool:
    async def handle(args: dict[str, Any]) -> str:
        return "ok"

    return Tool(spec, handle)


class Source:
    """A tool source as an MCP registry's: a new `Tool` per call, over the specs it holds."""

    def __init__(self, specs: list[ToolSpec]) -> None:
        self.specs = specs
        self.version = 1

    def tools(self) -> list[Tool]:
        return [handler_tool(spec) for spec in self.specs]


def spec(name: str) -> ToolSpec:
    return ToolSpec(name, f"the {name} tool", schema({"what": arg(STR, "what")}))


def test_toolboxes_over_one_source_share_its_list_until_the_source_changes() -> None:
    own = [handler_tool(spec("own"))]
    source = Source([spec("mcp_a"), spec("mcp_b")])
    first, second = Toolbox(own, [source]), Toolbox(own, [source])
    before = first.specs
    assert second.specs is before
    assert [s["name"] for s in before] == ["own", "mcp_a", "mcp_b"]
    source.specs, source.version = [spec("mcp_a"), spec("mcp_c")], 2
    assert first.specs is second.specs is not before
    assert [s["name"] for s in first.specs] == ["own", "mcp_a", "mcp_c"]
    assert [s["name"] for s in before] == ["own", "mcp_a", "mcp_b"]  # untouched


def test_the_shared_lists_are_bounded() -> None:
    for i in range(toolbox_mod._LISTS_MAX + 20):
        toolbox_mod.shared_specs([spec(f"t{i}")])
    assert len(toolbox_mod._lists) == toolbox_mod._LISTS_MAX


async def test_the_validator_is_built_once_and_still_refuses() -> None:
    tool = handler_tool(spec("echo"))
    box = Toolbox([tool])
    assert (await box.call("echo", {"what": "x"})).text == "ok"
    validator = tool.spec.validator()
    bad = await box.call("echo", {"what": 3})
    assert bad.is_error and "is not of type 'string'" in bad.text
    unknown = await box.call("echo", {"what": "x", "more": 1})
    assert unknown.is_error and "more" in unknown.text
    assert tool.spec.validator() is validator
    assert tool.spec.to_api() is tool.spec.to_api()
    assert "additionalProperties" not in tool.spec.to_api()["input_schema"]


async def test_sessions_share_the_mcp_tools_of_a_real_server(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """A real MCP SDK server over stdio: every coordinator session sends the same list,
    the registry's tool definitions in it once; a session's handler is its own."""
    settings = tools_settings(tmp_path, fake, [stdio_entry("ops", tmp_path / "calls.jsonl")])
    async with running_app(settings, [Recorder()]) as app:
        await app.mcp.wait_connected(30)
        first, second = coordinator_session(app, 1)[0], coordinator_session(app, 2)[0]
        specs = first.toolbox.specs
        assert specs is second.toolbox.specs
        mcp = [spec for spec in specs if spec["name"].startswith("ops__")]
        offered = {t.spec.name: t.spec.to_api() for t in app.mcp.offered.values()}
        assert mcp and all(spec is offered[spec["name"]] for spec in mcp)
        name = mcp[0]["name"]
        assert first.toolbox._tools[name] is not second.toolbox._tools[name]
