"""A fake of Claude on Google Vertex AI, and of the OAuth token endpoint that Google's
credentials refresh against, on 127.0.0.1.

The anthropic SDK's `AsyncAnthropicVertex` posts a Messages API body without `model`
(it is in the path) and with an `anthropic_version` to
`/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict`
with `Authorization: Bearer <access token>`, and reads the same server-sent events as
from Anthropic's API. The token comes from google-auth's Application Default
Credentials: here a service-account key file (`adc_file`, a fresh RSA key) whose
`token_uri` is this fake's `/token`; google-auth signs a JWT with it (RS256) and trades
it for an access token there (the JWT bearer grant), as against Google's own token
endpoint. The fake checks the JWT's RS256 signature against the key file's public key,
its issuer, audience and expiry; `expire` revokes every token issued so far. A request without a
token this fake issued gets 401, as Vertex answers; the rest is the fake Anthropic's.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import time
from pathlib import Path

from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.fakes.anthropic_api import FakeAnthropic

#: Vertex's documented `vertex-2023-10-16`, or the dated API version the SDK sends
VERSIONS = re.compile(r"^(vertex-2023-10-16|\d{4}-\d{2}-\d{2})$")
ACCOUNT = "switchboard@proj-1.iam.gserviceaccount.com"
#: google-auth signs for Google's token endpoint whatever `token_uri` it posts to
AUDIENCE = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_tokens = itertools.count(1)


class FakeVertex(FakeAnthropic):
    name = "fake Vertex"

    def __init__(self) -> None:
        super().__init__()
        self.issued: set[str] = set()
        self.paths: list[str] = []
        self.refused: list[str] = []  # why requests were refused (401/400)
        self.public_keys: list[rsa.RSAPublicKey] = []  # of the key files handed out

    def adc_file(self, folder: Path) -> Path:
        """A service account's key file, as the cloud console hands it out."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_keys.append(key.public_key())
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        path = folder / "service-account.json"
        path.write_text(json.dumps({
            "type": "service_account", "project_id": "proj-1", "private_key_id": "k1",
            "private_key": pem, "client_email": ACCOUNT, "client_id": "1",
            "token_uri": f"{self.url}/token",
        }))  # fmt: skip
        return path

    def vertex_env(self, folder: Path) -> dict[str, str]:
        return {
            "CLOUD_ML_REGION": "us-east5",
            "ANTHROPIC_VERTEX_PROJECT_ID": "proj-1",
            "ANTHROPIC_VERTEX_BASE_URL": f"{self.url}/v1",
            "GOOGLE_APPLICATION_CREDENTIALS": str(self.adc_file(folder)),
        }

    def expire(self) -> None:
        """Every token issued so far stops working (a credential expired mid-way)."""
        self.issued.clear()

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/token", self._token)
        app.router.add_post(
            "/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{tail}",
            self._predict,
        )

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        assertion = str(form.get("assertion", ""))
        claims = _claims(assertion)
        if (
            not any(_signed_by(assertion, k) for k in self.public_keys)
            or not isinstance(claims.get("exp"), int)
            or claims["exp"] < time.time()
            or form.get("grant_type") != JWT_BEARER
            or claims.get("iss") != ACCOUNT
            or claims.get("aud") != AUDIENCE
        ):
            return web.json_response({"error": "invalid_grant"}, status=400)
        token = f"ya29.fake-{next(_tokens)}"
        self.issued.add(token)
        return web.json_response(
            {"access_token": token, "expires_in": 3600, "token_type": "Bearer",
             "scope": "https://www.googleapis.com/auth/cloud-platform"}
        )  # fmt: skip

    async def _predict(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        model, _, method = request.match_info["tail"].partition(":")
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.issued:
            self.refused.append("401")
            return _status(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
            )
        body = await request.json()
        if method not in ("rawPredict", "streamRawPredict") or "model" in body:
            self.refused.append("400")
            return _status(400, "INVALID_ARGUMENT", f"bad request to {method!r}")
        if not VERSIONS.match(str(body.pop("anthropic_version", ""))):
            self.refused.append("400 version")
            return _status(400, "INVALID_ARGUMENT", "anthropic_version: required")
        return await self._answer_body(request, {"model": model, **body})


def _signed_by(jwt: str, key: rsa.RSAPublicKey) -> bool:
    """Whether `key` made the JWT's RS256 signature (PKCS#1 v1.5 over SHA-256)."""
    head, _, signature = jwt.rpartition(".")
    try:
        raw = base64.urlsafe_b64decode(signature + "==")
        key.verify(raw, head.encode(), padding.PKCS1v15(), hashes.SHA256())
    except (ValueError, InvalidSignature):
        return False
    return True


def _claims(jwt: str) -> dict[str, object]:
    """The claims of an RS256 JWT of three base64url parts, else {}."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return {}
    try:
        header, claims = (json.loads(base64.urlsafe_b64decode(p + "==")) for p in parts[:2])
    except ValueError:
        return {}
    return claims if header.get("alg") == "RS256" and isinstance(claims, dict) else {}


def _status(code: int, status: str, message: str) -> web.Response:
    """Google's error shape."""
    return web.json_response({"error": {"code": code, "message": message, "status": status}},
                             status=code)  # fmt: skip
