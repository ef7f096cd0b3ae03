"""A fake of Claude on Amazon Bedrock's runtime API, on 127.0.0.1.

The anthropic SDK's `AsyncAnthropicBedrock` signs each request with SigV4 (botocore,
the usual AWS credential chain) and posts a Messages API body without `model` and
`stream` (the model is in the path) and with an `anthropic_version` to
`/model/{model-id}/invoke-with-response-stream`. Bedrock answers in the AWS event
stream binary framing (`application/vnd.amazon.eventstream`): each message a prelude
(total and header lengths, big-endian, and their CRC32), headers (`:event-type`
`chunk`, `:content-type`, `:message-type` `event`; string-typed), a JSON payload
`{"bytes": <base64 of one Messages API stream event>}`, and the message's CRC32.

This fake checks the signature header is present and well formed (algorithm,
credential scope for service `bedrock` in the region, signed headers, a 64-hex
signature, `X-Amz-Date`) and answers 403 as Bedrock does otherwise; it does not
recompute the signature. The answers are the fake Anthropic's (`responder`, thinking).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from tests.fakes.anthropic_api import FakeAnthropic

REGION = "us-east-1"
KEY_ID = "AKIAFAKEFAKEFAKE0001"
SIGNED = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]{16,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)"
    r"/bedrock/aws4_request, SignedHeaders=(?P<headers>[a-z0-9;-]+), Signature=[0-9a-f]{64}$"
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

    def bedrock_env(self) -> dict[str, str]:
        return {"AWS_REGION": REGION, "ANTHROPIC_BEDROCK_BASE_URL": self.url}

    def aws_credentials(self) -> dict[str, str]:
        """The process environment the AWS credential chain reads first."""
        return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": "fake/secret/key"}

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/model/{model}/invoke-with-response-stream", self._invoke)

    def _stream_response(self) -> web.StreamResponse:
        return EventStreamResponse()

    async def _invoke(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        problem = _unsigned(request)
        if problem:
            self.refused.append(problem)
            kind = {"x-amzn-ErrorType": "UnrecognizedClientException"}
            return web.json_response({"message": problem}, status=403, headers=kind)
        body = await request.json()
        if "model" in body or "stream" in body or not body.pop("anthropic_version", None):
            self.refused.append("400")
            return web.json_response({"message": "Malformed input request"}, status=400)
        self.models_asked.append(request.match_info["model"])
        model = MODEL_ID.sub("", request.match_info["model"])  # the model Bedrock runs
        return await self._answer_body(request, {"model": model, "stream": True, **body})


def _unsigned(request: web.Request) -> str | None:
    """Why the request is not SigV4-signed as Bedrock wants, else None."""
    match = SIGNED.match(request.headers.get("Authorization", ""))
    if match is None:
        return "missing or malformed Authorization (SigV4) header"
    if match["region"] != REGION:
        return f"credential scope names region {match['region']}, not {REGION}"
    signed = match["headers"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return "the signature must cover host and x-amz-date"
    date = request.headers.get("X-Amz-Date", "")
    if not re.match(r"^\d{8}T\d{6}Z$", date) or not date.startswith(match["date"]):
        return "X-Amz-Date missing or not the credential's date"
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
