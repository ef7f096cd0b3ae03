"""Per provider adapter: the latency a model call adds, and start time and idle memory
with the provider configured.

    .venv/bin/python tests/bench/bench_providers.py [--calls N]

1. A call through the runtime's `Provider` against each fake (the fake Anthropic, the
   fake Chat Completions server, the fake Bedrock and Vertex; all in this process, each
   answering one short text streamed, no thinking): p50/p99 per call, side by side,
   and what each adds to the Anthropic path (target: <= 1 ms).
   The fakes differ, so the figure that speaks for the adapter alone is 2.
2. The `openai:` adapter's own work per call, without the network: a 20-message
   history with tools translated to Chat Completions, and a streamed answer of 40
   chunks gathered back into blocks; p50/p99.
   Beside it, `anthropic_form` (agents/model/providers/anthropic_wire.py), which every
   call to an Anthropic-API model now passes: a usual history, and one an `openai:`
   model wrote (ids and arguments to translate).
3. Start and idle memory: a process that builds the app and warms the model's SDK,
   with an Anthropic, `openai:`, `bedrock:` and `vertex:` model (each SDK loads only
   when configured): seconds to ready, VmRSS, and which other SDKs were loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE))

from agents.model.llm import Provider  # noqa: E402
from agents.model.providers import Connector, Endpoints  # noqa: E402
from agents.model.providers.anthropic_wire import anthropic_form  # noqa: E402
from agents.model.providers.openai_wire import Gathered, chat_request  # noqa: E402
from tests.fakes.anthropic_api import FakeAnthropic, text  # noqa: E402
from tests.fakes.bedrock_api import REGION, FakeBedrock  # noqa: E402
from tests.fakes.openai_api import Answer, FakeOpenAI  # noqa: E402
from tests.fakes.vertex_api import FakeVertex  # noqa: E402

ASKED = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
TOOLS = [
    {"name": f"tool{i}", "description": "d", "input_schema": {"type": "object"}} for i in range(12)
]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def timed(llm: Provider, n: int) -> list[float]:
    await llm.complete("s", TOOLS, ASKED)  # the SDK imported, the connection open
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await llm.complete("s", TOOLS, ASKED)
        out.append((time.perf_counter() - t) * 1000)
    await llm.close()
    return out


async def calls(n: int) -> None:
    ok = [text("ok, noted")]
    with (
        FakeAnthropic(lambda call: ok) as fa,
        FakeOpenAI(lambda call: Answer("ok, noted")) as fo,
        FakeBedrock() as fb,
        FakeVertex() as fv,
        tempfile.TemporaryDirectory() as keys,
    ):
        for fake in (fa, fb, fv):
            fake.responder, fake.thinks = (lambda call: ok), False
        os.environ.update(fb.aws_credentials())
        os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = str(fv.adc_file(Path(keys)))
        sonnet = "claude-sonnet-4-5"  # no thinking on any path: the adapters alone
        providers = {
            "anthropic (fake Anthropic)": (Endpoints("k", fa.url), sonnet),
            "openai: (fake Chat Completions)": (
                Endpoints(openai_key="k", openai_base_url=fo.url), "openai:m"),
            "bedrock: (fake Bedrock)": (
                Endpoints(bedrock_region=REGION, bedrock_base_url=fb.url),
                f"bedrock:anthropic.{sonnet}-v1:0"),
            "vertex: (fake Vertex)": (
                Endpoints(vertex_region="us-east5", vertex_project="proj-1",
                          vertex_base_url=f"{fv.url}/v1"), f"vertex:{sonnet}"),
        }  # fmt: skip
        print(f"1. call through Provider, {n} calls (ms):   p50     p99   added p50/p99")
        base: tuple[float, float] | None = None
        for name, (endpoints, model) in providers.items():
            times = await timed(Provider(Connector(endpoints), model, 1024, 2), n)
            p50, p99 = pct(times, 0.5), pct(times, 0.99)
            base = base or (p50, p99)
            print(
                f"   {name:<33} {p50:7.2f} {p99:7.2f}   {p50 - base[0]:+.2f} / {p99 - base[1]:+.2f}"
            )


def history() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(10):
        out.append({"role": "user", "content": [{"type": "text", "text": f"question {i} " * 20}]})
        out.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "x" * 200, "signature": "s"},
            {"type": "text", "text": "answer " * 30},
        ]})  # fmt: skip
    out.append(ASKED[0])
    return out


def chunks() -> list[Any]:
    def chunk(content: str | None, finish: str | None) -> Any:
        delta = SimpleNamespace(content=content, refusal=None, tool_calls=None)
        return SimpleNamespace(
            usage=None, choices=[SimpleNamespace(index=0, delta=delta, finish_reason=finish)]
        )

    return [chunk("word ", None) for _ in range(39)] + [chunk(None, "stop")]


def adapter(n: int) -> None:
    request = {"system": [{"type": "text", "text": "s" * 4000}], "messages": history(),
               "tools": TOOLS, "max_tokens": 1024}  # fmt: skip
    stream = chunks()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        chat_request(request, "m")
        gathered = Gathered()
        for c in stream:
            gathered.add(c)
        gathered.response()
        times.append((time.perf_counter() - t) * 1000)
    print(f"2. openai: adapter's own work per call (ms): p50 {pct(times, .5):.3f}"
          f"  p99 {pct(times, .99):.3f}")  # fmt: skip
    own = {"usual": request, "after an openai: model": {**request, "messages": foreign()}}
    for name, body in own.items():
        times = []
        for _ in range(n):
            t = time.perf_counter()
            anthropic_form(body)
            times.append((time.perf_counter() - t) * 1000)
        print(f"   anthropic_form, 21 messages, {name:<24} p50 {pct(times, .5):.3f}"
              f"  p99 {pct(times, .99):.3f}")  # fmt: skip


def foreign() -> list[dict[str, Any]]:
    """A history an OpenAI-compatible model wrote: ids off Anthropic's pattern, one
    call's arguments not JSON."""
    out: list[dict[str, Any]] = []
    for i in range(10):
        call = {"type": "tool_use", "id": f"functions.tool{i}:0", "name": f"tool{i}",
                "input": "{bad" if i == 3 else {"q": i}}  # fmt: skip
        out.append({"role": "assistant", "content": [call]})
        out.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call["id"], "content": "r"}]})  # fmt: skip
    return out


START = """
import asyncio, sys, time
t = time.perf_counter()
from bot.app import App
from config.settings import load_settings
env = {{'ANTHROPIC_API_KEY': 'k', 'OPENAI_API_KEY': 'k', 'SWITCHBOARD_DATA_DIR': sys.argv[1],
       'AWS_REGION': 'us-east-1', 'CLOUD_ML_REGION': 'us-east5',
       'ANTHROPIC_VERTEX_PROJECT_ID': 'proj-1', 'SWITCHBOARD_MODEL': {model!r}}}
app = App(load_settings(None, env), []); app.build()
asyncio.run(app.llm.warm())
ready = time.perf_counter() - t
rss = [l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]
sdks = [m for m in ('openai', 'botocore', 'google.auth') if m in sys.modules]
print(f"{{ready:.2f}} {{int(rss) // 1024}} {{','.join(sdks) or '-'}}")
"""

MODELS = ("claude-sonnet-5", "openai:gpt-test", "bedrock:us.anthropic.claude-sonnet-5-v1:0",
          "vertex:claude-sonnet-5")  # fmt: skip


def start(rounds: int) -> None:
    print("3. build + warm the model's SDK:              seconds  RSS MiB  other SDKs loaded")
    for model in MODELS:
        runs = []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as data:
                out = subprocess.run(
                    [sys.executable, "-c", START.format(model=model), data],
                    capture_output=True, text=True, cwd=HERE, check=True,
                )  # fmt: skip
            runs.append(out.stdout.split())
        secs = statistics.median(float(r[0]) for r in runs)
        rss = statistics.median(int(r[1]) for r in runs)
        print(f"   {model:<42} {secs:7.2f} {rss:8d}  {runs[0][2]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(calls(args.calls))
    adapter(args.calls)
    start(args.rounds)


if __name__ == "__main__":
    main()
