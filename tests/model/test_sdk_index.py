"""The anthropic SDK's package indexes read name by name (agents/model/providers/sdk_index.py).

Against the installed SDK, in fresh interpreters: every name of every package made an
index is the object the SDK's own `__init__.py` binds, `__all__` and `dir()` included;
the packages that carry the saving are still indexes (a new SDK whose `__init__` does
more fails here, loudly, instead of quietly loading everything again); no module of the
SDK star-imports from one; and a streamed call and an error status through the SDK work.
The root package, whose imports of `anthropic.lib` are deferred, is compared the same way:
every name, once read, is the object (and `__module__`) the eager import binds.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

import anthropic

from agents.model.providers.sdk_index import ROOTS
from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.proc import fresh_json

ROOT = Path(__file__).resolve().parents[2]
SDK = Path(anthropic.__file__).parent
#: the indexes the saving rests on (~8 MB resident, ~0.25 s of the preload's CPU)
MUST = ["anthropic.types", "anthropic.types.beta", "anthropic.resources"]

DESCRIBE = """
import importlib, json, re, sys
sys.path.insert(0, {root!r})
def describe(value):
    kind = type(value).__name__
    if isinstance(value, type(sys)):
        return "module " + value.__name__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if name is not None and hasattr(value, "__module__"):
        return f"{{kind}} {{value.__module__}}.{{name}}"
    return kind + " " + re.sub(" at 0x[0-9a-f]+", "", repr(value))
def public(package):
    return {{n: describe(getattr(package, n)) for n in dir(package) if not n.startswith("__")}}
"""
INDEXED = (
    DESCRIBE
    + """
from agents.model.providers import sdk_index
sdk_index.install()
import anthropic
anthropic.AsyncAnthropic(api_key="k").messages  # what a Messages call imports
touched = sorted(sdk_index.INDEXES)
deferred = "anthropic.lib.foundry" not in sys.modules
seen = {{"anthropic": [public(anthropic), anthropic.__all__, type(anthropic).__name__,
                      anthropic.__file__]}}  # read whole: every deferred import made
while len(seen) <= len(sdk_index.INDEXES):  # reading names imports more indexes
    for name in sorted(set(sdk_index.INDEXES) - set(seen)):
        package = sys.modules[name]
        seen[name] = [public(package), getattr(package, "__all__", None),
                      type(package).__name__, package.__file__]
print(json.dumps([touched, deferred, seen]))
"""
)
EAGER = (
    DESCRIBE
    + """
import anthropic
seen = {{}}
for name in {names!r}:
    package = importlib.import_module(name)
    seen[name] = [public(package), getattr(package, "__all__", None),
                  type(package).__name__, package.__file__]
print(json.dumps(seen))
"""
)


@functools.cache
def both() -> tuple[list[str], bool, dict[str, Any], dict[str, Any]]:
    touched, deferred, indexed = fresh_json(INDEXED.format(root=str(ROOT)))
    eager = fresh_json(EAGER.format(root=str(ROOT), names=sorted(indexed)))
    return touched, deferred, indexed, eager


def test_every_name_of_an_index_is_the_object_the_sdk_itself_binds() -> None:
    _, _, indexed, eager = both()
    assert len(indexed) > 50  # the types' and the resources' packages
    for name, (names, every, kind, path) in indexed.items():
        assert kind == ("DeferredModule" if name == "anthropic" else "IndexModule")
        bound = eager[name][0]
        differ = sorted(n for n in names.keys() | bound.keys() if names.get(n) != bound.get(n))
        assert not differ, (name, {n: (names.get(n), bound.get(n)) for n in differ[:5]})
        assert [every, path] == [eager[name][1], eager[name][3]], name


def test_the_packages_the_saving_rests_on_are_still_indexes() -> None:
    """A new SDK whose package `__init__` does more than re-export loads it whole again:
    this fails then (look at what the file does now before widening `index()`)."""
    touched, _, _, _ = both()
    assert set(MUST) <= set(touched)


def test_the_root_defers_the_cloud_clients_and_beta_helpers() -> None:
    """`import anthropic` and a client leave Foundry's client (and with it every beta
    resource) unloaded; a new SDK whose root file reads those names fails here."""
    _, deferred, indexed, _ = both()
    assert deferred
    names = indexed["anthropic"][0]
    assert names["AsyncAnthropicVertex"] == "type anthropic.lib.vertex._client.AsyncAnthropicVertex"
    assert names["beta_tool"].endswith(" anthropic.beta_tool")  # the root's __module__, as eager


def test_no_module_of_the_sdk_star_imports_from_an_index() -> None:
    """`from pkg import *` without `__all__` copies only what an index read so far."""
    for path in SDK.rglob("*.py"):
        package = ".".join(("anthropic", *path.relative_to(SDK).parent.parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                target = f"{base}.{node.module}" if node.level else str(node.module)
                assert not target.startswith(ROOTS), f"{path}: from {target} import *"


CALL = """
import asyncio, json, sys
sys.path.insert(0, {root!r})
from agents.model.providers import sdk_index
sdk_index.install()
import anthropic
async def main():
    client = anthropic.AsyncAnthropic(api_key="k", base_url={url!r}, max_retries=0)
    hi = [{{"role": "user", "content": "hi"}}]
    ask = dict(model="claude-sonnet-4-5", max_tokens=50, messages=hi)
    failed = None
    try:  # the fake refuses the first call
        await client.messages.create(**ask)
    except anthropic.RateLimitError as exc:
        failed = [type(exc).__name__, exc.status_code]
    async with client.messages.stream(**ask) as stream:
        said = (await stream.get_final_message()).content[0].text
    beta = sum(1 for m in sys.modules if m.startswith("anthropic.types.beta"))
    resources = sum(1 for m in sys.modules if m.startswith("anthropic.resources.beta"))
    print(json.dumps([said, failed, type(sys.modules["anthropic.types.beta"]).__name__, beta,
                      resources]))
asyncio.run(main())
"""


def test_a_streamed_answer_and_an_error_status_through_the_indexed_sdk() -> None:
    fake = FakeAnthropic(lambda call: [text("hello there")]).start()
    fake.fail(429)
    try:
        said, failed, kind, beta, resources = fresh_json(CALL.format(root=str(ROOT), url=fake.url))
    finally:
        fake.stop()
    assert said == "hello there"
    assert kind == "IndexModule"
    assert beta < 800  # 1,981 of the beta types' modules when the package ran whole
    assert resources == 0  # 135 with Foundry's client imported
    assert failed == ["RateLimitError", 429]  # the SDK's error classes as before
