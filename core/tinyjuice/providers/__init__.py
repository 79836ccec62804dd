"""Summary providers over HTTP (httpx): OpenAI-compatible chat completions and Anthropic.

Details: docs/providers.md (`tinyjuice.providers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from tinyjuice.providers.anthropic import ANTHROPIC_VERSION, AnthropicProvider
from tinyjuice.providers.endpoint import ENDPOINT_SETTINGS, Endpoint
from tinyjuice.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicProvider",
    "Endpoint",
    "OpenAICompatProvider",
    "ProviderConfig",
    "ProviderKind",
    "make_provider",
]


class ProviderKind(StrEnum):
    #: Any OpenAI-compatible chat-completions server.
    OPENAI = "openai"
    #: The Anthropic Messages API.
    ANTHROPIC = "anthropic"


@dataclass(frozen=True, slots=True)
class ProviderConfig(Endpoint):
    """One configured provider: an endpoint and which API it speaks (``kind=``)."""

    kind: ProviderKind = field(kw_only=True)


def make_provider(config: ProviderConfig) -> OpenAICompatProvider | AnthropicProvider:
    """The provider object for ``config``."""
    kind = ProviderKind(config.kind)
    cls = AnthropicProvider if kind is ProviderKind.ANTHROPIC else OpenAICompatProvider
    return cls(config.name, **{key: getattr(config, key) for key in ENDPOINT_SETTINGS})
