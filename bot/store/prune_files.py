"""Retention of the files people sent (`<data_dir>/files/<sha256[:16]>/<name>`,
bot/inbox/files.py): a file's folder goes once every file in it was last written before
the cutoff (SWITCHBOARD_RETENTION ago; the same bytes saved again touch it), unless
something that stays still names it: a conversation still kept (a live one, or a parked
worker's), a message not yet routed or in a conversation something waits in (a parked
worker, an open question, a pending approval: `_NEEDED`, the rule of the other tables),
an active worker's state, an open question, a pending approval, undelivered bus mail.

The referring rows are read only when some folder is old enough, in the pruner's thread
(bot/store/prune.py), and only the rows that can name a file (`LIKE '%files/%'`).
A file sent again while that runs touches its folder under `FILES_LOCK` before its row is
journaled; the pruner checks the folder's age again under the same lock just before it
removes it, so a folder is never removed between a save and the row that names it (one
process's lock: only the leader prunes, and each node saves into its own data dir).
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

from bot.store.prune import _NEEDED, Pruned

#: held while a file is saved (bot/inbox/files.py) and while an old folder is removed
FILES_LOCK = threading.Lock()
FILES_DIR = "files"  # bot/inbox/files.py FILES_DIR (the store does not import the inbox)
#: how a stored row names a saved file: its folder, the first 16 hex digits of its hash
_NAMED = re.compile(r"files/([0-9a-f]{16})/")
#: the rows that stay and may name a saved file
_REFERRING = (
    "SELECT message FROM conversation_messages WHERE message LIKE '%files/%'",
    "SELECT payload FROM inbound WHERE (status NOT IN ('routed', 'corrupt')"
    f" OR conversation IN ({_NEEDED})) AND payload LIKE '%files/%'",
    "SELECT state FROM workers WHERE status IN ('running', 'parked')",
    "SELECT question FROM questions WHERE status = 'open'",
    "SELECT args || held FROM approvals WHERE settled = 0",
    "SELECT payload FROM mail",
)


def old_folders(data_dir: Path, cutoff: float) -> list[Path]:
    """The folders under files/ whose files (and the folder) were all last written
    before `cutoff` (epoch seconds)."""
    root = data_dir / FILES_DIR
    if not root.is_dir():
        return []
    return [folder for folder in root.iterdir() if _old(folder, cutoff)]


def _old(folder: Path, cutoff: float) -> bool:
    try:
        if not folder.is_dir() or folder.stat().st_mtime >= cutoff:
            return False
        return all(f.stat().st_mtime < cutoff for f in folder.iterdir())
    except FileNotFoundError:
        return False


def named(store: Pruned) -> set[str]:
    """The file folders (hash prefixes) that a row which stays names."""
    found: set[str] = set()
    for sql in _REFERRING:
        for (text,) in store.execute(sql):
            if text and "files/" in text:
                found.update(_NAMED.findall(text))
    return found


def remove_unused(store: Pruned, data_dir: Path, cutoff: float) -> int:
    """Removes the old folders no row that stays names; how many files went."""
    old = old_folders(data_dir, cutoff)
    if not old:
        return 0
    kept = named(store)
    removed = 0
    for folder in old:
        if folder.name in kept:
            continue
        with FILES_LOCK:  # sent again since the rows were read: it stays
            if not _old(folder, cutoff):
                continue
            removed += sum(1 for _ in folder.iterdir())
            shutil.rmtree(folder, ignore_errors=True)
    return removed
