"""Finished workers' folders, folded (the pruning run's `worker_folders` step).

Every worker spawned under a new name gets `agents/<id>/` (agents/memory/files.py): its
SOUL.md and daily logs, a few hundred bytes of text in four directories and a lock file,
~24 KB on disk. The text is the agents' memory and is never pruned; the folder is. Once
the worker's row is gone (the `workers` rule: ended longer than SWITCHBOARD_RETENTION
ago, nothing waiting on it) and nothing in the folder was written within the retention,
its text is appended to one markdown file a month, `agents/.retired/<YYYY-MM>.md` (the
month it was last written; a section per worker, each file under its path), fsynced,
and the folder removed (its lock files and derived search index with it). A folder
still holding archived transcripts (they go by their own retention), person profiles,
or any other file that is not text, stays as it is.

Crash-safe: the folder is first renamed into `agents/.retired/.folding/<id>.<ns>` (a
worker spawned again under the name meanwhile writes a fresh folder), then appended,
then removed; a folder left there by a crash is appended only if its section (marked
with that name) is not in the month's file yet. Nothing reads the file as instructions:
no agent's memory search covers `.retired` (it is for people, and grep).
"""

from __future__ import annotations

import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from bot.store.prune import Pruned

log = logging.getLogger(__name__)

#: folders a pruning run folds at most (each is a few small files, ~1 ms): every folder
#: due, as a rule. 200 a run fell behind a soak spawning ~280 workers between two runs
#: (5,700 folders left after 36 minutes); the bound only spreads a first run over a data
#: dir of years across the next runs
FOLD_BATCH = 5_000
RETIRED = ".retired"
FOLDING = ".folding"
#: agents that are not workers (agents/team: the coordinator's folder is its memory)
NOT_WORKERS = frozenset({"coordinator"})
TEXT = (".md", ".txt", ".json", ".jsonl")
LOCKS = ".locks"  # agents/memory/files.py: empty lock files, not kept
#: the search index (agents/memory/search.py INDEX_FILE): derived from the text, not kept
DERIVED = ".search.sqlite"
#: what keeps a folder as it is: archived transcripts (removed by their own retention
#: first) and person profiles of the old layout (moved to people/ at start: agents/memory)
KEPT_HERE = tuple(f"{folder}{os.sep}" for folder in ("archive", "users"))


def retire_workers(data_dir: Path, store: Pruned, cutoff: float, batch: int = FOLD_BATCH) -> int:
    """Fold up to `batch` folders of workers that have ended and been quiet since before
    `cutoff` (epoch seconds); how many were folded."""
    agents = data_dir / "agents"
    retired = agents / RETIRED
    aside = retired / FOLDING
    folded = _left_by_a_crash(aside, retired)
    try:
        names = sorted(os.listdir(agents))
    except FileNotFoundError:
        return folded
    rows = {row[0] for row in store.execute("SELECT id FROM workers").fetchall()}
    for name in names:
        if folded >= batch:
            break
        if name.startswith(".") or name in NOT_WORKERS or name in rows:
            continue
        last = _quiet_since(agents / name, cutoff)
        if last is None:
            continue
        try:
            aside.mkdir(parents=True, exist_ok=True)
            moved = aside / f"{name}.{last}"
            os.rename(agents / name, moved)
            _fold(moved, retired, check=False)
        except OSError as exc:  # one folder must not stop the run (nor its checkpoint)
            log.warning("agents/%s was not folded: %s", name, exc)
            continue
        folded += 1
    return folded


def _left_by_a_crash(aside: Path, retired: Path) -> int:
    try:
        left = sorted(aside.iterdir())
    except FileNotFoundError:
        return 0
    folded = 0
    for moved in left:
        try:
            _fold(moved, retired, check=True)
        except OSError as exc:  # it stays aside: the next run tries again
            log.warning("%s was not folded: %s", moved, exc)
            continue
        folded += 1
    return folded


def _quiet_since(folder: Path, cutoff: float) -> int | None:
    """The newest write in a foldable folder (ns) when it is before `cutoff`; None when
    it is newer, or the folder holds what is not folded (transcripts, non-text)."""
    newest = 0
    try:
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != LOCKS]
            newest = max(newest, os.stat(root).st_mtime_ns)
            for name in files:
                path = os.path.join(root, name)
                relative = os.path.relpath(path, folder)
                if relative.startswith(DERIVED):
                    continue
                if relative.startswith(KEPT_HERE) or not name.endswith(TEXT):
                    return None
                newest = max(newest, os.stat(path).st_mtime_ns)
    except OSError:
        return None
    return newest if newest and newest < cutoff * 1e9 else None


def _fold(moved: Path, retired: Path, check: bool) -> None:
    name, _, stamp = moved.name.rpartition(".")
    when = datetime.fromtimestamp(int(stamp) / 1e9, UTC)
    month = retired / f"{when:%Y-%m}.md"
    marker = f"<!-- folded {moved.name} -->"
    if not (check and month.exists() and marker in month.read_text("utf-8", "replace")):
        section = [f"\n## {name} · last written {when:%Y-%m-%d %H:%M} UTC\n{marker}\n"]
        for path in sorted(p for p in moved.rglob("*") if p.is_file()):
            relative = path.relative_to(moved).as_posix()
            if not relative.startswith((LOCKS + "/", DERIVED)):
                text = path.read_text("utf-8", "replace").rstrip()
                section.append(f"\n### {relative}\n\n{text}\n")
        _append(month, "".join(section))
    shutil.rmtree(moved, ignore_errors=True)


def _append(path: Path, text: str) -> None:
    header = "" if path.exists() else f"# Workers retired, last written in {path.stem}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (header + text).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
