"""The command line as people type it: scripted chats from a pipe, a file or /dev/null,
global options after the subcommand, a bad home target."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.fakes.anthropic_api import FakeAnthropic, text
from tests.kits.proc import Switchboard, run_command
from tests.kits.script import TeamScript


def test_piped_chat_answers_every_line_then_exits(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = lambda call: [text("answer to " + call.last_text.splitlines()[-1])]
    done = run_command(
        ["chat", "--data-dir", str(tmp_path / "data")],
        fake.env(),
        tmp_path,
        input="first question\nsecond question\n",
    )
    assert done.returncode == 0, done.stderr
    answers = [line for line in done.stdout.splitlines() if line.startswith("[coordinator]")]
    assert len(answers) == 2
    assert answers[0].endswith("first question") and answers[1].endswith("second question")
    # each line was its own turn: the second request already holds the first answer
    assert len(fake.calls) == 2 and "answer to" in fake.calls[1].all_text
    # the HTTP client's line per request (per model call) is not in the log
    log = (tmp_path / "data/switchboard.log").read_text()
    assert "Scheduler started" in log and "HTTP Request" not in log


def test_a_script_from_a_file_answers_a_parked_worker(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = TeamScript()
    script = tmp_path / "lines.txt"
    script.write_text("please research GPUs\nData center only\n")
    with script.open() as stdin:
        done = run_command(
            ["--data-dir", str(tmp_path / "data"), "chat"], fake.env(), tmp_path, stdin=stdin
        )
    assert done.returncode == 0, done.stderr
    assert "[Alice asks] Data center or consumer GPUs?" in done.stdout
    assert "Report based on: Data center only" in done.stdout


def test_a_script_that_leaves_a_question_open_says_so(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.responder = TeamScript()
    done = run_command(
        ["chat", "--data-dir", str(tmp_path / "data")],
        fake.env(),
        tmp_path,
        input="please research GPUs\n",
    )
    assert done.returncode == 0, done.stderr
    assert "Alice is still waiting for an answer" in done.stdout
    assert "Data center or consumer GPUs?" in done.stdout.split("still waiting")[1]


def test_chat_from_dev_null_ends_at_once(tmp_path: Path, fake: FakeAnthropic) -> None:
    done = run_command(
        ["chat"],
        {**fake.env(), "SWITCHBOARD_DATA_DIR": str(tmp_path / "d")},
        tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "you are talking to the coordinator" in done.stdout
    assert fake.calls == []


def test_global_options_after_the_subcommand(tmp_path: Path, fake: FakeAnthropic) -> None:
    data = tmp_path / "var"
    run_command(["chat", "--data-dir", str(data)], fake.env(), tmp_path, input="hello\n")
    config = tmp_path / "sb.toml"
    config.write_text(f'data_dir = "{tmp_path / "elsewhere"}"\n')
    after = run_command(["status", "--data-dir", str(data)], {}, tmp_path)
    before = run_command(["--data-dir", str(data), "status"], {}, tmp_path)
    assert after.returncode == 0 and "coordinator  coordinator" in after.stdout
    assert "coordinator  coordinator" in before.stdout
    assert "terminal  stopped" in after.stdout and "terminal  stopped" in before.stdout
    # --config after the subcommand is read too, and --data-dir still wins over it
    both = run_command(["status", "--config", str(config), "--data-dir", str(data)], {}, tmp_path)
    assert "coordinator  coordinator" in both.stdout
    only_config = run_command(["status", "--config", str(config)], {}, tmp_path)
    assert "No Switchboard data in" in only_config.stdout and "elsewhere" in only_config.stdout


def test_a_bad_home_target_is_one_settings_line(tmp_path: Path, fake: FakeAnthropic) -> None:
    env = {**fake.env(), "SWITCHBOARD_HOME": "email:foo"}
    done = run_command(
        ["chat", "--data-dir", str(tmp_path)], env, tmp_path, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("switchboard: SWITCHBOARD_HOME:")
    assert "email:foo" in lines[0] and "Traceback" not in done.stderr


def test_work_held_by_the_budget_resumes_when_it_is_raised(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text("answer to " + call.last_text.splitlines()[-1])]
    env = {**fake.env(), "SWITCHBOARD_MODEL": "claude-sonnet-5", "SWITCHBOARD_HOME": "terminal"}
    data = ["--data-dir", str(tmp_path / "data")]
    tight = {**env, "SWITCHBOARD_DAILY_BUDGET_USD": "0.000001"}
    held = run_command(["chat", *data], tight, tmp_path, input="first question\nsecond question\n")
    assert held.returncode == 0, held.stderr
    assert "answer to" in held.stdout and "first question" in held.stdout
    assert "daily LLM budget of $0.00 (SWITCHBOARD_DAILY_BUDGET_USD) is spent" in held.stdout
    assert "1 model call(s) wait for the daily budget" in held.stdout
    assert len(fake.calls) == 1
    status = run_command(["status", *data], {}, tmp_path)
    assert "EXCEEDED: new model work waits until" in status.stdout
    raised = run_command(
        ["chat", *data], {**env, "SWITCHBOARD_DAILY_BUDGET_USD": "50"}, tmp_path,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert raised.returncode == 0, raised.stderr
    assert "second question" in raised.stdout.split("[coordinator]", 1)[1]
    assert len(fake.calls) == 2
    assert "EXCEEDED" not in run_command(["status", *data], {}, tmp_path).stdout


def test_a_budget_raised_in_the_config_and_reloaded_lets_work_go_on(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.responder = lambda call: [text("answer to " + call.last_text.splitlines()[-1])]
    config = tmp_path / "sb.toml"
    config.write_text('[switchboard]\nmodel = "claude-sonnet-5"\ndaily_budget_usd = 0.000001\n')
    env = {**fake.env(), "SWITCHBOARD_CONFIG": str(config), "SWITCHBOARD_HOME": "terminal"}
    sb = Switchboard(["chat", "--data-dir", str(tmp_path / "data")], env, tmp_path)
    try:
        sb.send("first question")
        sb.expect("answer to [")
        sb.send("second question")
        sb.expect("daily LLM budget of $0.00")
        assert len(fake.calls) == 1
        config.write_text('[switchboard]\nmodel = "claude-sonnet-5"\ndaily_budget_usd = 5\n')
        sb.proc.send_signal(signal.SIGHUP)
        assert sb.expect("]: second question", timeout=30).startswith("[coordinator] answer to")
        assert len(fake.calls) == 2
    finally:
        assert sb.quit() == 0
