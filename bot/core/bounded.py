"""`Bounded`: a mapping of at most `max` entries, oldest first, the oldest leaving past it.

The one shape of every in-memory map that must not grow with the traffic (issue 33): a
site names its bound next to itself and picks, per use, how an entry counts as recent:

- `m[key] = value` writes as a dict does: a new key goes last (the newest), an existing
  one keeps its place (its age counts from when it came);
- `m.put(key, value)` writes it as the newest (an existing key moves last);
- `m.touch(key)` makes a read count (a least-recently-used cache); a plain `m[key]` or
  `m.get(key)` does not move anything.

Past `max` the oldest entries leave, each handed to `on_evict` (an index to close) after
it left. No lock: a site touched from several threads holds its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Bounded(MutableMapping[K, V]):
    """Insertion-ordered, at most `max` entries (at least 1); see the module's note."""

    __slots__ = ("_items", "max", "on_evict")

    def __init__(
        self,
        max_size: int,
        on_evict: Callable[[K, V], None] | None = None,
        items: Iterable[tuple[K, V]] = (),
    ) -> None:
        if max_size < 1:
            raise ValueError(f"a bounded map holds at least 1 entry, not {max_size}")
        self._items: OrderedDict[K, V] = OrderedDict()
        self.max = max_size
        self.on_evict = on_evict
        for key, value in items:  # the last `max_size` of them stay
            self[key] = value

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        self._trim()

    def __delitem__(self, key: K) -> None:
        del self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Bounded({self.max}, {len(self._items)} entries)"

    def put(self, key: K, value: V) -> None:
        """`key` as the newest entry, wherever it was."""
        self._items[key] = value
        self._items.move_to_end(key)
        self._trim()

    def touch(self, key: K) -> None:
        """A read that counts: `key`, if held, becomes the newest entry."""
        if key in self._items:
            self._items.move_to_end(key)

    def _trim(self) -> None:
        while len(self._items) > self.max:
            key, value = self._items.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(key, value)
