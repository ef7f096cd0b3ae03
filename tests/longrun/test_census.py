"""The soak's object census (tests/bench/soak_census.py, bench_soak.py `--census`): it
starts in a fresh `... run` process through its sitecustomize, and its summary names
what grew and who holds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bench.soak_env import HERE, census_env
from tests.kits.proc import fresh_json

#: in a fresh interpreter (a test worker's heap has more than 40 larger containers): a
#: module-level map grows between three censuses, then the summary is printed
GROWING = """
import json, sys
from pathlib import Path
from tests.bench import soak_census
growing = {}
path = Path(sys.argv[1])
for size in (400, 900, 3000):
    growing.update((f"k{i}", [i]) for i in range(size))
    with path.open("a") as out:
        out.write(json.dumps(soak_census.census()) + "\\n")
print(json.dumps(soak_census.summary(path, warm=0)))
"""


def test_the_summary_names_what_grew_and_its_holder(tmp_path: Path) -> None:
    code = f"import sys; sys.argv = ['-c', {str(tmp_path / 'census.jsonl')!r}]\n{GROWING}"
    lines = fresh_json(code)
    assert lines[0].startswith("census: 3 taken")
    big = next(line for line in lines if line.endswith("__main__.growing"))
    assert big.split()[:3] == ["400", "->", "3000"], lines
    lists = next(line for line in lines if line.endswith(" builtins.list"))
    assert int(lists.split()[2]) > 2500, lines  # the map's values: 2,600 more


def test_the_census_starts_in_a_run_process_only(tmp_path: Path) -> None:
    env = os.environ | census_env(tmp_path, minutes=0.002)
    code = "import time; time.sleep(1.5)"
    subprocess.run([sys.executable, "-c", code, "run"], env=env, cwd=HERE, check=True)
    rows = (tmp_path / "census.jsonl").read_text().splitlines()
    assert rows and "builtins.dict" in json.loads(rows[0])["counts"]
    (tmp_path / "census.jsonl").unlink()
    subprocess.run([sys.executable, "-c", code, "chat"], env=env, cwd=HERE, check=True)
    assert not (tmp_path / "census.jsonl").exists()
