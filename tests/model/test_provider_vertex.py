"""`vertex:` models: the anthropic SDK's own AsyncAnthropicVertex, with Google's
Application Default Credentials refreshed against a fake token endpoint, talking to
the fake Vertex (tests/fakes/vertex_api.py); end to end through Slack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.fakes.vertex_api import ACCOUNT, AUDIENCE, JWT_BEARER, FakeVertex
from tests.kits.app_kit import events
from tests.kits.slack_kit import MENTION, heard, posted, slack_app, slack_settings


@pytest.fixture
def vertex() -> Iterator[FakeVertex]:
    with FakeVertex() as server:
        yield server
    assert not server.violations, server.violations


async def test_a_vertex_model_answers_through_slack_and_survives_an_expired_token(
    tmp_path: Path,
    fake: FakeAnthropic,
    slack: FakeSlack,
    vertex: FakeVertex,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = vertex.vertex_env(tmp_path)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", env.pop("GOOGLE_APPLICATION_CREDENTIALS"))
    vertex.responder = heard
    settings = slack_settings(
        tmp_path / "data", fake, slack, SWITCHBOARD_MODEL="vertex:claude-sonnet-5", **env
    )
    async with slack_app(settings):
        slack.post(f"{MENTION} hello vertex", channel="C1")
        await slack.until(posted("heard:"), timeout=30)
        vertex.expire()  # the next call's token is refused: 401, the token refreshed
        slack.post(f"{MENTION} still there?", channel="C1")
        await slack.until(posted("still there?"), timeout=60)
    assert fake.calls == []  # nothing went to Anthropic's own endpoint
    assert vertex.paths[0] == (
        "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-5:streamRawPredict"
    )
    assert vertex.calls[0].body["model"] == "claude-sonnet-5"
    assert "thinking" in vertex.calls[0].body  # the capability map knows the model on Vertex
    assert "401" in vertex.refused
    assert events(tmp_path / "data", "llm.error") == []


async def test_only_a_token_traded_for_the_accounts_signed_jwt_is_accepted(
    tmp_path: Path, vertex: FakeVertex
) -> None:
    """A JWT signed by another key gets no token; a bearer the token endpoint never
    issued gets Vertex's 401."""
    import time

    import aiohttp
    from google.auth import crypt, jwt

    vertex.adc_file(tmp_path)  # the account's real key is known to the fake
    (tmp_path / "other").mkdir()
    other = FakeVertex().adc_file(tmp_path / "other")  # the same account, another key
    now = int(time.time())
    claims = {"iss": ACCOUNT, "aud": AUDIENCE, "iat": now, "exp": now + 3600,
              "scope": "https://www.googleapis.com/auth/cloud-platform"}  # fmt: skip
    forged = jwt.encode(crypt.RSASigner.from_service_account_file(str(other)), claims).decode()
    url = f"{vertex.url}/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/"
    async with aiohttp.ClientSession() as http:
        grant = {"grant_type": JWT_BEARER, "assertion": forged}
        async with http.post(f"{vertex.url}/token", data=grant) as response:
            assert response.status == 400
        headers = {"Authorization": "Bearer ya29.made-up"}
        body = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 5, "messages": []}
        async with http.post(f"{url}claude-sonnet-5:rawPredict", json=body, headers=headers) as r:
            assert r.status == 401
            assert (await r.json())["error"]["status"] == "UNAUTHENTICATED"
    assert vertex.issued == set()
