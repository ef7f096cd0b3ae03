"""Trigger validation and time computation: no app, no waiting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from bot.core.trigger_spec import (
    TriggerError,
    build_spec,
    cron_trigger,
    repeats_wall_time,
    schedule_of,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()


def spec_error(type: str, config: object, action: str = "do it", **kw: object) -> str:
    with pytest.raises(TriggerError) as info:
        build_spec(type, config, action, now=NOW, **kw)  # type: ignore[arg-type]
    return str(info.value)


def test_bad_arguments_give_texts_the_model_can_act_on() -> None:
    assert "unknown trigger type 'weekly': use one of scheduled, delayed" in spec_error(
        "weekly", {}
    )
    assert "has 6 fields; use 5" in spec_error("scheduled", {"cron": "0 0 9 * * 1"})
    assert "not a valid cron expression" in spec_error("scheduled", {"cron": "61 * * * *"})
    assert "restricts both day-of-month and day-of-week" in spec_error(
        "scheduled", {"cron": "0 9 1 * 1"}
    )
    past = spec_error("at_time", {"at": "2026-02-12T09:00:00"})
    assert "is in the past (now is 2026-03-01T12:00:00+00:00 in UTC)" in past
    assert "not an ISO 8601 date-time" in spec_error("at_time", {"at": "next tuesday"})
    assert "needs config.delay_seconds" in spec_error("delayed", {})
    assert "must be at least" in spec_error("delayed", {"delay_seconds": -5})
    assert "must be a number of seconds" in spec_error("delayed", {"delay_seconds": "soon"})
    assert "unknown config key(s) cron for a delayed trigger" in spec_error(
        "delayed", {"delay_seconds": 5, "cron": "* * * * *"}
    )
    assert "unknown timezone 'Mars/Olympus'" in spec_error(
        "scheduled", {"cron": "0 9 * * *", "timezone": "Mars/Olympus"}
    )
    assert "at least 60 seconds" in spec_error(
        "heartbeat", {"interval_seconds": 5}, min_interval=60
    )
    assert "action is empty" in spec_error("delayed", {"delay_seconds": 5}, action="  ")
    assert "missed must be 'catch_up'" in spec_error(
        "delayed", {"delay_seconds": 5, "missed": "later"}
    )


def test_defaults_and_normalisation() -> None:
    spec = build_spec(
        "at_time",
        {"at": "2026-03-02T09:00:00"},
        "standup",
        default_timezone="Europe/Berlin",
        default_agent="Alice",
        now=NOW,
    )
    assert spec.timezone == "Europe/Berlin" and spec.agent == "Alice"
    assert spec.fire_at == datetime(2026, 3, 2, 8, 0, tzinfo=UTC).timestamp()  # 09:00 CET
    delayed = build_spec("delayed", {"delay_seconds": 90, "missed": "skip"}, "x", now=NOW)
    assert delayed.fire_at == NOW + 90 and delayed.misfire_grace == 30
    hb = build_spec("heartbeat", {"interval_seconds": 60}, "check", now=NOW)
    assert hb.config["watch"] == ["messages", "workers", "questions", "outbox", "triggers"]


def _fires(expr: str, zone: str, start: datetime, n: int) -> list[datetime]:
    trigger = cron_trigger(expr, ZoneInfo(zone))
    out: list[datetime] = []
    prev, now = None, start
    for _ in range(n):
        nxt = trigger.get_next_fire_time(prev, now)
        assert nxt is not None
        out.append(nxt.astimezone(UTC))
        prev, now = nxt, nxt
    return out


def _clock(instants: list[datetime], fmt: str = "%m-%d %H:%M") -> list[str]:
    return [d.strftime(fmt) for d in instants]


def test_cron_across_dst_fires_at_the_right_utc_instants() -> None:
    # New York leaves EST (UTC-5) for EDT (UTC-4) on 2026-03-08 and returns on 2026-11-01
    spring = _fires("30 9 * * *", "America/New_York", datetime(2026, 3, 6, tzinfo=UTC), 4)
    assert _clock(spring) == [
        "03-06 14:30",
        "03-07 14:30",
        "03-08 13:30",
        "03-09 13:30",
    ]
    autumn = _fires("30 9 * * *", "America/New_York", datetime(2026, 10, 30, tzinfo=UTC), 4)
    assert _clock(autumn) == [
        "10-30 13:30",
        "10-31 13:30",
        "11-01 14:30",
        "11-02 14:30",
    ]
    # a time that does not exist runs an hour later; a repeated one runs once
    gap = _fires("30 2 * * *", "America/New_York", datetime(2026, 3, 7, tzinfo=UTC), 3)
    assert _clock(gap) == ["03-07 07:30", "03-08 07:30", "03-09 06:30"]
    spec = build_spec("scheduled", {"cron": "30 1 * * *", "timezone": "America/New_York"}, "x")
    fold = _fires("30 1 * * *", "America/New_York", datetime(2026, 10, 31, 12, tzinfo=UTC), 3)
    assert [repeats_wall_time(spec, d) for d in fold] == [False, True, False]
    assert fold[1] - fold[0] == timedelta(hours=1)  # APScheduler's second 01:30, not run
    hourly = build_spec("scheduled", {"cron": "30 * * * *", "timezone": "America/New_York"}, "x")
    assert not repeats_wall_time(hourly, fold[1])
    # Berlin, weekdays at 09:00, across the European change on 2026-03-29
    berlin = _fires("0 9 * * 1-5", "Europe/Berlin", datetime(2026, 3, 26, tzinfo=UTC), 4)
    assert _clock(berlin, "%a %m-%d %H:%M") == [
        "Thu 03-26 08:00",
        "Fri 03-27 08:00",
        "Mon 03-30 07:00",
        "Tue 03-31 07:00",
    ]


@pytest.mark.parametrize(
    "expr",
    [
        "0 9 * * 1-5",
        "0 9 * * 0",
        "0 9 * * 7",
        "15 */6 * * sat,sun",
        "0 0 * * */2",
        "5 4 L * *",
        "*/20 8-17 * 1,6 *",
        "0 9 * * 5-0",
    ],
)
def test_cron_matches_crontab_semantics(expr: str) -> None:
    """APScheduler 3 numbers weekdays from Monday; our translation must agree with cron."""
    start = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)  # off the minute: croniter excludes it
    ours = _fires(expr, "UTC", start, 25)
    it = croniter(expr, start)
    theirs = [it.get_next(datetime).astimezone(UTC) for _ in range(25)]
    assert ours == theirs


def test_one_shot_and_interval_schedules() -> None:
    delayed = build_spec("delayed", {"delay_seconds": 30}, "x", now=NOW)
    trig = schedule_of(delayed)
    assert trig is not None
    assert trig.get_next_fire_time(None, datetime.now(UTC)).timestamp() == NOW + 30
    assert schedule_of(build_spec("on_idle", {"idle_seconds": 60}, "x", now=NOW)) is None
