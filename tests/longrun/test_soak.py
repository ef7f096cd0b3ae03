"""The soak benchmark's short mode (tests/bench/bench_soak.py): the real `switchboard run`
against the fakes, dovecot and the MCP server for half a minute. It checks the machinery
(the bot starts, takes every kind of traffic, is sampled, and the verdict names every
figure) and that every message was answered exactly once; it never fails on the growth
figures themselves, which a loaded CI machine cannot judge in 30 s."""

from __future__ import annotations

import re

import pytest

from tests.bench import bench_soak


@pytest.mark.slow
def test_a_short_soak_samples_the_running_bot(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fakes keep a few rows, as in a long soak: the answers are still all read
    monkeypatch.setattr(bench_soak, "KEEP_ROWS", 30)
    line = bench_soak.main(["--minutes", "0.4", "--rate", "5", "--sample", "4"])
    out = capsys.readouterr().out
    print(out)  # the figures, for the CI log
    assert line.startswith(("PASS", "FAIL grows")), line  # not "FAIL 3 never answered"
    for figure in ("rss", "fds", "tasks", "pickup_ms", "db", "wal max"):
        assert figure in line
    rows = [r for r in out.splitlines() if r.strip() and r.split()[0].replace(".", "").isdigit()]
    assert len(rows) >= 4
    assert all(float(r.split()[1]) > 20 for r in rows)  # an RSS read from the live process
    routed = out.split("\nrouted ", 1)[1].split()[0]
    assert int(routed) > 20
    kinds = out.split("\nrouted ", 1)[1].split("\n", 1)[0]
    for kind in ("slack thread", "discord", "email", "file", "worker park+resume", "approval"):
        assert kind in kinds, kinds
    for kind in ("burst line", "ambient (not routed)"):  # a busy team's talk
        assert kind in kinds, kinds
    assert "Slack API calls per routed message" in out
    kept, total = map(int, re.search(r"keeping (\d+) of (\d+) Slack posts", out).groups())  # type: ignore[union-attr]
    assert kept <= 60 < total, out  # the fake dropped what it had posted and the soak read
    once, owed, refused = re.match(
        r"(\d+) of (\d+), (\d+) of them", out.split("exactly once: ")[1]
    ).groups()  # type: ignore[union-attr]
    assert once == owed and refused == "0", out  # every worker ran: none refused at the limit
