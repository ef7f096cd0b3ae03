"""Settings: TOML then environment; a bad value is one line naming the variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from config.settings import SettingsError, load_settings, require_llm
from tests.kits.pgcluster import free_port
from tests.kits.proc import Switchboard


def test_environment_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[switchboard]\nmodel = "from-file"\nmax_workers = 3\n'
        '[slack]\nallowed_users = ["U1", "U2"]\n'
    )
    settings = load_settings(path, {"SWITCHBOARD_MODEL": "from-env"})
    assert settings.model == "from-env" and settings.max_workers == 3
    assert settings.slack_allowed_users == ["U1", "U2"]


def test_comma_separated_lists_from_the_environment() -> None:
    settings = load_settings(None, {"EMAIL_ALLOWED_SENDERS": "Ann@X.org, @corp.com"})
    assert settings.email_allowed_senders == ["ann@x.org", "@corp.com"]


@pytest.mark.parametrize(
    ("environ", "line"),
    [
        ({"SWITCHBOARD_MAX_WORKERS": "many"}, "SWITCHBOARD_MAX_WORKERS: Input should be a valid"),
        ({"SWITCHBOARD_HOME": "irc:#x"}, "SWITCHBOARD_HOME: unknown delivery target"),
        ({"SWITCHBOARD_HOME": "email:foo"}, "SWITCHBOARD_HOME: delivery target 'email:foo' is not"),
        ({"IMAP_TLS": "maybe"}, "IMAP_TLS: Input should be 'ssl', 'starttls' or 'none'"),
        ({"SWITCHBOARD_TIMEZONE": "Mars/Olympus"}, "SWITCHBOARD_TIMEZONE: is not an IANA"),
        (
            {"SLACK_BOT_TOKEN": "xoxb-1"},
            "SLACK_APP_TOKEN is not set: with SLACK_BOT_TOKEN, set SLACK_APP_TOKEN (Socket Mode",
        ),
        (
            {"SLACK_BOT_TOKEN": "xoxp-1", "SLACK_APP_TOKEN": "xapp-1"},
            "SLACK_BOT_TOKEN must be the app's bot token (xoxb-",
        ),
        (
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-1"},
            "SLACK_APP_TOKEN must be an app-level token (xapp-",
        ),
        ({"EMAIL_ADDRESS": "bot@x.org"}, "IMAP_HOST is required when EMAIL_ADDRESS is set"),
    ],
)
def test_bad_values_name_their_variable(environ: dict[str, str], line: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(None, environ)
    message = str(info.value)
    assert message.startswith(line) and "\n" not in message


def test_missing_api_key_says_how_to_set_it() -> None:
    with pytest.raises(SettingsError, match=r"^ANTHROPIC_API_KEY is not set: export"):
        require_llm(load_settings(None, {}))


def test_broken_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("model = \n")
    with pytest.raises(SettingsError, match=r"SWITCHBOARD_CONFIG: .*bad\.toml is not valid TOML"):
        load_settings(path, {})


def test_cli_reports_settings_errors_in_one_line(tmp_path: Path) -> None:
    sb = Switchboard(["chat"], {"SWITCHBOARD_DATA_DIR": str(tmp_path)}, tmp_path)
    code, out = sb.finish()
    assert code == 2
    assert out == [
        "switchboard: ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=sk-ant-... "
        "(or point ANTHROPIC_BASE_URL at an Anthropic-compatible server)."
    ]


def test_run_without_channels_explains_how_to_configure(tmp_path: Path) -> None:
    sb = Switchboard(["run"], {"ANTHROPIC_API_KEY": "k"}, tmp_path)
    code, out = sb.finish()
    assert code == 2
    assert len(out) == 1 and out[0].startswith("switchboard run: no channel is configured.")


def test_status_reads_the_data_dir_while_nothing_runs(tmp_path: Path) -> None:
    from bot.store.core import Store, WorkerRow

    store = Store(tmp_path / "switchboard.db")
    store.agents.upsert_worker(
        WorkerRow(
            id="alice",
            name="Alice",
            task="research",
            status="parked",
            origin_conversation="c",
            origin_target="terminal",
            turns=2,
            created_at=0.0,
            updated_at=0.0,
        )
    )
    store.set_health("slack", "connected", "socket mode")
    store.close()
    sb = Switchboard(["--data-dir", str(tmp_path), "status"], {}, tmp_path)
    code, lines = sb.finish()
    out = "\n".join(lines)
    assert code == 0
    assert "Switchboard: not running" in out
    assert re.search(r"Alice +worker +parked +2", out)
    assert re.search(r"coordinator +coordinator +not running", out)
    assert "slack    connected  socket mode" in out


def test_a_database_url_of_another_scheme_names_the_variable_not_the_password() -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(None, {"SWITCHBOARD_DATABASE_URL": "mysql://bob:s3cret-pw@db/x"})
    message = str(info.value)
    assert message.startswith("SWITCHBOARD_DATABASE_URL: must be a PostgreSQL URL")
    assert "s3cret-pw" not in message and "\n" not in message


@pytest.mark.parametrize("command", ["run", "status"])
def test_an_unreachable_database_is_one_line_naming_it_without_the_password(
    tmp_path: Path, command: str
) -> None:
    env = {
        "ANTHROPIC_API_KEY": "k",
        "SLACK_BOT_TOKEN": "xoxb-1",
        "SLACK_APP_TOKEN": "xapp-1",
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_DATABASE_URL": f"postgresql://bob:s3cret-pw@127.0.0.1:{free_port()}/x",
    }
    code, out = Switchboard([command], env, tmp_path).finish()
    assert code != 0
    assert len(out) == 1, out
    assert out[0].startswith("switchboard: SWITCHBOARD_DATABASE_URL: cannot reach the database")
    written = [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    assert not [text for text in [*out, *written] if "s3cret-pw" in text]
