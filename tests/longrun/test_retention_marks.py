"""Retention of the channels' catch-up watermarks and the "last spoke" marks, on both
backends (the `database` fixture): old ones go, recent ones and those of a place a parked
worker still waits in stay."""

from __future__ import annotations

import json
import time

from bot.store.core import Store
from bot.store.prune import Pruner
from config.retention import DAY
from tests.longrun.test_retention import LATER, pruner, question, store, worker

__all__ = ["store"]


def snowflake(at: float) -> str:
    return str((int(at * 1000) - 1_420_070_400_000) << 22)


def mark(store: Store, key: str, value: str) -> None:
    store.set_kv(key, json.dumps({"mark": value}))


def test_old_watermarks_and_last_spoke_marks_go(store: Store) -> None:
    p: Pruner = pruner(store)
    now = time.time()
    recent = now + LATER - DAY  # a day before the pruner's clock
    mark(store, "slack.watermark.Cold", f"{now:.6f}")
    mark(store, "slack.watermark.Warm", f"{recent:.6f}")
    mark(store, "slack.watermark.C1", f"{now:.6f}")  # a parked worker waits in C1/parked
    worker(store, "parked1", "parked", "slack:C1/parked")
    question(store, "parked1", "open", "slack:C1/parked")
    mark(store, "discord.watermark.111", snowflake(now))
    mark(store, "discord.watermark.222", snowflake(recent))
    mark(store, "slack.watermark.Bad", "not-a-ts")  # the channel quarantines it, kept
    store.set_kv("people:last:slack:UOLD", repr(now))
    store.set_kv("people:last:slack:UNEW", repr(recent))
    run = p.run_now()
    left = set(store.kv_prefixed("slack.watermark.")) | {
        "d" + k for k in store.kv_prefixed("discord.watermark.")
    }
    assert left == {"Warm", "C1", "Bad", "d222"}
    assert set(store.kv_prefixed("people:last:")) == {"slack:UNEW"}
    assert run.removed["watermarks"] == 3
