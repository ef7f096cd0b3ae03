"""What a start imports (issue 22): only what the settings configure.

Each case runs in a fresh interpreter, as `switchboard run` does, and reads
`sys.modules`: the MCP SDK only with `[[mcp_servers]]`, a channel's SDK only when that
channel is enabled, SQLAlchemy never (the job store is on sqlite3), and the Anthropic
SDK neither at import nor at build, but in a thread once the app starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["anthropic", "mcp", "sqlalchemy", "slack_bolt", "slack_sdk", "discord", "aioimaplib"]
# memory search by meaning: its model and libraries load at the first search that needs them
HEAVY += ["wordllama", "numpy", "tokenizers", "safetensors"]

PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, {root!r})
HEAVY = {heavy!r}
seen = {{}}
def note(stage):
    seen[stage] = sorted(m for m in HEAVY if m in sys.modules)
import bot.app
note("import")
from bot.app import App
from tests.kits.app_kit import make_settings
class Fake:
    def env(self):
        return {{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "x"}}
async def main():
    app = App(make_settings(Path(tempfile.mkdtemp()), Fake()), [])
    app.build()
    note("build")
    await app.start()
    note("start")
    await app.llm.warm()
    note("warm")
    await app.stop()
asyncio.run(main())
print(json.dumps(seen))
"""


def stages() -> dict[str, list[str]]:
    code = PROBE.format(root=str(ROOT), heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_start_without_mcp_servers_or_chat_channels_loads_no_sdk_it_does_not_use() -> None:
    seen = stages()
    assert seen["import"] == []
    assert seen["build"] == []  # the model client is made at its first use
    assert seen["start"] == []  # the scheduler's job store is on the standard sqlite3
    assert seen["warm"] == ["anthropic"]
