"""Benchmark: the fixed prefix (system prompt + tools) the coordinator and a worker send.

    .venv/bin/python tests/bench/bench_prefix.py [--json]

The real `App` runs against the fake Anthropic API with an empty data dir (empty
memory, no MCP server). A person asks; the coordinator calls `spawn_worker`; the
worker publishes. The first request of each role is taken as the API receives it, and
its prefix is measured: the system blocks' text, and the `tools` array as JSON (what
the request carries, `cache_control` left out). Target: under 4,000 tokens per role.

Tokens, two ways, because nothing offline knows Claude 5's tokenizer:
- `est`: characters / 3.5, the estimate for claude-sonnet-5, whose tokenizer gives
  about 30% more tokens than its predecessors' for the same text (chars / 4 and +30%
  roughly meet at chars / 3.5).
- `legacy`: PyPI `anthropic-tokenizer` (0.1.0, a Rust build of Anthropic's published
  65,000-entry pre-Claude-3 BPE vocabulary; its local count never touches the network),
  when importable: a lower bound for today's models. It is not a project dependency;
  install it in a scratch venv and put its site-packages on PYTHONPATH, e.g.
  `PYTHONPATH=/work/scratch/tok/lib/python3.11/site-packages`. Absent, it prints n/a.
Neither counts the API's own tool-use preamble; the free `count_tokens` endpoint with a
key gives the exact figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from config.settings import Settings
from tests.fakes.anthropic_api import Call, FakeAnthropic, text, tool
from tests.kits.app_kit import Recorder, eventually, inbound, make_settings, running_app

CHARS_PER_TOKEN = 3.5
TARGET_TOKENS = 4000

try:
    from anthropic_tokenizer import count_tokens as legacy_count
except ImportError:  # optional: see the docstring
    legacy_count = None


def responder(call: Call) -> list[dict[str, Any]]:
    if call.agent != "coordinator":
        return [tool("publish", result="the build is green")]
    if call.tool_results():
        return [text("Helper is on it.")]
    return [tool("spawn_worker", name="Helper", task="check the build")]


async def first_requests(fake: FakeAnthropic, settings: Settings) -> dict[str, dict[str, Any]]:
    """The first request body of the coordinator and of the worker (`responder` answers)."""
    fake.responder = responder
    async with running_app(settings, [Recorder()]) as app:
        app.human.accept(inbound("please check the build"))
        await eventually(lambda: any(c.agent != "coordinator" for c in fake.calls), 30)
    first: dict[str, dict[str, Any]] = {}
    for call in fake.calls:
        first.setdefault("coordinator" if call.agent == "coordinator" else "worker", call.body)
    return first


async def capture() -> dict[str, dict[str, Any]]:
    fake = FakeAnthropic().start()
    try:
        return await first_requests(fake, make_settings(Path(tempfile.mkdtemp()), fake))
    finally:
        fake.stop()


def measure(body: dict[str, Any]) -> dict[str, Any]:
    system = "".join(b["text"] for b in body["system"])
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in body["tools"]]
    tools_json = json.dumps(tools, ensure_ascii=False)
    chars = len(system) + len(tools_json)
    legacy = legacy_count(system) + legacy_count(tools_json) if legacy_count else None
    return {
        "tools": len(tools),
        "system_chars": len(system),
        "tools_chars": len(tools_json),
        "est_tokens": round(chars / CHARS_PER_TOKEN),
        "legacy_tokens": legacy,
        "largest": sorted(
            ((len(json.dumps(t, ensure_ascii=False)), t["name"]) for t in tools), reverse=True
        )[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = {role: measure(body) for role, body in asyncio.run(capture()).items()}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{'':12} {'tools':>5} {'system ch':>10} {'tools ch':>9} {'est tok':>8} {'legacy':>7}")
    for role, f in figures.items():
        legacy = "n/a" if f["legacy_tokens"] is None else f"{f['legacy_tokens']:,}"
        print(
            f"{role:12} {f['tools']:>5} {f['system_chars']:>10,} {f['tools_chars']:>9,} "
            f"{f['est_tokens']:>8,} {legacy:>7}"
        )
    for role, f in figures.items():
        biggest = ", ".join(f"{name} {size:,} ch" for size, name in f["largest"])
        verdict = "ok" if f["est_tokens"] < TARGET_TOKENS else "OVER"
        print(f"{role}: largest tools {biggest}; target < {TARGET_TOKENS:,} est tokens: {verdict}")


if __name__ == "__main__":
    main()
