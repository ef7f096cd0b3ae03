"""The capability map (config/models.py) and how a request asks each model to think
(agents/model/capabilities.py): nothing a model refuses is ever sent."""

from __future__ import annotations

import logging
from types import SimpleNamespace as NS

import pytest

from agents.model.capabilities import from_info, thinking_params
from config.models import DEFAULT_PRICES, EFFORTS, MODELS, conservative, spec_of
from config.settings import SettingsError, load_settings


def test_each_effort_is_sent_the_way_the_model_takes_it() -> None:
    sonnet5, sonnet55 = MODELS["claude-sonnet-5"], MODELS["claude-sonnet-5-5"]
    adaptive_low = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}
    assert thinking_params(sonnet5, "low") == adaptive_low
    assert thinking_params(sonnet5, "off") == {"thinking": {"type": "disabled"}}
    assert thinking_params(sonnet55, "off") == {
        "thinking": {"type": "between_tools"},
        "output_config": {"effort": "low"},
    }
    assert thinking_params(MODELS["claude-opus-5-5"], "off") == adaptive_low  # always thinks
    assert thinking_params(MODELS["claude-opus-4-8"], "off") == {}  # thinks only when asked
    assert thinking_params(MODELS["claude-haiku-4-5"], "max") == {}  # no adaptive thinking


def test_an_effort_a_model_does_not_take_runs_at_the_nearest_below(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        params = thinking_params(MODELS["claude-opus-4-6"], "xhigh")
        thinking_params(MODELS["claude-opus-4-6"], "xhigh")
    assert params["output_config"] == {"effort": "high"}
    assert len([r for r in caplog.records if "takes no effort 'xhigh'" in r.message]) == 1


def test_no_model_is_sent_what_it_refuses() -> None:
    for spec in MODELS.values():
        for effort in EFFORTS:
            params = thinking_params(spec, effort)
            kind = params.get("thinking", {}).get("type")
            assert kind is None or kind in spec.thinking, (spec.name, effort)
            level = params.get("output_config", {}).get("effort")
            assert level is None or level in spec.efforts, (spec.name, effort)
            assert not (kind == "between_tools" and level in ("xhigh", "max"))


def test_the_map_prices_the_newest_models_with_their_cache_reads() -> None:
    assert DEFAULT_PRICES["claude-sonnet-5-5"].cache_read == 0.10  # half of Sonnet 5's
    assert DEFAULT_PRICES["claude-sonnet-5"].cache_read == 0.20
    assert spec_of("claude-sonnet-5-5-20261001") is MODELS["claude-sonnet-5-5"]
    assert spec_of("claude-unheard-of-9") is None
    assert "claude-fable-5-2" not in DEFAULT_PRICES  # unpublished: never guessed


def test_a_model_the_api_describes_is_read_from_its_capabilities() -> None:
    def on(flag: bool) -> NS:
        return NS(supported=flag)

    types = NS(adaptive=on(True), between_tools=on(False), disabled=on(True), enabled=on(False))
    effort = NS(supported=True, low=on(True), medium=on(True), high=on(True), max=on(False))
    info = NS(
        capabilities=NS(thinking=NS(supported=True, types=types), effort=effort),
        max_tokens=64_000,
        max_input_tokens=500_000,
    )
    spec = from_info("claude-new-1", info, 32_000)
    assert spec.thinking == {"adaptive", "disabled"} and spec.efforts == ("low", "medium", "high")
    assert (spec.max_output, spec.context_window, spec.price) == (64_000, 500_000, None)
    assert thinking_params(spec, "max")["output_config"] == {"effort": "high"}
    assert thinking_params(conservative("x", 1000), "high") == {}


def test_each_role_has_its_effort_and_a_wrong_one_names_its_variable() -> None:
    s = load_settings(None, {})
    assert [s.effort_of(r) for r in ("coordinator", "workers", "background")] == [
        "low",
        "medium",
        "low",
    ]
    s = load_settings(None, {"SWITCHBOARD_EFFORT": "high", "SWITCHBOARD_EFFORT_WORKERS": "max"})
    assert [s.effort_of(r) for r in ("coordinator", "workers", "background")] == [
        "high",
        "max",
        "high",
    ]
    with pytest.raises(SettingsError, match=r"^SWITCHBOARD_EFFORT: "):
        load_settings(None, {"SWITCHBOARD_EFFORT": "hgh"})


def test_each_role_has_its_model_and_a_provider_is_named_or_refused() -> None:
    s = load_settings(None, {"SWITCHBOARD_MODEL": "anthropic:claude-sonnet-5-5",
                             "SWITCHBOARD_MODEL_BACKGROUND": "claude-haiku-5-5"})  # fmt: skip
    assert [s.model_of(r) for r in ("coordinator", "workers", "background")] == [
        "claude-sonnet-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    ]
    local = load_settings(None, {"SWITCHBOARD_MODEL": "llama3:8b"})  # a local server's name
    assert local.model == "llama3:8b"
    with pytest.raises(SettingsError, match=r"^SWITCHBOARD_MODEL_WORKERS: unknown provider groq:"):
        load_settings(None, {"SWITCHBOARD_MODEL_WORKERS": "groq:claude-sonnet-5"})
