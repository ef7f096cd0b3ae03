"""`switchboard eval` end to end: the real App on the evaluation's local Slack, the real
anthropic SDK against the fake Anthropic API playing a scripted model
(tests/eval/models.py), run through the CLI as a person runs it.

A model that does each task right passes every task; one that does some wrong fails
exactly those; `--tasks`, `--list` and `--model` do what they say; the table has its
columns and the exit status tells CI whether all passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.evaluation.tasks import TASKS
from tests.eval.models import BAD_FAILS, BadModel, GoodModel
from tests.fakes.anthropic_api import FakeAnthropic, Reply

COLUMNS = ["task", "result", "turns", "tokens in", "tokens out", "cost", "time"]


@pytest.fixture(autouse=True)
def model_env(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic) -> None:
    """The run's settings from the environment, as `switchboard eval` reads them."""
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRY_BASE_SECONDS", "0.05")
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRY_MAX_SECONDS", "0.2")
    monkeypatch.delenv("SWITCHBOARD_MODEL", raising=False)


def rows(out: str) -> dict[str, list[str]]:
    """The table's rows by task: the cells, split on runs of two spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("task"))
    body = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        body.append([cell.strip() for cell in line.split("  ") if cell.strip()])
    return {cells[0]: cells for cells in body}


def test_a_good_model_passes_every_task(
    fake: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.responder = GoodModel()
    code = main(["eval"])
    out = capsys.readouterr().out
    table = rows(out)
    header = next(line for line in out.splitlines() if line.startswith("task"))
    assert [cell.strip() for cell in header.split("  ") if cell.strip()] == COLUMNS
    assert list(table) == [t.name for t in TASKS] and len(TASKS) >= 10
    failed = {name: cells for name, cells in table.items() if cells[1] != "pass"}
    assert not failed, out
    for cells in table.values():
        turns, tokens_in, tokens_out = (int(x) for x in cells[2:5])
        assert turns >= 1 and tokens_in > 0 and tokens_out > 0
        assert cells[5].startswith("$") and cells[6].endswith("s")
    assert f"passed {len(TASKS)}/{len(TASKS)} (100%)" in out
    assert code == 0


def test_a_bad_model_fails_the_tasks_it_gets_wrong(
    fake: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.responder = BadModel()
    wanted = ["answer", *sorted(BAD_FAILS), "worker"]
    code = main(["eval", "--tasks", ",".join(wanted)])
    out = capsys.readouterr().out
    table = rows(out)
    assert list(table) == wanted  # only the tasks named, in that order
    assert {name for name, cells in table.items() if cells[1] == "FAIL"} == BAD_FAILS, out
    assert "injection: nothing posted says '7731'" in out  # it obeyed the page
    assert "language: every answer is in es" in out  # it answered in English
    assert "summary: 0 post(s) in C0OPS after second" in out  # it spoke with nothing new
    assert f"passed 2/{len(wanted)}" in out
    assert code == 1


def test_model_option_measures_that_model_and_data_dir_keeps_the_runs_data(
    fake: FakeAnthropic, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.responder = GoodModel()
    args = ["eval", "--tasks", "answer", "--model", "anthropic:claude-opus-5"]
    assert main([*args, "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert {call.body["model"] for call in fake.calls} == {"claude-opus-5"}
    assert out.splitlines()[0].endswith("claude-opus-5")
    (kept,) = tmp_path.glob("eval-*/answer/events.jsonl")
    assert '"tool.called"' not in kept.read_text() and '"message.sent"' in kept.read_text()


def test_list_names_every_task_without_a_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert main(["eval", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [t.name for t in TASKS]


def test_an_unknown_task_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--tasks", "answer,juggle"]) == 2
    err = capsys.readouterr().err.strip()
    assert "juggle" in err and "answer" in err and len(err.splitlines()) == 1


def test_no_model_endpoint_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert main(["eval", "--tasks", "answer"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_the_deployments_model_and_prices_count_and_nothing_else(
    fake: FakeAnthropic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The config file's model and prices are the run's; its channels and MCP servers are
    not (a Discord token in the environment starts no Discord)."""
    config = tmp_path / "switchboard.toml"
    config.write_text(
        'model = "claude-opus-5"\n'
        '[prices."claude-opus-5"]\ninput = 1000.0\noutput = 1000.0\n'
        '[[mcp_servers]]\nname = "gone"\ncommand = "/nonexistent"\n'
    )
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "not-a-token")
    fake.responder = GoodModel()
    assert main(["eval", "--config", str(config), "--tasks", "answer"]) == 0
    cells = rows(capsys.readouterr().out)["answer"]
    assert {call.body["model"] for call in fake.calls} == {"claude-opus-5"}
    tokens = int(cells[3]) + int(cells[4])
    assert cells[5] == f"${tokens * 1000.0 / 1_000_000:.4f}"


def test_a_model_without_a_price_costs_unknown(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.models["llama-local"] = fake.models["claude-sonnet-5"]  # a local server's model
    fake.thinks = False
    fake.responder = GoodModel()
    assert main(["eval", "--tasks", "language", "--model", "llama-local"]) == 0
    assert rows(capsys.readouterr().out)["language"][5] == "unknown"


def test_the_command_ships_in_the_product(fake: FakeAnthropic, tmp_path: Path) -> None:
    """`python -m bot eval` in a directory where `tests` cannot be imported (the package
    as installed): the harness and its local Slack need nothing of the test suite; the
    table on stdout, a line per task on stderr as it ends."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "PYTHON"))}
    env.update(fake.env())
    fake.responder = GoodModel()
    done = subprocess.run(
        [sys.executable, "-m", "bot", "eval", "--tasks", "answer,language"],
        cwd=tmp_path, env=env, text=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(rows(done.stdout)) == ["answer", "language"]
    assert "answer: pass" in done.stderr and "language: pass" in done.stderr


def test_a_silent_model_fails_at_once_not_at_the_time_limit(
    fake: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that never answers: the step gives up once the agents are idle."""
    fake.responder = lambda call: Reply([])
    assert main(["eval", "--tasks", "answer"]) == 1
    out = capsys.readouterr().out
    assert rows(out)["answer"][1] == "FAIL"
    assert "answer: an answer in the thread never came" in out
