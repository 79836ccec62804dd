"""Summaries from the Anthropic Messages API.

``POST {base_url}/v1/messages`` with the ``x-api-key`` and ``anthropic-version``
headers. The answer is the text blocks of ``content``; ``stop_reason == "max_tokens"``
means it was cut off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tinyjuice.providers._http import (
    api_key,
    exchange,
    malformed,
    max_output_tokens,
    redacted_prompt,
    scrub,
)
from tinyjuice.redact import redact_text
from tinyjuice.summary import FailureClass, SummaryError, SummaryRequest, SummaryText

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider"]

#: The Messages API version sent in the ``anthropic-version`` header.
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True, slots=True)
class AnthropicProvider:
    """A :class:`~tinyjuice.summary.SummaryProvider` over the Messages API.

    The key is read from the environment variable ``api_key_env`` on every call and sent
    as ``x-api-key``; it is never stored on the object.
    """

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 60.0
    fallback_model: str | None = None
    max_output_tokens: int | None = None

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")

    @property
    def with_main_model(self) -> Callable[[], AnthropicProvider] | None:
        """The same endpoint with ``fallback_model``, or ``None`` when none is configured."""
        fallback = self.fallback_model
        if not fallback or fallback == self.model:
            return None
        return lambda: replace(self, model=fallback, fallback_model=None)

    def payload(self, request: SummaryRequest) -> dict[str, Any]:
        """The JSON body: the system prompt apart, the request as one user turn."""
        return self._body(
            redacted_prompt(request), max_output_tokens(request, self.max_output_tokens)
        )

    def _body(self, prompt: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
        system = "\n\n".join(p["content"] for p in prompt if p["role"] == "system")
        turns = [
            {"role": p["role"], "content": p["content"]} for p in prompt if p["role"] != "system"
        ]
        return {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": turns,
        }

    def summarize(self, request: SummaryRequest) -> SummaryText:
        return self._complete(self.payload(request))

    def answer(self, prompt: list[dict[str, str]], max_tokens: int) -> SummaryText:
        """Any chat prompt (a judge's questions): redacted, sent, the answer redacted."""
        red = [{"role": p["role"], "content": redact_text(p["content"])} for p in prompt]
        return self._complete(self._body(red, max_tokens))

    def _complete(self, body: dict[str, Any]) -> SummaryText:
        key = api_key(self.name, self.api_key_env)
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if key:
            headers["x-api-key"] = key
        url = self.url
        status, data = exchange(self.name, url, headers, body, self.timeout, key)
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            raise malformed(self.name, url, "no content list", status)
        texts = [
            str(block.get("text", ""))
            for block in data["content"]
            if isinstance(block, Mapping) and block.get("type") == "text"
        ]
        text = "".join(texts)
        if data.get("stop_reason") == "max_tokens":
            raise SummaryError(
                FailureClass.TRUNCATED,
                f"provider {self.name!r}: the summary was cut off (stop_reason max_tokens); "
                "not inserted",
                status=status,
            )
        if not text.strip():
            raise SummaryError(
                FailureClass.EMPTY,
                f"provider {self.name!r}: the model returned an empty summary; not inserted",
                status=status,
            )
        model = data.get("model") if isinstance(data.get("model"), str) else self.model
        return SummaryText(text=scrub(text, key).strip(), model=model)
