"""Summary providers over HTTP (httpx): OpenAI-compatible chat completions and Anthropic.

Details: docs/providers.md (`tinyjuice.providers`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tinyjuice.providers.anthropic import ANTHROPIC_VERSION, AnthropicProvider
from tinyjuice.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicProvider",
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
class ProviderConfig:
    """One configured provider. Holds the *name* of the key variable, never the key."""

    name: str
    kind: ProviderKind
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 60.0
    fallback_model: str | None = None


def make_provider(config: ProviderConfig) -> OpenAICompatProvider | AnthropicProvider:
    """The provider object for ``config``."""
    kind = ProviderKind(config.kind)
    cls = AnthropicProvider if kind is ProviderKind.ANTHROPIC else OpenAICompatProvider
    return cls(
        name=config.name,
        base_url=config.base_url,
        model=config.model,
        api_key_env=config.api_key_env,
        timeout=config.timeout,
        fallback_model=config.fallback_model,
    )
