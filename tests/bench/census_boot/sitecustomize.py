"""Bench-only: bench_soak.py `--census` puts this folder on the bot's PYTHONPATH; in the
bot (`python -m bot run`) it starts tests/bench/soak_census.py's census thread."""

import os
import sys

if os.environ.get("SOAK_CENSUS_FILE") and sys.argv[-1:] == ["run"]:
    from tests.bench import soak_census

    soak_census.start()
