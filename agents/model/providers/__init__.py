"""The model's providers behind one interface (`Backend`, agents/model/providers/base.py).

A configured model is `provider:model` (config/models.py keeps the prefix of every
provider but Anthropic's): `claude-sonnet-5` is Anthropic's (or the Anthropic-compatible
server's at ANTHROPIC_BASE_URL), `openai:gpt-5.2` goes to Chat Completions at
OPENAI_BASE_URL. `Connector` makes one backend per provider, lazily: an SDK is imported
only when a model of its provider is called. `vertex:claude-…` is Claude on Google
Vertex AI through the anthropic SDK's own client (the same Messages API, Google's
credentials), `bedrock:anthropic.claude-…` Claude on Amazon Bedrock through its
`AnthropicBedrock` client (SigV4 with the AWS credential chain).

The transcript stays in Anthropic's block form whatever runs; a provider speaking
another API translates at its edge (base.py says the contract).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.model.providers.base import Backend
from agents.model.providers.offloop import ModelThread, Threaded
from agents.model.providers.sdk_index import install

ANTHROPIC = "anthropic"
install()  # before the SDK's first import: its package indexes read name by name


def split(model: str) -> tuple[str, str]:
    """(provider, the model's name on the wire) of a configured model."""
    provider, sep, name = model.partition(":")
    if sep and provider in ("openai", "vertex", "bedrock"):
        return provider, name
    return ANTHROPIC, model  # a bare name, colons and all (`llama3:8b`)


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where each provider is and its key (from the settings, read once at start)."""

    anthropic_key: str | None = None
    anthropic_base_url: str | None = None
    openai_key: str | None = None
    openai_base_url: str | None = None
    #: Claude on Vertex AI: region, project (else the credentials'), base URL (tests)
    vertex_region: str | None = None
    vertex_project: str | None = None
    vertex_base_url: str | None = None
    #: Claude on Bedrock: region, base URL (tests); the AWS credential chain signs
    bedrock_region: str | None = None
    bedrock_base_url: str | None = None


class Connector:
    """One backend per provider, made at its first use; their calls run in the model
    thread (agents/model/providers/offloop.py), off the bot's event loop."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints
        self._backends: dict[str, Backend] = {}
        self.thread = ModelThread()

    def __call__(self, provider: str) -> Backend:
        if provider not in self._backends:
            self._backends[provider] = Threaded(self._make(provider), self.thread)
        return self._backends[provider]

    def made(self) -> list[Backend]:
        return list(self._backends.values())

    async def close(self) -> None:
        """Every backend made closed (its client's connections), then the model thread."""
        for backend in self.made():
            await backend.close()
        self.thread.stop()

    def _make(self, provider: str) -> Backend:
        e = self.endpoints
        if provider == "openai":
            from agents.model.providers.openai_chat import OpenAIBackend

            return OpenAIBackend(lambda: _openai(e))
        from agents.model.providers.anthropic import AnthropicBackend

        if provider == "vertex":
            return AnthropicBackend(lambda: _vertex(e))
        if provider == "bedrock":
            return AnthropicBackend(lambda: _bedrock(e))
        return AnthropicBackend(lambda: _anthropic(e))


def _anthropic(e: Endpoints) -> Any:
    """The SDK's client on its aiohttp transport (`DefaultAioHttpClient`, the SDK's own
    option; aiohttp is loaded for Slack and the operator's server anyway): each streamed
    event costs about a third less CPU than through httpx's default transport
    (httpcore, h11 and anyio per chunk). Proxies from the environment and the CA bundle
    are as the default's (httpx's own settings). Vertex's and Bedrock's clients too."""
    from anthropic import AsyncAnthropic, DefaultAioHttpClient

    return AsyncAnthropic(
        api_key=e.anthropic_key or "unset",
        base_url=e.anthropic_base_url,
        http_client=DefaultAioHttpClient(),
    )


def _vertex(e: Endpoints) -> Any:
    """Google's Application Default Credentials (a service account, workload identity,
    `gcloud auth application-default login`), refreshed by the SDK as they expire."""
    from anthropic import AsyncAnthropicVertex, DefaultAioHttpClient

    region, http = e.vertex_region or "global", DefaultAioHttpClient()
    if e.vertex_project:
        return AsyncAnthropicVertex(
            region=region, project_id=e.vertex_project, base_url=e.vertex_base_url, http_client=http
        )
    return AsyncAnthropicVertex(region=region, base_url=e.vertex_base_url, http_client=http)


def _bedrock(e: Endpoints) -> Any:
    """botocore's credential chain: environment, profiles (AWS_PROFILE), SSO, the
    instance's or the pod's role; temporary credentials are refreshed as they expire."""
    from anthropic import AsyncAnthropicBedrock, DefaultAioHttpClient

    return AsyncAnthropicBedrock(
        aws_region=e.bedrock_region, base_url=e.bedrock_base_url, http_client=DefaultAioHttpClient()
    )


def _openai(e: Endpoints) -> Any:
    """On the SDK's aiohttp transport too, as `_anthropic` (and Vertex's, Bedrock's)."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    return AsyncOpenAI(
        api_key=e.openai_key or "unset",
        base_url=e.openai_base_url,
        http_client=DefaultAioHttpClient(),
    )
