"""Runs the tasks one after another, each in a world of its own (a fresh data dir, a
fresh App, a fresh local Slack), scores each by its checks and prints the table.

A run takes from the deployment's settings (config file and environment, as `switchboard
run` reads them) only what concerns the model: which model each role uses, how to reach
it (the providers' variables, which their SDKs also read themselves), its effort, output
limit, retries and prices (`MODEL_FIELDS`). The channels, the data dir, people, MCP
servers and everything else a task needs are the evaluation's own.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.evaluation.tasks import Task
from bot.evaluation.world import Unmet, World, world
from bot.ledger.status import table
from config.settings import Settings, load_settings

#: what a run takes from the environment: the model and how to reach and price it
KEPT = ("ANTHROPIC_", "OPENAI_", "AWS_", "GOOGLE_", "CLOUD_ML_", "VERTEX", "SWITCHBOARD_MODEL",
        "SWITCHBOARD_EFFORT", "SWITCHBOARD_MAX_TOKENS", "SWITCHBOARD_PRICES", "SWITCHBOARD_LLM_",
        "SWITCHBOARD_MAX_LLM_CALLS", "SSL_CERT")  # fmt: skip
#: the settings of the model, carried from the deployment's into every task's
MODEL_FIELDS = ("model", "model_workers", "model_background", "effort", "effort_workers",
                "effort_background", "max_tokens", "prices", "anthropic_api_key",
                "anthropic_base_url", "max_llm_calls", "llm_retry_base_seconds",
                "llm_retry_max_seconds")  # fmt: skip
#: the evaluation's own settings (answers read as whole posts; no dashboard)
FIXED = {"SWITCHBOARD_STREAMING": "off", "SLACK_PACE_SECONDS": "0", "SWITCHBOARD_TIMEZONE": "UTC",
         "SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS": "0.1"}  # fmt: skip


@dataclass
class Result:
    task: str
    passed: bool
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = 0.0
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)


def environment(environ: Mapping[str, str], model: str | None) -> dict[str, str]:
    """The model's variables from `environ`; `model` (--model) stands for every role."""
    kept = {k: v for k, v in environ.items() if k.startswith(KEPT)}
    if model:
        kept = {k: v for k, v in kept.items() if not k.startswith("SWITCHBOARD_MODEL")}
        kept["SWITCHBOARD_MODEL"] = model
    return {**kept, **FIXED}


def model_settings(deployed: Settings, measured: Settings, model: str | None) -> dict[str, Any]:
    """What each task's settings take from the deployment's (`deployed`); with --model,
    the model `measured` names, for every role."""
    fields = {name: getattr(deployed, name) for name in MODEL_FIELDS}
    if model:
        fields.update(model=measured.model, model_workers=None, model_background=None)
    return fields


async def run_task(task: Task, env: Mapping[str, str], model: dict[str, Any], root: Path) -> Result:
    data = root / task.name
    config = _config(task, data)
    started = time.monotonic()
    result = Result(task.name, False)
    try:
        settings = load_settings(config, {**env, **task.env, "SWITCHBOARD_DATA_DIR": str(data)})
        settings = settings.model_copy(update=model)
        async with world(settings, task.pages, task.seconds) as w:
            await _play(task, w, result)
            _measure(w, result)
    except Exception as exc:  # one task's crash is its failure, not the run's
        result.failed.append(f"crashed: {type(exc).__name__}: {exc}")
    result.seconds = time.monotonic() - started
    result.passed = not result.failed
    return result


async def _play(task: Task, w: World, result: Result) -> None:
    try:
        for step in task.steps:
            await step(w)
    except Unmet as exc:
        result.failed.append(str(exc))
    result.failed += [check.label for check in task.checks if not check.test(w)]


def _measure(w: World, result: Result) -> None:
    usage = w.usage()
    result.turns, result.tokens_in, result.tokens_out = (
        usage.calls,
        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        usage.output_tokens,
    )
    result.cost = None if usage.unpriced else usage.cost_usd


def _config(task: Task, data: Path) -> Path | None:
    if not task.config:
        return None
    data.mkdir(parents=True, exist_ok=True)
    path = data.parent / f"{task.name}.toml"
    path.write_text(task.config.format(python=sys.executable, data=data))
    return path


async def run_all(
    tasks: list[Task], env: Mapping[str, str], model: dict[str, Any], root: Path
) -> list[Result]:
    """Each task in turn; a line on stderr as each ends (a real model takes minutes)."""
    results = []
    for task in tasks:
        result = await run_task(task, env, model, root)
        verdict = "pass" if result.passed else "FAIL"
        print(f"{task.name}: {verdict} ({result.seconds:.1f}s)", file=sys.stderr, flush=True)
        results.append(result)
    return results


def run(
    tasks: list[Task], env: Mapping[str, str], model: dict[str, Any], keep: Path | None = None
) -> list[Result]:
    """The tasks' data dirs are temporary, or kept under `keep` (--data-dir) in a new
    folder per run, to read what happened (events.jsonl, transcripts) afterwards."""
    if keep is not None:
        root = keep / time.strftime("eval-%Y%m%d-%H%M%S")
        print(f"switchboard eval: the tasks' data is kept in {root}", file=sys.stderr)
        return asyncio.run(run_all(tasks, env, model, root))
    with tempfile.TemporaryDirectory(prefix="switchboard-eval-") as temp:
        return asyncio.run(run_all(tasks, env, model, Path(temp)))


HEADERS = ["task", "result", "turns", "tokens in", "tokens out", "cost", "time"]


def report(results: list[Result], model: str) -> str:
    """The table, each failed check under it, and the pass rate."""
    rows = [
        [r.task, "pass" if r.passed else "FAIL", r.turns, r.tokens_in, r.tokens_out,
         "unknown" if r.cost is None else f"${r.cost:.4f}", f"{r.seconds:.1f}s"]
        for r in results
    ]  # fmt: skip
    lines = [f"switchboard eval: {model}", "", table(HEADERS, rows), ""]
    for r in results:
        lines += [f"{r.task}: {why}" for why in r.failed]
    passed = sum(r.passed for r in results)
    rate = 100.0 * passed / len(results) if results else 0.0
    lines += [f"passed {passed}/{len(results)} ({rate:.0f}%)"]
    return "\n".join(lines)
