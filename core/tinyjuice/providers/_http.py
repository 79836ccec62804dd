"""The HTTP round trip both providers share, with failures mapped to failure classes.

One POST with a JSON body, read to the end under a deadline. What goes wrong becomes a
:class:`~tinyjuice.summary.SummaryError` of the right class:

- no connection (refused, DNS, TLS, an invalid URL) or the connection dropped before a
  response arrived → ``NETWORK``;
- the timeout reached before or while the response arrived → ``TIMEOUT``;
- the connection closed after the headers, in the middle of the body → ``STREAM_CLOSED``;
- an HTTP error status → :func:`classify_status` (auth, model not found, rate limit, …);
- a success status whose body is an HTML page or not JSON → ``MALFORMED``.

Messages name the provider, the URL and what to do; they never hold the API key
(any copy of it is scrubbed) and go through redaction.

httpx is imported only when a request is sent: ``import httpx`` also imports its
command-line module (and with it rich) whenever rich is installed, and importing
tinyjuice must never pull in UI libraries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from tinyjuice.redact import redact_json, redact_message, redact_text
from tinyjuice.summary import (
    FailureClass,
    SummaryError,
    SummaryRequest,
    build_summary_prompt,
    classify_http_status,
)

__all__: list[str] = []

#: Largest response body read (a summary is a few KB; anything far bigger is not one).
MAX_BODY_BYTES = 8 * 1024 * 1024
_SNIPPET = 200


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    retry_after: str | None


def api_key(provider: str, variable: str | None) -> str | None:
    """The key from the environment variable named ``variable``, read now (never stored).

    ``None`` when no variable is configured (local servers need none). A configured but
    unset variable is an ``AUTH`` failure that says which variable to set.
    """
    if not variable:
        return None
    value = os.environ.get(variable, "").strip()
    if not value:
        raise SummaryError(
            FailureClass.AUTH,
            f"provider {provider!r}: the API key variable {variable} is not set; "
            f"export {variable}=<your key> (the key is read from the environment only)",
        )
    return value


def scrub(text: str, key: str | None) -> str:
    """``text`` without the key (if any copy of it is there) and with secrets redacted."""
    if key and len(key) >= 4:
        text = text.replace(key, "[REDACTED:api_key]")
    return redact_text(text)


def redacted_prompt(request: SummaryRequest) -> list[dict[str, str]]:
    """The summary prompt built from a defensively re-redacted request.

    The pipeline redacts the middle before calling a provider; this runs again on every
    message, the previous summary and the focus topic, and once more over the finished
    prompt text (clipping can never expose a secret half).
    """
    red = replace(
        request,
        messages=tuple(redact_message(m) for m in request.messages),
        previous_summary=redact_text(request.previous_summary)
        if request.previous_summary
        else request.previous_summary,
        focus_topic=redact_text(request.focus_topic) if request.focus_topic else None,
    )
    return [
        {"role": p["role"], "content": redact_text(p["content"])} for p in build_summary_prompt(red)
    ]


def max_output_tokens(request: SummaryRequest, configured: int | None) -> int:
    """Room for the answer: the configured cap, else 1.5 × the budget (at least 1,024)."""
    if configured:
        return configured
    return max(1024, int(request.token_budget * 1.5))


def post_json(
    *,
    provider: str,
    url: str,
    headers: Mapping[str, str],
    payload: Mapping[str, Any],
    timeout: float,
    key: str | None,
) -> Reply:
    """POST ``payload`` and read the whole reply within ``timeout`` seconds.

    Every string of the body goes through redaction once more, whatever built it: no
    request body leaves with a secret in it.
    """
    import httpx

    deadline = time.monotonic() + timeout
    data = orjson.dumps(redact_json(payload))
    label = f"provider {provider!r} ({url})"
    try:
        client = httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False)
    except (ValueError, httpx.HTTPError) as exc:  # pragma: no cover - bad proxy env
        raise SummaryError(
            FailureClass.NETWORK, f"{label}: {scrub(str(exc), key)}; nothing was sent"
        ) from None
    with client:
        try:
            request = client.build_request("POST", url, headers=dict(headers), content=data)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            raise SummaryError(
                FailureClass.NETWORK,
                f"{label}: invalid base_url ({scrub(str(exc), key)}); check the config",
            ) from None
        try:
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            raise SummaryError(
                FailureClass.TIMEOUT, f"{label}: no response within {timeout:g} s"
            ) from None
        except httpx.UnsupportedProtocol as exc:
            raise SummaryError(
                FailureClass.NETWORK,
                f"{label}: invalid base_url ({scrub(str(exc), key)}); check the config",
            ) from None
        except httpx.ConnectError as exc:
            raise SummaryError(
                FailureClass.NETWORK,
                f"{label}: could not connect ({scrub(str(exc), key)}); is the server running "
                "and the base_url right?",
            ) from None
        except httpx.HTTPError as exc:
            raise SummaryError(
                FailureClass.NETWORK,
                f"{label}: the connection was reset before a response "
                f"({scrub(str(exc) or type(exc).__name__, key)})",
            ) from None
        try:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise SummaryError(
                        FailureClass.MALFORMED,
                        f"{label}: the response is larger than {MAX_BODY_BYTES:,} bytes; "
                        "not a summary",
                        status=response.status_code,
                    )
                if time.monotonic() > deadline:
                    raise SummaryError(
                        FailureClass.TIMEOUT,
                        f"{label}: the response did not finish within {timeout:g} s",
                        status=response.status_code,
                    )
        except httpx.TimeoutException:
            raise SummaryError(
                FailureClass.TIMEOUT,
                f"{label}: the response stalled (no data for {timeout:g} s)",
                status=response.status_code,
            ) from None
        except httpx.HTTPError as exc:
            raise SummaryError(
                FailureClass.STREAM_CLOSED,
                f"{label}: the connection closed before the response was complete "
                f"({scrub(str(exc) or type(exc).__name__, key)})",
                status=response.status_code,
            ) from None
        finally:
            response.close()
        return Reply(
            status=response.status_code,
            content_type=response.headers.get("content-type", ""),
            body=b"".join(chunks),
            retry_after=response.headers.get("retry-after"),
        )


def _looks_html(reply: Reply) -> bool:
    head = reply.body[:256].lstrip().lower()
    return "html" in reply.content_type.lower() or head.startswith((b"<!doctype", b"<html", b"<"))


def _error_text(value: Any) -> str:
    """The human part of an error body: ``error.message``, ``error`` or ``message``."""
    if isinstance(value, Mapping):
        err = value.get("error", value)
        if isinstance(err, Mapping):
            msg = err.get("message") or err.get("type") or err.get("code")
            return str(msg) if msg is not None else ""
        if isinstance(err, str):
            return err
        msg = value.get("message") or value.get("detail")
        return str(msg) if msg is not None else ""
    return ""


def _error_code(value: Any) -> str:
    if isinstance(value, Mapping):
        err = value.get("error", value)
        if isinstance(err, Mapping):
            return f"{err.get('type') or ''} {err.get('code') or ''}".lower()
    return ""


_MODEL_MISSING = ("model_not_found", "model not found", "does not exist", "unknown model")
_BAD_KEY = ("invalid_api_key", "invalid api key", "incorrect api key", "authentication_error")


def classify_status(status: int, body: bytes) -> FailureClass:
    """The failure class of an error reply: the HTTP status, refined by the error body.

    A 400/422 whose error says the model does not exist is ``MODEL_NOT_FOUND``; one that
    says the key is invalid is ``AUTH`` (some servers answer a bad key with 400).
    """
    cls = classify_http_status(status)
    if status in (400, 422):
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            parsed = None
        words = f"{_error_code(parsed)} {_error_text(parsed)}".lower()
        if "model" in words and any(w in words for w in _MODEL_MISSING):
            return FailureClass.MODEL_NOT_FOUND
        if any(w in words for w in _BAD_KEY):
            return FailureClass.AUTH
    return cls


_HINTS: dict[FailureClass, str] = {
    FailureClass.AUTH: "check the key in the variable named by api_key_env",
    FailureClass.MODEL_NOT_FOUND: "check model (and base_url); set fallback_model to retry "
    "with another model",
    FailureClass.RATE_LIMIT: "rate limited; try again later",
    FailureClass.SERVER: "the server failed; try again later",
    FailureClass.TIMEOUT: "the server timed out; try again later or raise timeout",
}


def http_failure(provider: str, url: str, reply: Reply, key: str | None) -> SummaryError:
    """A :class:`SummaryError` for an HTTP error reply."""
    cls = classify_status(reply.status, reply.body)
    if _looks_html(reply):
        detail = "an HTML page"
    else:
        try:
            detail = _error_text(orjson.loads(reply.body))
        except orjson.JSONDecodeError:
            detail = reply.body[:_SNIPPET].decode("utf-8", "replace")
    detail = " ".join(scrub(detail, key).split())[:_SNIPPET]
    parts = [f"provider {provider!r} ({url}): HTTP {reply.status}"]
    if detail:
        parts.append(detail)
    if reply.retry_after:
        parts.append(f"retry after {reply.retry_after[:20]} s")
    if cls in _HINTS:
        parts.append(_HINTS[cls])
    return SummaryError(cls, "; ".join(parts), status=reply.status)


def parse_success(provider: str, url: str, reply: Reply) -> Any:
    """The JSON body of a success reply; an HTML page or invalid JSON is ``MALFORMED``."""
    label = f"provider {provider!r} ({url})"
    if _looks_html(reply):
        raise SummaryError(
            FailureClass.MALFORMED,
            f"{label}: got an HTML page instead of JSON (a proxy, login or error page?)",
            status=reply.status,
        )
    try:
        return orjson.loads(reply.body)
    except orjson.JSONDecodeError as exc:
        raise SummaryError(
            FailureClass.MALFORMED,
            f"{label}: the response is not valid JSON ({exc.msg} at byte {exc.pos})",
            status=reply.status,
        ) from None


def malformed(provider: str, url: str, what: str, status: int) -> SummaryError:
    return SummaryError(
        FailureClass.MALFORMED,
        f"provider {provider!r} ({url}): unexpected response shape: {what}",
        status=status,
    )


def embedded_error(
    provider: str, url: str, data: Any, status: int, key: str | None
) -> SummaryError | None:
    """An error object inside a success reply (OpenRouter and Anthropic do this)."""
    if not isinstance(data, Mapping):
        return None
    err = data.get("error")
    if err is None and data.get("type") != "error":
        return None
    code = err.get("code") if isinstance(err, Mapping) else None
    kind = str(err.get("type", "")) if isinstance(err, Mapping) else ""
    if isinstance(code, int) and 400 <= code <= 599:
        cls = classify_http_status(code)
    elif kind in ("overloaded_error", "api_error"):
        cls = FailureClass.SERVER
    elif kind == "rate_limit_error":
        cls = FailureClass.RATE_LIMIT
    elif kind in ("authentication_error", "permission_error"):
        cls = FailureClass.AUTH
    elif kind == "not_found_error":
        cls = FailureClass.MODEL_NOT_FOUND
    else:
        cls = FailureClass.OTHER
    detail = " ".join(scrub(_error_text(data), key).split())[:_SNIPPET]
    return SummaryError(
        cls, f"provider {provider!r} ({url}): error in the response: {detail}", status=status
    )


def exchange(
    provider: str,
    url: str,
    headers: dict[str, str],
    payload: Any,
    timeout: float,
    key: str | None,
) -> tuple[int, Any]:
    """POST ``payload``; return the HTTP status and the decoded success body.

    Every failure — transport, HTTP status, an unparseable body, an error object inside
    a 200 — is raised as the matching :class:`SummaryError`, with ``key`` kept out of it.
    """
    reply = post_json(
        provider=provider, url=url, headers=headers, payload=payload, timeout=timeout, key=key
    )
    if not 200 <= reply.status < 300:
        raise http_failure(provider, url, reply, key)
    data = parse_success(provider, url, reply)
    err = embedded_error(provider, url, data, reply.status, key)
    if err is not None:
        raise err
    return reply.status, data
