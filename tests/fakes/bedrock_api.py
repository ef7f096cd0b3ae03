"""A fake of Claude on Amazon Bedrock's runtime API, on 127.0.0.1.

The anthropic SDK's `AsyncAnthropicBedrock` signs each request with SigV4 (botocore,
the usual AWS credential chain) and posts a Messages API body without `model` and
`stream` (the model is in the path) and with an `anthropic_version` to
`/model/{model-id}/invoke-with-response-stream`. Bedrock answers in the AWS event
stream binary framing (`application/vnd.amazon.eventstream`): each message a prelude
(total and header lengths, big-endian, and their CRC32), headers (`:event-type`
`chunk`, `:content-type`, `:message-type` `event`; string-typed), a JSON payload
`{"bytes": <base64 of one Messages API stream event>}`, and the message's CRC32.

This fake verifies the signature as Bedrock does: it recomputes it with botocore's own
SigV4 signer from the request as received (method, path, the signed headers, the body's
hash, `X-Amz-Date`) and the secret of the access key the credential names
(`keys`, the test credentials the fake knows), and answers 403 in Bedrock's error shape
(`x-amzn-ErrorType` and `{"message": ...}`) for a malformed header, an unknown key
(`UnrecognizedClientException`), a signature that does not match
(`InvalidSignatureException`) or a key that `expire` revoked
(`ExpiredTokenException`). The answers are the fake Anthropic's (`responder`, thinking).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from typing import Any, Self

from aiohttp import web
from multidict import CIMultiDict

from tests.fakes.anthropic_api import FakeAnthropic

REGION = "us-east-1"
KEY_ID = "AKIAFAKEFAKEFAKE0001"
SECRET = "fake/secret/key"
#: Bedrock's error types for a refused signature (its `x-amzn-ErrorType` header)
MISSING = "MissingAuthenticationTokenException"
INVALID_TOKEN = "UnrecognizedClientException"
BAD_SIGNATURE = "InvalidSignatureException"
EXPIRED = "ExpiredTokenException"
SIGNED = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]{16,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)"
    r"/bedrock/aws4_request, SignedHeaders=(?P<headers>[a-z0-9;-]+), "
    r"Signature=(?P<sig>[0-9a-f]{64})$"
)
#: a Bedrock model id around Anthropic's name: `us.anthropic.claude-sonnet-5-v1:0`
MODEL_ID = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.|-v\d+(?::\d+)?$")
EVENTSTREAM = "application/vnd.amazon.eventstream"


class FakeBedrock(FakeAnthropic):
    name = "fake Bedrock"

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []
        self.refused: list[str] = []
        self.models_asked: list[str] = []
        #: the test credentials it knows: access key id -> secret (session token if any)
        self.keys: dict[str, tuple[str, str | None]] = {KEY_ID: (SECRET, None)}
        self.expired: set[str] = set()

    def bedrock_env(self) -> dict[str, str]:
        return {"AWS_REGION": REGION, "ANTHROPIC_BEDROCK_BASE_URL": self.url}

    def __enter__(self) -> Self:
        # The SDK caches one botocore session (and the credentials it resolved) per
        # process: a test that ran before in this process must not lend it its keys. A new
        # bot process starts with none, as this fake's tests should.
        from agents.model.providers.anthropic import _new_aws_session

        _new_aws_session()
        super().__enter__()
        return self

    def aws_credentials(self) -> dict[str, str]:
        """The process environment the AWS credential chain reads first."""
        return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET}

    def rotate(self) -> tuple[str, str]:
        """New temporary credentials (a key id, its secret); the old keys stay known."""
        key = f"ASIAFAKEROTATED{len(self.keys):05d}"
        secret = f"rotated/secret/{len(self.keys)}"
        self.keys[key] = (secret, None)
        return key, secret

    def expire(self) -> None:
        """Every key known so far expires (temporary credentials past their time)."""
        self.expired |= set(self.keys)

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/model/{model}/invoke-with-response-stream", self._invoke)

    def _stream_response(self) -> web.StreamResponse:
        return EventStreamResponse()

    async def _invoke(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        raw = await request.read()
        problem = _unsigned(request) or self._unverified(request, raw)
        if problem:
            kind, message = problem
            self.refused.append(kind)
            headers = {
                "x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.coral.service/"
            }
            return web.json_response({"message": message}, status=403, headers=headers)
        body = json.loads(raw)
        if "model" in body or "stream" in body or not body.pop("anthropic_version", None):
            self.refused.append("400")
            return web.json_response({"message": "Malformed input request"}, status=400)
        self.models_asked.append(request.match_info["model"])
        model = MODEL_ID.sub("", request.match_info["model"])  # the model Bedrock runs
        return await self._answer_body(request, {"model": model, "stream": True, **body})

    def _unverified(self, request: web.Request, body: bytes) -> tuple[str, str] | None:
        """The signature recomputed with botocore's signer from the key's secret: why it
        is refused, else None."""
        match = SIGNED.match(request.headers["Authorization"])
        assert match is not None  # _unsigned checked the form
        key = match["key"]
        if key not in self.keys:
            return INVALID_TOKEN, "The security token included in the request is invalid."
        if key in self.expired:
            return EXPIRED, "The security token included in the request is expired"
        secret, token = self.keys[key]
        if (
            signature(request, body, match["headers"].split(";"), key, secret, token)
            != match["sig"]
        ):
            return BAD_SIGNATURE, (
                "The request signature we calculated does not match the signature you "
                "provided. Check your AWS Secret Access Key and signing method."
            )
        return None


def signature(
    request: web.Request, body: bytes, signed: list[str], key: str, secret: str, token: str | None
) -> str:
    """The SigV4 signature of the request as received, by botocore's own signer."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    headers = {name: request.headers[name] for name in signed if name in request.headers}
    url = f"http://{request.headers['Host']}{request.raw_path}"
    aws = AWSRequest(method=request.method, url=url, headers=headers, data=body)
    aws.context["timestamp"] = request.headers["X-Amz-Date"]
    signer = SigV4Auth(Credentials(key, secret, token), "bedrock", REGION)
    canonical = signer.canonical_request(aws)
    return str(signer.signature(signer.string_to_sign(aws, canonical), aws))


def _unsigned(request: web.Request) -> tuple[str, str] | None:
    """Why the request is not SigV4-signed as Bedrock wants (its error type and
    message), else None."""
    match = SIGNED.match(request.headers.get("Authorization", ""))
    if match is None:
        return MISSING, "Missing Authentication Token"
    if match["region"] != REGION:
        return (
            BAD_SIGNATURE,
            f"Credential should be scoped to a valid region, not '{match['region']}'.",
        )
    signed = match["headers"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return BAD_SIGNATURE, "The signature must cover host and x-amz-date."
    date = request.headers.get("X-Amz-Date", "")
    if not re.match(r"^\d{8}T\d{6}Z$", date) or not date.startswith(match["date"]):
        return BAD_SIGNATURE, "X-Amz-Date missing or not the credential's date."
    return None


class EventStreamResponse(web.StreamResponse):
    """A response that frames each server-sent event written to it (`event: …\\ndata:
    …\\n\\n`) as one AWS event stream `chunk` message."""

    def __init__(self) -> None:
        super().__init__(headers=CIMultiDict({"Content-Type": EVENTSTREAM}))

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        for line in bytes(data).decode().splitlines():
            if line.startswith("data: "):
                await super().write(frame(json.loads(line[6:])))


def frame(event: dict[str, Any]) -> bytes:
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode()})
    return message(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        payload.encode(),
    )


def message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event stream message: prelude, its CRC, headers, payload, the message CRC."""
    encoded = b"".join(
        struct.pack(">B", len(k)) + k.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode()
        for k, v in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", binascii.crc32(prelude))
    body = head + encoded + payload
    return body + struct.pack(">I", binascii.crc32(body))
