"""Summaries from any OpenAI-compatible chat-completions server.

``POST {base_url}/chat/completions`` — OpenAI, OpenRouter, vLLM, the llama.cpp server and
Ollama all speak it (``base_url`` includes the ``/v1``). The answer is
``choices[0].message.content``; ``finish_reason == "length"`` means it was cut off.
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

__all__ = ["OpenAICompatProvider"]


def _content_text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a list of parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") in ("text", "output_text")
        ]
        return "".join(texts)
    return None


@dataclass(frozen=True, slots=True)
class OpenAICompatProvider:
    """A :class:`~tinyjuice.summary.SummaryProvider` over chat completions.

    The API key is read from the environment variable ``api_key_env`` on every call and
    sent as a bearer token; it is never stored on the object. ``api_key_env=None`` sends
    no key (local servers).
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
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def with_main_model(self) -> Callable[[], OpenAICompatProvider] | None:
        """The retry the failure policy asks for: the same server with ``fallback_model``.

        ``None`` (no retry) when no fallback model is configured — the pipeline then goes
        straight to the policy (cooldown, fallback summary or abort).
        """
        fallback = self.fallback_model
        if not fallback or fallback == self.model:
            return None
        return lambda: replace(self, model=fallback, fallback_model=None)

    def payload(self, request: SummaryRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (redacted prompt, model, output cap)."""
        return {
            "model": self.model,
            "messages": redacted_prompt(request),
            "max_tokens": max_output_tokens(request, self.max_output_tokens),
            "stream": False,
        }

    def summarize(self, request: SummaryRequest) -> SummaryText:
        return self._complete(
            redacted_prompt(request), max_output_tokens(request, self.max_output_tokens)
        )

    def answer(self, prompt: list[dict[str, str]], max_tokens: int) -> SummaryText:
        """Any chat prompt (a judge's questions): redacted, sent, the answer redacted."""
        red = [{"role": p["role"], "content": redact_text(p["content"])} for p in prompt]
        return self._complete(red, max_tokens)

    def _complete(self, messages: list[dict[str, str]], max_tokens: int) -> SummaryText:
        key = api_key(self.name, self.api_key_env)
        headers = {"content-type": "application/json", "accept": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = self.url
        body = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "stream": False,
        }
        status, data = exchange(self.name, url, headers, body, self.timeout, key)
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise malformed(self.name, url, "no choices[0].message", status) from None
        finish = choice.get("finish_reason") if isinstance(choice, Mapping) else None
        text = _content_text(message.get("content") if isinstance(message, Mapping) else None)
        if finish == "length":
            raise SummaryError(
                FailureClass.TRUNCATED,
                f"provider {self.name!r}: the summary was cut off (finish_reason length); "
                "not inserted",
                status=status,
            )
        if text is None or not text.strip():
            raise SummaryError(
                FailureClass.EMPTY,
                f"provider {self.name!r}: the model returned an empty summary; not inserted",
                status=status,
            )
        model = data.get("model") if isinstance(data.get("model"), str) else self.model
        return SummaryText(text=scrub(text, key).strip(), model=model)
