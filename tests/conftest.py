"""Shared fixtures: a clean environment, the fake Anthropic API, settings on tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.kit import make_settings

_OURS = ("SWITCHBOARD_", "ANTHROPIC_", "SLACK_", "DISCORD_", "EMAIL_", "IMAP_", "SMTP_")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's settings."""
    for name in list(os.environ):
        if name.startswith(_OURS) or name == "PORT":
            monkeypatch.delenv(name)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, fake: FakeAnthropic) -> Settings:
    return make_settings(tmp_path / "data", fake)
