"""The keeper of a status line: it renews the line before the platform forgets it and
lets a worker's line go at its quiet deadline, not at the next renewal (a keeper that
waited for the renewal lived up to Slack's 90 s after the worker's last step; on a busy
run the keepers piled up, issue 33)."""

from __future__ import annotations

import asyncio

import pytest

from bot.core import progress
from bot.core.messages import Target
from bot.core.progress import Progress
from tests.kits.surface_kit import Surface

WHERE = Target("slack", "C1", "1.0")


def watched(
    monkeypatch: pytest.MonkeyPatch, quiet: float, refresh: float
) -> tuple[Progress, Surface]:
    """Progress showing on a recording Slack surface, a worker's line quiet after `quiet`."""
    monkeypatch.setattr(progress, "WORKER_QUIET_SECONDS", quiet)
    shown = Progress()
    surface = Surface(refresh=refresh)
    shown.add("slack", surface)
    return shown, surface


async def test_a_workers_line_is_let_go_at_its_quiet_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown, surface = watched(monkeypatch, quiet=0.3, refresh=60.0)
    shown.status("worker:alice", "Reading the pricing page", WHERE)
    keeper = shown.works["worker:alice"].task
    assert keeper is not None
    await asyncio.wait_for(asyncio.shield(keeper), 2.0)  # not the 60 s renewal
    assert "worker:alice" not in shown.works
    assert surface.shown == ["Reading the pricing page"]


async def test_each_step_keeps_the_line_and_a_new_status_shows_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown, surface = watched(monkeypatch, quiet=0.4, refresh=0.25)
    shown.status("worker:bob", "Step 1", WHERE)
    for _ in range(4):  # touched every 0.2 s: alive past its 0.4 s quiet time
        await asyncio.sleep(0.2)
        shown.status("worker:bob", "Step 1", WHERE)
    assert "worker:bob" in shown.works
    assert surface.shown.count("Step 1") >= 3  # renewed every 0.25 s meanwhile
    shown.status("worker:bob", "Step 2", WHERE)
    await asyncio.sleep(0.05)
    assert surface.shown[-1] == "Step 2"
    shown.end("worker:bob")
    await asyncio.sleep(0)
    assert "worker:bob" not in shown.works
