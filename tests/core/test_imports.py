"""What a start imports (issue 22): only what the settings configure.

Each case runs in a fresh interpreter, as `switchboard run` does, and reads
`sys.modules`: the MCP SDK only with `[[mcp_servers]]`, a channel's SDK only when that
channel is enabled, SQLAlchemy never (the job store is on sqlite3), and the Anthropic
SDK neither at import nor at build, but in a thread once the app starts.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from bot.core.lazy import STARTING_THRESHOLD
from tests.kits.proc import fresh_json

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["anthropic", "mcp", "sqlalchemy", "slack_bolt", "slack_sdk", "discord", "aioimaplib"]
# memory search by meaning: its model and libraries load at the first search that needs them
HEAVY += ["wordllama", "numpy", "tokenizers", "safetensors"]
#: loaded after the start (issue 33, lean at rest): jsonschema at the first tool call,
#: httpx2 (web_fetch) with the model's SDK, Slack's markdown converter once it connected,
#: html2text at the first page or mail converted
AFTER = ["jsonschema", "httpx2", "slackify_markdown", "markdown_it", "html2text"]

PROBE = """
import asyncio, gc, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, {root!r})
HEAVY = {heavy!r}
seen = {{"usual": gc.get_threshold()[0]}}
def note(stage):
    seen[stage] = sorted(m for m in HEAVY if m in sys.modules)
    seen[stage + " threshold"] = gc.get_threshold()[0]
from bot.core import lazy
starting = lazy.starting()
starting.__enter__()  # as `switchboard run` does, until the app led
import bot.app
note("import")
from bot.app import App
from config.settings import load_settings  # not tests.kits: the fakes load jsonschema
async def main():
    env = {{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "x",
            "SWITCHBOARD_DATA_DIR": data.name}}
    app = App(load_settings(None, env), [])
    app.build()
    note("build")
    await app.start()
    note("start")
    await app.llm.warm()
    await next(t for t in app._tasks if t.get_name() == "warm-model")  # the app's own
    note("warm")
    seen["sdk"] = [type(sys.modules["anthropic.types.beta"]).__name__,
                   sum(1 for m in sys.modules if m.startswith("anthropic."))]
    await app.stop()
data = tempfile.TemporaryDirectory()
asyncio.run(main())
data.cleanup()
print(json.dumps(seen))
"""


@functools.cache
def stages() -> dict[str, Any]:
    return dict(fresh_json(PROBE.format(root=str(ROOT), heavy=HEAVY + AFTER)))


def test_a_start_without_mcp_servers_or_chat_channels_loads_no_sdk_it_does_not_use() -> None:
    seen = stages()
    assert seen["import"] == []
    assert seen["build"] == []  # the model client is made at its first use
    assert seen["start"] == []  # the scheduler's job store is on the standard sqlite3
    assert seen["warm"] == ["anthropic", "httpx2"]  # web_fetch's client is the SDK's


def test_the_model_sdk_loads_without_the_apis_a_messages_call_does_not_use() -> None:
    """Its package indexes read name by name and its root's cloud clients deferred
    (agents/model/providers/sdk_index.py): the SDK whole is ~3,150 modules, ~41 MB;
    without the beta and organization APIs' types and resources nobody reads, ~2,270,
    ~34 MB; without Foundry's client (every beta resource) and the other clouds', ~1,030,
    ~16 MB."""
    kind, modules = stages()["sdk"]
    assert kind == "IndexModule"
    assert modules < 1_400


def test_a_start_collects_less_until_its_preload_is_done_then_as_usual() -> None:
    seen = stages()
    assert seen["import threshold"] == seen["build threshold"] == STARTING_THRESHOLD
    assert seen["start threshold"] == STARTING_THRESHOLD  # the SDK's preload under way
    assert seen["warm threshold"] == seen["usual"] < STARTING_THRESHOLD


SLACK_PROBE = """
import json, sys
sys.path.insert(0, {root!r})
import bot.app, channels.slack
before = sorted(m for m in {after!r} if m in sys.modules)
from channels.slack.format import to_mrkdwn
converted = to_mrkdwn("**bold** <b>")
print(json.dumps([before, converted, "slackify_markdown" in sys.modules]))
"""


def test_slack_loads_its_markdown_converter_after_the_connection_not_at_start() -> None:
    before, converted, loaded = fresh_json(SLACK_PROBE.format(root=str(ROOT), after=AFTER))
    assert before == []
    assert converted == "*bold* &lt;b&gt;"  # the lazy module converts as the eager one did
    assert loaded


def test_a_slack_start_preloads_the_converter_with_the_model_sdk() -> None:
    import channels.slack

    assert "slackify_markdown" in channels.slack.WARM


HTML_PROBE = """
import json, sys
sys.path.insert(0, {root!r})
import bot.app, channels.slack
before = "html2text" in sys.modules
from bot.core.html_text import html_to_text
converted = html_to_text("<p>Hello <b>there</b></p>")
print(json.dumps([before, converted, "html2text" in sys.modules]))
"""


def test_html2text_loads_at_the_first_page_or_mail_converted_not_at_start() -> None:
    before, converted, loaded = fresh_json(HTML_PROBE.format(root=str(ROOT)))
    assert not before
    assert converted.strip() == "Hello **there**"
    assert loaded


def test_the_slack_app_is_named_so_bolt_reads_no_stack_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unnamed, bolt's AsyncApp names itself with inspect.stack(), which reads the source
    file of every frame: ~60 ms of a start before Slack connected."""
    import inspect

    from slack_sdk.web.async_client import AsyncWebClient

    from channels.slack.connection import build_app

    def no_stack(*args: object) -> None:
        raise AssertionError("inspect.stack() at start")

    monkeypatch.setattr(inspect, "stack", no_stack)
    app = build_app(AsyncWebClient(token="xoxb-test"), lambda *a: None, None, lambda: None)
    assert app.name == "channels.slack.bolt.app"  # its loggers sit under bolt's own
