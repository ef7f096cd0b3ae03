"""A scripted team for the fake LLM: a coordinator that spawns a worker which asks a
person, waits, and publishes what it was told. Reused by core and channel tests.

    fake.responder = TeamScript(worker="Alice", question="Data center or consumer?")

The coordinator spawns the worker when a person's message contains `spawn_on`;
the worker asks `question` (via `via`, if given), then publishes
"Report based on: <answer>"; the coordinator relays any published result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.fakes.anthropic_api import Call, Reply, text, tool


@dataclass
class TeamScript:
    worker: str = "Alice"
    question: str = "Data center or consumer GPUs?"
    via: str | None = None
    spawn_on: str = "research"
    task: str = "Research GPU pricing"
    answers_seen: list[str] = field(default_factory=list)

    def __call__(self, call: Call) -> list[dict[str, Any]]:
        if call.agent == "coordinator":
            return self.coordinator(call)
        return self.worker_turn(call)

    def coordinator(self, call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        if "published its result" in last:
            result = last.split("published its result]: ", 1)[1]
            return [text(f"{self.worker} finished. {result}")]
        if call.tool_results():
            return [text(f"{self.worker} is on it.")]
        if self.spawn_on in last:
            return [tool("spawn_worker", name=self.worker, task=self.task)]
        return [text(f"coordinator heard: {last}")]

    def worker_turn(self, call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        if " answered: " in last:
            answer = last.split(" answered: ", 1)[1].split("\n", 1)[0]
            self.answers_seen.append(answer)
            return [tool("publish", result=f"Report based on: {answer}")]
        if call.tool_results() or len(call.messages) > 1:
            return [text(f"{call.agent} notes: {last}")]
        args: dict[str, Any] = {"question": self.question}
        if self.via:
            args["via"] = self.via
        return [tool("ask_human", **args)]


@dataclass
class ReportScript:
    """A coordinator that spawns `worker` when asked for a report; the worker writes
    report.md in its workspace and publishes it as a file; the coordinator relays."""

    worker: str = "Writer"
    report: str = "# Weekly report\n\nAll systems nominal.\n"

    def __call__(self, call: Call) -> list[dict[str, Any]]:
        last = call.last_text
        if call.agent == "coordinator":
            if "published its result" in last:
                return [text("The report is ready.")]
            if call.tool_results():
                return [text(f"{self.worker} is on it.")]
            if "report" in last:
                return [tool("spawn_worker", name=self.worker, task="write the weekly report")]
            return [text(f"coordinator heard: {last}")]
        if "Wrote" in last:
            return [tool("publish", result="Report written.", files=["report.md"])]
        return [tool("write_file", path="report.md", content=self.report)]


def coordinator_spawning_alice(call: Call) -> Reply | list[dict[str, Any]] | None:
    """The coordinator's part of a worker script: spawn Alice on "research"."""
    if "research" in call.last_text and not call.tool_results():
        return [tool("spawn_worker", name="Alice", task="Research GPUs")]
    return None
