"""A stale leader acts no more (security review #18): its job store, fenced by the lease's
generation, deletes and runs nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from bot.triggers.jobstore import JobStoreFenced
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kits.app_kit import Recorder, eventually, make_settings, running_app


# -- #18: a stale leader's job store is fenced like the rest -------------------------------
async def test_pg1_a_superseded_leader_s_job_store_deletes_and_runs_nothing(
    tmp_path: Path, fake: FakeAnthropic, pg_url: str
) -> None:
    settings = make_settings(
        tmp_path / "data", fake, SWITCHBOARD_DATABASE_URL=pg_url, SWITCHBOARD_NODE_ID="a"
    )
    async with running_app(settings, [Recorder()]) as app:
        await eventually(lambda: app.node.role == "leader")
        app.node.restart = lambda: None  # it would start over; the test looks on
        jobs = app.triggers._jobs
        assert jobs is not None
        job = "internal:memory-distil"
        assert job in app.triggers.job_ids()
        jobs.update_job(jobs.lookup_job(job))  # the leader itself writes as before
        jobs.flush()
        assert jobs.fenced is None
        with psycopg.connect(pg_url, autocommit=True) as conn:  # a new leader took over
            conn.execute("UPDATE leader SET generation = generation + 1")
        jobs.remove_job(job)  # what APScheduler does once it ran a one-shot
        jobs.flush()
        assert jobs.fenced is not None and "no longer leads" in jobs.fenced
        with psycopg.connect(pg_url, autocommit=True) as conn:
            left = conn.execute("SELECT id FROM apscheduler_jobs WHERE id = %s", (job,))
            assert left.fetchone() == (job,)  # the new leader still finds it
        assert jobs.get_due_jobs(datetime.now(UTC) + timedelta(days=400)) == []
        with pytest.raises(JobStoreFenced):
            jobs.add_job(jobs.lookup_job(job))  # type: ignore[arg-type]
