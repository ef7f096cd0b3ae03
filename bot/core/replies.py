"""What a reply answers: of the open questions or pending approvals, the one its platform
reference names, else the latest in its thread."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from bot.core.messages import Inbound


class Waiting(Protocol):
    @property
    def refs(self) -> Sequence[str]: ...


W = TypeVar("W", bound=Waiting)


def latest_waiting(
    msg: Inbound,
    waiting: Iterable[W],
    places: Callable[[W], Iterable[str | None]],
    since: Callable[[W], float],
) -> W | None:
    """What a reply answers (an open question, a pending approval): one its platform
    reference names exactly (an email's In-Reply-To/References) first, else one in the
    same thread; of several, the latest."""
    items = list(waiting)
    refs = set(msg.thread_refs)
    pool = [w for w in items if refs & set(w.refs)] or [
        w for w in items if msg.conversation in (*places(w), *w.refs)
    ]
    return max(pool, key=since) if pool else None
