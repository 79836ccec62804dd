"""Summary providers over HTTP (httpx): OpenAI-compatible chat completions and Anthropic.

Both implement :class:`tinyjuice.summary.SummaryProvider` with a synchronous
``summarize(request)``:

- the request is built with :func:`tinyjuice.summary.build_summary_prompt` from a copy
  of the request that is redacted again (the pipeline already redacted it), and the
  finished prompt is redacted once more;
- the answer is redacted before it is returned (and the pipeline redacts it again when
  it renders the summary message);
- the API key is read from the environment variable named by ``api_key_env`` at call
  time; it is never stored on the provider, written anywhere or put into a message;
- every failure is a :class:`~tinyjuice.summary.SummaryError` whose class comes from
  the real HTTP outcome (see :mod:`tinyjuice.providers._http`): 401/403 → auth,
  connection refused/DNS/reset → network, 404 → model not found, 408/504/timeout →
  timeout, 429 → rate limit, 5xx → server, an HTML page or bad JSON → malformed, a body
  cut short → stream closed, no text → empty, ``length``/``max_tokens`` → truncated;
- ``with_main_model`` is the one retry the failure policy asks for (model not found,
  timeout, malformed, stream closed, empty, truncated): it is the same provider with
  ``fallback_model``, or ``None`` when no fallback model is configured.
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
