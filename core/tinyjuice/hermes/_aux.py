"""Summaries through Hermes' own auxiliary LLM client (``agent.auxiliary_client``).

The request is tinyjuice's summary prompt (redacted again, like every tinyjuice
provider); Hermes' ``call_llm(task="compression", main_runtime=…)`` picks the model
from ``auxiliary.compression`` in its config or the main runtime, as Hermes' built-in
compressor does. Hermes' errors become :class:`~tinyjuice.summary.SummaryError` classes,
so tinyjuice's failure policy applies: auth (401/402/403, missing credentials) and
network errors keep the original messages; other failures get the fallback summary.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tinyjuice.summary import (
    FailureClass,
    SummaryError,
    SummaryProvider,
    SummaryRequest,
    SummaryText,
    classify_http_status,
)

__all__ = [
    "HermesAuxProvider",
    "aux_client_available",
    "classify_hermes_error",
    "default_provider",
]

_AUX = "agent.auxiliary_client"


def aux_client_available() -> bool:
    """Whether Hermes' auxiliary client can be imported here."""
    try:
        return importlib.util.find_spec(_AUX) is not None
    except (ImportError, ValueError):
        return False


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def classify_hermes_error(exc: BaseException, is_connection_error: Any = None) -> FailureClass:
    """The failure class of an exception from Hermes' ``call_llm``."""
    text = str(exc).lower()
    if isinstance(exc, RuntimeError) and "no llm provider configured" in text:
        return FailureClass.NO_PROVIDER
    status = _status_of(exc)
    if status in (401, 402, 403):
        return FailureClass.AUTH
    if status is not None:
        return classify_http_status(status)
    if "timed out" in text or "timeout" in type(exc).__name__.lower():
        return FailureClass.TIMEOUT
    if callable(is_connection_error) and is_connection_error(exc):
        return FailureClass.NETWORK
    if any(k in text for k in ("api key", "unauthorized", "authentication")):
        return FailureClass.AUTH
    return FailureClass.OTHER


def _content(response: Any) -> str:
    message = response.choices[0].message
    content = message.get("content") if isinstance(message, dict) else message.content
    return content if isinstance(content, str) else ""


@dataclass(frozen=True, slots=True)
class HermesAuxProvider:
    """A :class:`~tinyjuice.summary.SummaryProvider` over Hermes' ``call_llm``."""

    #: Hermes' main runtime (model, provider, base_url, api_key, api_mode), passed to
    #: ``call_llm`` as ``main_runtime``; kept out of ``repr`` (it holds the key).
    runtime: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return "hermes-auxiliary"

    def summarize(self, request: SummaryRequest) -> SummaryText:
        from tinyjuice.providers._http import redacted_prompt

        aux = importlib.import_module(_AUX)
        kwargs: dict[str, Any] = {
            "task": "compression",
            "main_runtime": dict(self.runtime),
            "messages": redacted_prompt(request),
        }
        try:
            with aux.aux_interrupt_protection():
                response = aux.call_llm(**kwargs)
            text = _content(response)
        except SummaryError:
            raise
        except Exception as exc:
            failure = classify_hermes_error(exc, getattr(aux, "_is_connection_error", None))
            raise SummaryError(
                failure, f"Hermes auxiliary client: {type(exc).__name__}", status=_status_of(exc)
            ) from None
        if not text.strip():
            raise SummaryError(FailureClass.EMPTY, "Hermes auxiliary client: empty summary")
        return SummaryText(text, model=self.runtime.get("model") or None)


#: Environment variables naming a tinyjuice provider for when Hermes' client is absent.
ENV_BASE_URL = "TINYJUICE_SUMMARY_BASE_URL"
ENV_MODEL = "TINYJUICE_SUMMARY_MODEL"
ENV_KEY_VAR = "TINYJUICE_SUMMARY_API_KEY_ENV"


def default_provider(
    runtime: Mapping[str, str], env: Mapping[str, str] | None = None
) -> SummaryProvider | None:
    """Hermes' auxiliary client when importable; else the OpenAI-compatible tinyjuice
    provider ``TINYJUICE_SUMMARY_BASE_URL`` / ``_MODEL`` name (the key is read from the
    variable ``TINYJUICE_SUMMARY_API_KEY_ENV`` names); else None (the fallback summary)."""
    if aux_client_available():
        return HermesAuxProvider(dict(runtime))
    env = os.environ if env is None else env
    base_url, model = env.get(ENV_BASE_URL, ""), env.get(ENV_MODEL, "")
    if not (base_url and model):
        return None
    from tinyjuice.providers import ProviderConfig, ProviderKind, make_provider

    config = ProviderConfig(
        name="tinyjuice-env",
        kind=ProviderKind.OPENAI,
        base_url=base_url,
        model=model,
        api_key_env=env.get(ENV_KEY_VAR) or None,
    )
    return make_provider(config)
