"""`switchboard eval` against each provider's fake, through the CLI as a person runs it:
an OpenAI-compatible Chat Completions server (its API is the one the runtime translates
to and from), Claude on Bedrock (SigV4-signed, AWS event stream framing) and Claude on
Vertex (Google's credentials), all ten tasks each; the Anthropic fake's own run is
tests/eval/test_eval.py. The scripted good model (tests/eval/models.py) must pass every
task on every provider, and nothing may reach Anthropic's own endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from bot.cli import main
from bot.evaluation.tasks import TASKS
from tests.eval.chat import ChatModel
from tests.eval.models import GoodModel
from tests.eval.test_eval import COLUMNS, rows
from tests.fakes.bedrock_api import FakeBedrock
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.vertex_api import FakeVertex

ALL = [t.name for t in TASKS]
UNSET = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "SWITCHBOARD_MODEL", "AWS_PROFILE",
         "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")  # fmt: skip
BEDROCK_MODEL = "bedrock:us.anthropic.claude-sonnet-5-v1:0"


@pytest.fixture(autouse=True)
def no_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the provider under test is configured (no key for Anthropic's own API)."""
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRY_BASE_SECONDS", "0.05")
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRY_MAX_SECONDS", "0.2")


def set_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def passed_all(out: str, wanted: list[str], model: str) -> dict[str, list[str]]:
    """The printed table: the header, a passing row per task, the pass rate."""
    assert out.splitlines()[0] == f"switchboard eval: {model}"
    header = next(line for line in out.splitlines() if line.startswith("task"))
    assert [cell.strip() for cell in header.split("  ") if cell.strip()] == COLUMNS
    table = rows(out)
    assert list(table) == wanted
    assert {name for name, cells in table.items() if cells[1] != "pass"} == set(), out
    for cells in table.values():
        turns, tokens_in, tokens_out = (int(x) for x in cells[2:5])
        assert turns >= 1 and tokens_in > 0 and tokens_out > 0, cells
    assert f"passed {len(wanted)}/{len(wanted)} (100%)" in out
    return table


def test_every_task_on_an_openai_compatible_server(
    openai_fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_env(monkeypatch, {**openai_fake.env(), "SWITCHBOARD_MODEL": "openai:gpt-test"})
    openai_fake.responder = ChatModel(GoodModel())
    code = main(["eval"])
    out = capsys.readouterr().out
    table = passed_all(out, [t.name for t in TASKS], "openai:gpt-test")
    assert {cells[5] for cells in table.values()} == {"unknown"}  # no price known for it
    assert code == 0
    assert {call.body["model"] for call in openai_fake.calls} == {"gpt-test"}


Fake = TypeVar("Fake", FakeBedrock, FakeVertex)


def serving(
    monkeypatch: pytest.MonkeyPatch, server: Fake, env: Callable[[Fake], dict[str, str]]
) -> Iterator[Fake]:
    """A Claude provider's fake, running and named by the environment; afterwards it
    must have seen no request the real service refuses."""
    with server:
        set_env(monkeypatch, env(server))
        yield server
    assert not server.violations, server.violations


def every_task(
    server: FakeBedrock | FakeVertex, capsys: pytest.CaptureFixture[str], model: str, *args: str
) -> None:
    """The good model passes every task on `server`, priced as Claude."""
    server.responder = GoodModel()
    assert main(["eval", *args]) == 0
    table = passed_all(capsys.readouterr().out, ALL, model)
    assert all(cells[5].startswith("$") for cells in table.values())


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBedrock]:
    yield from serving(
        monkeypatch, FakeBedrock(), lambda s: {**s.aws_credentials(), **s.bedrock_env()}
    )


def test_every_task_on_bedrock(bedrock: FakeBedrock, capsys: pytest.CaptureFixture[str]) -> None:
    every_task(bedrock, capsys, BEDROCK_MODEL, "--model", BEDROCK_MODEL)
    assert bedrock.refused == [] and len(bedrock.calls) >= len(ALL)
    assert set(bedrock.models_asked) == {"us.anthropic.claude-sonnet-5-v1:0"}


@pytest.fixture
def vertex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVertex]:
    yield from serving(monkeypatch, FakeVertex(), lambda s: s.vertex_env(tmp_path))


def test_every_task_on_vertex(
    vertex: FakeVertex, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_env(monkeypatch, {"SWITCHBOARD_MODEL": "vertex:claude-sonnet-5"})
    every_task(vertex, capsys, "vertex:claude-sonnet-5")
    assert "401" not in vertex.refused and len(vertex.calls) >= len(ALL)
    assert all(path.endswith(":streamRawPredict") for path in vertex.paths)
