"""docs/settings.md is rendered from the settings model, so it names every setting; and a
key the config file does not know is one line naming it, not silence."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.reference import render
from config.settings import Settings, SettingsError, load_settings
from config.sources import FILE_ONLY, env_name

ROOT = Path(__file__).resolve().parents[2]


def test_the_settings_page_is_what_the_model_renders() -> None:
    page = (ROOT / "docs" / "settings.md").read_text()
    assert page == render(), "run: python -m config.reference > docs/settings.md"


def test_every_setting_is_on_the_page_with_a_meaning() -> None:
    rows = [line for line in render().splitlines() if line.startswith("| `") or "file: `" in line]
    for field in Settings.model_fields:
        name = field if field in FILE_ONLY else env_name(field)
        line = next(row for row in rows if f"`{name}`" in row.split("|")[1])
        assert line.rstrip(" |").split("|")[-1].strip(), f"{name} has no meaning on the page"


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("max_worker = 3\n", "unknown setting max_worker (did you mean max_workers?)"),
        ("[slak]\nbot_token = 'x'\n", "unknown section [slak] (did you mean slack?)"),
        ("[slack]\nbot_tokn = 'xoxb-1'\n", "unknown setting slack_bot_tokn"),
    ],
)
def test_an_unknown_key_in_the_file_is_one_line(tmp_path: Path, toml: str, expected: str) -> None:
    path = tmp_path / "switchboard.toml"
    path.write_text(toml)
    with pytest.raises(SettingsError) as caught:
        load_settings(path, environ={})
    message = str(caught.value)
    assert "\n" not in message and expected in message
    assert message.startswith(f"SWITCHBOARD_CONFIG: {path} has an unknown")


def test_the_example_config_has_no_unknown_key() -> None:
    load_settings(ROOT / "config" / "switchboard.toml", environ={"ANTHROPIC_API_KEY": "k"})
