"""`bedrock:` models: the anthropic SDK's own AsyncAnthropicBedrock, SigV4-signed by
botocore from the AWS credential chain (here the environment), against the fake
Bedrock runtime (tests/fakes/bedrock_api.py: AWS event stream framing); end to end
through Slack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.bedrock_api import FakeBedrock
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events
from tests.kits.slack_kit import MENTION, heard, posted, slack_app, slack_settings

MODEL = "bedrock:us.anthropic.claude-sonnet-5-v1:0"


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBedrock]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    with FakeBedrock() as server:
        for name, value in server.aws_credentials().items():
            monkeypatch.setenv(name, value)
        yield server
    assert not server.violations, server.violations


async def test_a_bedrock_model_answers_through_slack(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, bedrock: FakeBedrock
) -> None:
    bedrock.responder = heard
    settings = slack_settings(
        tmp_path, fake, slack, SWITCHBOARD_MODEL=MODEL, **bedrock.bedrock_env()
    )
    async with slack_app(settings):
        slack.post(f"{MENTION} hello bedrock", channel="C1")
        await slack.until(posted("heard:"), timeout=30)
        slack.post(f"{MENTION} and again", channel="C1")
        await slack.until(posted("and again"), timeout=30)
    assert fake.calls == []
    assert bedrock.refused == []
    assert bedrock.models_asked[0] == "us.anthropic.claude-sonnet-5-v1:0"
    assert "thinking" in bedrock.calls[0].body  # the capability map knows it on Bedrock
    assert events(tmp_path, "llm.error") == []


async def test_unsigned_requests_are_refused(
    tmp_path: Path, fake: FakeAnthropic, slack: FakeSlack, bedrock: FakeBedrock
) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        url = f"{bedrock.url}/model/m/invoke-with-response-stream"
        async with http.post(url, json={"messages": []}) as response:
            assert response.status == 403
    assert bedrock.refused == ["missing or malformed Authorization (SigV4) header"]
