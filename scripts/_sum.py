"""The closing line of scripts/test: the counts of its pytest runs, summed.

Reads each run's output, takes the counts from its last summary line (`== 3 failed,
1790 passed, 2 warnings in 500.1s ==` or, under -q, the same without the rules) and
prints `all: N passed, N failed` (`, N skipped` and `, N errors` when there are any).
A run whose summary line is missing counts as one error: it crashed before the end.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)\b")
_SUMMARY = re.compile(r"\b(passed|failed|errors?|no tests ran)\b.* in [\d.]+s")


def counts(output: str) -> Counter[str]:
    lines = [line for line in output.splitlines() if _SUMMARY.search(line)]
    if not lines:
        return Counter(error=1)
    found: Counter[str] = Counter()
    for number, word in _COUNT.findall(lines[-1]):
        found["error" if word.startswith("error") else word] += int(number)
    return found


def closing_line(total: Counter[str]) -> str:
    line = f"all: {total['passed']} passed, {total['failed']} failed"
    if total["skipped"]:
        line += f", {total['skipped']} skipped"
    if total["error"]:
        line += f", {total['error']} error{'s' if total['error'] != 1 else ''}"
    return line


def main(paths: list[str]) -> None:
    total: Counter[str] = Counter()
    for path in paths:
        total.update(counts(Path(path).read_text(errors="replace")))
    print(closing_line(total))


if __name__ == "__main__":
    main(sys.argv[1:])
