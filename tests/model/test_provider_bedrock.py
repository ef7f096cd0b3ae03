"""`bedrock:` models: the anthropic SDK's own AsyncAnthropicBedrock, SigV4-signed by
botocore from the AWS credential chain (the environment, a shared credentials file),
against the fake Bedrock runtime (tests/fakes/bedrock_api.py: AWS event stream framing,
each signature recomputed); end to end through Slack, credentials expiring mid-way."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from config.settings import Settings
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.bedrock_api import (
    BAD_SIGNATURE,
    EXPIRED,
    INVALID_TOKEN,
    KEY_ID,
    MISSING,
    REGION,
    SECRET,
    FakeBedrock,
)
from tests.fakes.slack_api import FakeSlack
from tests.kits.app_kit import events
from tests.kits.slack_kit import MENTION, heard, posted, slack_app, slack_settings, texts

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


async def test_only_a_signature_botocore_recomputes_is_accepted(bedrock: FakeBedrock) -> None:
    """The fake recomputes each signature from the key's secret, as Bedrock does: a
    missing, forged or stale one is refused in Bedrock's error shape."""
    import aiohttp
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = f"{bedrock.url}/model/{MODEL[8:]}/invoke-with-response-stream"
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10,
                       "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip

    def signed(key: str, secret: str, data: str = body) -> dict[str, str]:
        request = AWSRequest(method="POST", url=url, data=data,
                             headers={"Content-Type": "application/json"})  # fmt: skip
        SigV4Auth(Credentials(key, secret), "bedrock", REGION).add_auth(request)
        return dict(request.headers.items())

    async with aiohttp.ClientSession() as http:

        async def post(headers: dict[str, str], data: str = body) -> tuple[int, str, bytes]:
            async with http.post(url, data=data, headers=headers) as response:
                kind = response.headers.get("x-amzn-ErrorType", "").partition(":")[0]
                return response.status, kind, (await response.read())

        good = signed(KEY_ID, SECRET)
        assert (await post(good))[0] == 200
        assert (await post({"Content-Type": "application/json"}))[:2] == (403, MISSING)
        assert (await post(signed(KEY_ID, "not/the/secret")))[:2] == (403, BAD_SIGNATURE)
        assert (await post(good, body.replace("hi", "ho")))[:2] == (403, BAD_SIGNATURE)
        status, kind, said = await post(signed("AKIAUNKNOWNKEY000001", SECRET))
        assert (status, kind) == (403, INVALID_TOKEN) and b'"message"' in said
        bedrock.expire()
        assert (await post(signed(KEY_ID, SECRET)))[:2] == (403, EXPIRED)
    assert bedrock.refused == [MISSING, BAD_SIGNATURE, BAD_SIGNATURE, INVALID_TOKEN, EXPIRED]
    bedrock.refused.clear()


@dataclass
class Renewing:
    """Slack in front of the Bedrock model (answering `heard: ...`), whose credentials
    the AWS chain reads from a shared credentials file the test renews."""

    slack: FakeSlack
    bedrock: FakeBedrock
    settings: Callable[..., Settings]  # the bot's settings, with more variables
    path: Path  # the shared credentials file

    def write(self, key: str, secret: str) -> None:
        self.path.write_text(
            f"[default]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n"
        )

    def renew(self) -> None:
        """New temporary keys written to the file, as `aws sso login`, a
        credential_process or a rotation job does."""
        self.write(*self.bedrock.rotate())


@pytest.fixture
def renewing(
    tmp_path: Path,
    fake: FakeAnthropic,
    slack: FakeSlack,
    bedrock: FakeBedrock,
    monkeypatch: pytest.MonkeyPatch,
) -> Renewing:
    """The AWS credential chain reads a shared credentials file, not the environment."""
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()  # no session of another test's credentials
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    path = tmp_path / "aws-credentials"
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(path))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bedrock.responder = heard
    env = {"SWITCHBOARD_MODEL": MODEL, **bedrock.bedrock_env()}
    renewing = Renewing(
        slack,
        bedrock,
        lambda **more: slack_settings(tmp_path / "data", fake, slack, **env, **more),
        path,
    )
    renewing.write(KEY_ID, SECRET)
    return renewing


async def test_credentials_that_expire_mid_conversation_are_renewed_from_the_chain(
    tmp_path: Path, renewing: Renewing
) -> None:
    slack, bedrock = renewing.slack, renewing.bedrock
    async with slack_app(renewing.settings()):
        slack.post(f"{MENTION} hello bedrock", channel="C1")
        await slack.until(posted("heard:"), timeout=30)
        bedrock.expire()
        renewing.renew()  # renewed outside, as temporary keys are
        slack.post(f"{MENTION} still there?", channel="C1")
        await slack.until(posted("still there?"), timeout=30)
    assert bedrock.refused == [EXPIRED]  # refused once, then signed with the new key
    assert events(tmp_path / "data", "llm.error") == []
    assert events(tmp_path / "data", "llm.unavailable") == []


async def test_expired_credentials_never_renewed_keep_the_message_until_they_are(
    tmp_path: Path, renewing: Renewing
) -> None:
    """Nobody renews them yet: the person hears once why, and the message is answered
    when the operator renews the credentials; nothing is lost, nothing said twice."""
    slack, bedrock = renewing.slack, renewing.bedrock
    settings = renewing.settings(
        SWITCHBOARD_LLM_RETRY_BASE_SECONDS="0.05", SWITCHBOARD_LLM_RETRY_MAX_SECONDS="0.2"
    )
    async with slack_app(settings):
        bedrock.expire()
        slack.post(f"{MENTION} are you there?", channel="C1")
        await slack.until(posted("cloud credentials expired"), timeout=30)
        await slack.until(lambda _: len(bedrock.refused) >= 6, timeout=30)  # retried, in vain
        renewing.renew()
        await slack.until(posted("are you there?"), timeout=30)
    said = texts(slack)
    assert sum("credentials expired" in t for t in said) == 1, said
    assert sum("heard:" in t for t in said) == 1, said
    assert set(bedrock.refused) == {EXPIRED}
    assert events(tmp_path / "data", "llm.error") == []
