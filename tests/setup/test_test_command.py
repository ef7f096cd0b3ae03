"""scripts/test's two parts: the solo and long lists name real files, the parallel part
takes the longest files first, and the closing line sums both pytest runs honestly (a run
that crashed before its summary counts as an error)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from tests.conftest import LONG_FILES, SOLO_FILES, _longest_first

ROOT = Path(__file__).resolve().parents[2]


def _sum() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_sum", ROOT / "scripts" / "_sum.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["_sum"] = module
    spec.loader.exec_module(module)
    return module


def test_every_solo_file_exists() -> None:
    assert SOLO_FILES
    assert [f for f in SOLO_FILES if not (ROOT / f).is_file()] == []


def test_every_long_file_exists_and_none_is_solo() -> None:
    assert [f for f in LONG_FILES if not (ROOT / f).is_file()] == []
    assert not set(LONG_FILES) & SOLO_FILES


class _Item:
    def __init__(self, nodeid: str, slow: bool = False) -> None:
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name: str) -> Any:
        return True if name == "slow" and self.slow else None


def test_the_longest_files_go_first_each_file_whole_and_in_its_order() -> None:
    items = [
        _Item("tests/a/test_quick.py::t1"),
        _Item("tests/a/test_servers.py::t1", slow=True),
        _Item("tests/a/test_quick.py::t2"),
        _Item("tests/longrun/test_soak.py::t"),
        _Item("tests/a/test_servers.py::t2", slow=True),
    ]
    ordered = _longest_first(cast(list[pytest.Item], items))
    assert [i.nodeid for i in ordered] == [
        "tests/longrun/test_soak.py::t",
        "tests/a/test_servers.py::t1",
        "tests/a/test_servers.py::t2",
        "tests/a/test_quick.py::t1",
        "tests/a/test_quick.py::t2",
    ]


def test_the_closing_line_sums_both_runs(tmp_path: Path) -> None:
    parallel = tmp_path / "parallel"
    parallel.write_text(
        "....F.\nFAILED tests/a.py::t - assert 1 passed in 2s\n"
        "2 failed, 1790 passed, 3 skipped, 2 warnings in 512.04s (0:08:32)\n"
    )
    solo = tmp_path / "solo"
    solo.write_text("......\n============ 9 passed, 1790 deselected in 61.20s ============\n")
    total = _sum().counts(parallel.read_text()) + _sum().counts(solo.read_text())
    assert _sum().closing_line(total) == "all: 1799 passed, 2 failed, 3 skipped"


def test_a_run_without_its_summary_line_counts_as_an_error() -> None:
    module = _sum()
    crashed = module.counts("....\nINTERNALERROR> Traceback (most recent call last):\n")
    assert module.closing_line(crashed) == "all: 0 passed, 0 failed, 1 error"
    assert module.counts("1 error in 0.31s")["error"] == 1
