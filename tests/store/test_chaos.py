"""Chaos: `switchboard run` on Slack, Discord and email, killed with SIGKILL at random
moments from a printed seed while people talk to it; nothing may be lost, repeated or
answered in the wrong thread, and a parked worker's question is asked once and its
result delivered once (the harness: tests/kits/chaos.py).

CI runs a few kills; locally: `pytest tests/store/test_chaos.py --kills 20 --seed 1234 -s`.
A failure prints the seed: the same seed replays the same workload and kill moments
(the moments the processes reach differ from run to run, so replay is close, not exact).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.email.servers import Dovecot
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.chaos import chaos_world, run_chaos


@pytest.mark.chaos
async def test_repeated_kill_9_loses_repeats_and_misroutes_nothing(
    tmp_path: Path,
    dovecot: Dovecot,
    fake: FakeAnthropic,
    chaos_plan: tuple[int, int],
) -> None:
    kills, seed = chaos_plan
    async with chaos_world(dovecot, fake, tmp_path, seed, {}) as world:
        result = await run_chaos(world, seed, kills, messages=max(14, 3 * kills))
    print(f"chaos: seed={seed} kills={kills} {result.line()}")
    if not result.ok:
        print("\n".join(result.timeline))
    assert result.ok, f"seed={seed}: {result.line()}"
