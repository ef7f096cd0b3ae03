"""bot/core/bounded.py: the one bounded map of the in-memory caches (issue 33)."""

from __future__ import annotations

import pytest

from bot.core.bounded import Bounded


def test_the_oldest_leaves_past_the_bound_in_insertion_order() -> None:
    kept: Bounded[str, int] = Bounded(3)
    for i, key in enumerate("abcde"):
        kept[key] = i
    assert list(kept.items()) == [("c", 2), ("d", 3), ("e", 4)]
    assert "a" not in kept and kept.get("b") is None and len(kept) == 3


def test_a_plain_write_of_a_held_key_keeps_its_place_and_put_makes_it_newest() -> None:
    kept: Bounded[str, int] = Bounded(3, items=[("a", 1), ("b", 2), ("c", 3)])
    kept["a"] = 10  # a dict's write: "a" is still the oldest
    kept["d"] = 4
    assert list(kept.items()) == [("b", 2), ("c", 3), ("d", 4)]
    kept.put("b", 20)  # the newest now: "c" leaves next
    kept["e"] = 5
    assert list(kept.items()) == [("d", 4), ("b", 20), ("e", 5)]


def test_reads_move_nothing_unless_touched() -> None:
    kept: Bounded[str, int] = Bounded(2, items=[("a", 1), ("b", 2)])
    assert kept["a"] == 1 and kept.get("a") == 1 and "a" in kept
    kept["c"] = 3
    assert list(kept) == ["b", "c"]  # the reads did not save "a"
    kept.touch("b")
    kept.touch("gone")  # not held: nothing happens
    kept["d"] = 4
    assert list(kept) == ["b", "d"]  # a touched read counts: "c" left


def test_each_evicted_entry_goes_to_the_callback_once_it_left() -> None:
    gone: list[tuple[str, int]] = []
    kept: Bounded[str, int] = Bounded(2)

    def closed(key: str, value: int) -> None:
        assert key not in kept  # already out when the callback runs
        gone.append((key, value))

    kept.on_evict = closed
    for i, key in enumerate("abcd"):
        kept[key] = i
    del kept["c"]  # removed by hand: not an eviction
    kept.pop("d")
    assert gone == [("a", 0), ("b", 1)] and len(kept) == 0


def test_a_bound_of_one_holds_the_newest_and_a_bound_below_one_is_refused() -> None:
    kept: Bounded[str, int] = Bounded(1, items=[("a", 1), ("b", 2)])
    assert dict(kept) == {"b": 2}
    kept["b"] = 3  # a held key rewritten: nothing leaves
    kept.put("b", 4)
    assert dict(kept) == {"b": 4}
    kept["c"] = 5
    assert dict(kept) == {"c": 5}
    with pytest.raises(ValueError, match="at least 1"):
        Bounded(0)


def test_loading_more_than_the_bound_keeps_the_last_ones() -> None:
    kept = Bounded(3, items=((i, str(i)) for i in range(10)))
    assert list(kept.items()) == [(7, "7"), (8, "8"), (9, "9")]
    kept.clear()
    assert len(kept) == 0 and kept.max == 3
