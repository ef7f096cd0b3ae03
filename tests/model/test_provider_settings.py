"""Model settings with a provider: each mistake is one line naming the variable."""

from __future__ import annotations

import pytest

from config.settings import SettingsError, load_settings, require_llm


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"SWITCHBOARD_MODEL": "groq:llama-3"}, r"^SWITCHBOARD_MODEL: unknown provider groq:"),
        (
            {"SWITCHBOARD_MODEL": "azure:gpt-5"},
            r"^SWITCHBOARD_MODEL: unknown provider azure:",
        ),
        (
            {"SWITCHBOARD_MODEL_FALLBACK": "x,ollama:c"},
            r"^SWITCHBOARD_MODEL_FALLBACK: unknown provider ollama:",
        ),
        ({"SWITCHBOARD_MODEL": "openai:"}, r"^SWITCHBOARD_MODEL: openai: names no model"),
    ],
)
def test_a_wrong_model_setting_is_one_line(env: dict[str, str], said: str) -> None:
    with pytest.raises(SettingsError, match=said) as info:
        load_settings(None, {"ANTHROPIC_API_KEY": "k", **env})
    assert "\n" not in str(info.value)


def test_an_openai_model_needs_its_key_or_base_url() -> None:
    settings = load_settings(None, {"SWITCHBOARD_MODEL": "openai:gpt-test"})
    with pytest.raises(SettingsError, match=r"^OPENAI_API_KEY is not set"):
        require_llm(settings)
    require_llm(
        load_settings(None, {"SWITCHBOARD_MODEL": "openai:m", "OPENAI_BASE_URL": "http://x/v1"})
    )


def test_a_fallback_on_anthropic_needs_its_key_too() -> None:
    env = {
        "SWITCHBOARD_MODEL": "openai:m",
        "OPENAI_API_KEY": "sk",
        "SWITCHBOARD_MODEL_FALLBACK": "claude-opus-5",
    }
    with pytest.raises(SettingsError, match=r"^ANTHROPIC_API_KEY is not set"):
        require_llm(load_settings(None, env))


def test_models_keep_their_provider_and_bare_names_stay_whole() -> None:
    s = load_settings(
        None,
        {
            "SWITCHBOARD_MODEL": "anthropic:claude-opus-5",
            "SWITCHBOARD_MODEL_WORKERS": "llama3:8b",
            "SWITCHBOARD_MODEL_FALLBACK": " openai:gpt-test , claude-haiku-5-5 ",
        },
    )
    assert (s.model, s.model_workers) == ("claude-opus-5", "llama3:8b")
    assert s.model_fallback == ["openai:gpt-test", "claude-haiku-5-5"]


def test_a_vertex_model_needs_its_region() -> None:
    settings = load_settings(None, {"SWITCHBOARD_MODEL": "vertex:claude-sonnet-5"})
    with pytest.raises(SettingsError, match=r"^CLOUD_ML_REGION is not set"):
        require_llm(settings)
    env = {"SWITCHBOARD_MODEL": "vertex:claude-sonnet-5@20260101", "CLOUD_ML_REGION": "global"}
    require_llm(load_settings(None, env))


def test_a_vertex_model_is_priced_as_anthropics_and_others_by_the_config() -> None:
    s = load_settings(None, {})
    assert s.price("vertex:claude-sonnet-5@20260101") == s.price("claude-sonnet-5")
    assert s.price("openai:gpt-test") is None  # `[prices."openai:gpt-test"]` sets it


def test_a_bedrock_model_needs_its_region_and_is_priced_as_anthropics() -> None:
    model = "bedrock:us.anthropic.claude-sonnet-5-v1:0"
    with pytest.raises(SettingsError, match=r"^AWS_REGION is not set"):
        require_llm(load_settings(None, {"SWITCHBOARD_MODEL": model}))
    s = load_settings(None, {"SWITCHBOARD_MODEL": model, "AWS_REGION": "us-east-1"})
    require_llm(s)
    assert s.price(model) == s.price("claude-sonnet-5")
