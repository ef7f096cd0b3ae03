"""Helpers for the people tests: settings with a `[[people]]` config file."""

from __future__ import annotations

from pathlib import Path

from config.settings import Settings, load_settings
from tests.fakes.anthropic_api import FakeAnthropic

PEOPLE = """
[[people]]
name = "Ann"
slack = "U0ANN"
email = "ann@example.com"
timezone = "Europe/Berlin"

[[people]]
name = "Bob"
discord = "4242"
"""


def people_settings(
    tmp_path: Path, fake: FakeAnthropic, toml: str = PEOPLE, **env: str
) -> Settings:
    config = tmp_path / "switchboard.toml"
    config.write_text(toml)
    environ = {
        **fake.env(),
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LLM_RETRY_BASE_SECONDS": "0.05",
        "SWITCHBOARD_LLM_RETRY_MAX_SECONDS": "0.2",
        "SWITCHBOARD_OUTBOX_RETRY_BASE_SECONDS": "0.05",
        "SWITCHBOARD_TRIGGER_MIN_INTERVAL_SECONDS": "0.1",
        "SWITCHBOARD_STREAMING": "off",  # as app_kit.py: streamed answers are their own tests
        **env,
    }
    return load_settings(config, environ)
