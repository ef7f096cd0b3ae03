"""The `eval` subcommand: its options, and the run (the runtime imported only then).

Exit status: 0 when every task passed, 1 when one failed (a CI job fails with it),
2 for a bad option or setting.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from config.settings import Settings, load_settings, require_llm

USAGE_TASKS = "a comma list of task names (default: all; --list shows them)"


def add_eval(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add `eval` to the CLI's subcommands."""
    p = sub.add_parser("eval", parents=parents, help="run the scripted team tasks, print a table")
    p.add_argument("--model", help="provider:model to measure (default: SWITCHBOARD_MODEL)")
    p.add_argument("--tasks", help=USAGE_TASKS)
    p.add_argument("--list", action="store_true", help="list the tasks and exit")


def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    """Run the tasks with the model of `settings` (or --model); nothing else of the
    deployment (channels, people, MCP servers) reaches the tasks."""
    from bot.evaluation import runner
    from bot.evaluation.tasks import TASKS, named

    if args.list:
        width = max(len(t.name) for t in TASKS)
        print("\n".join(f"{t.name.ljust(width)}  {t.about}" for t in TASKS))
        return 0
    wanted = [n.strip() for n in (args.tasks or "").split(",") if n.strip()]
    try:
        tasks = named(wanted)
    except KeyError as exc:
        known = ", ".join(t.name for t in TASKS)
        print(f"switchboard eval: --tasks: no task {exc} (known: {known})", file=sys.stderr)
        return 2
    env = runner.environment(os.environ, args.model)
    measured = load_settings(None, env)  # the model --model names, as settings read it
    model = runner.model_settings(settings, measured, args.model)
    require_llm(settings.model_copy(update=model))
    results = runner.run(tasks, env, model, args.data_dir)
    print(runner.report(results, model["model"]))
    return 0 if all(r.passed for r in results) else 1
