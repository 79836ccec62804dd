"""The batch filter reads source fields (``extra``, the raw record kept for byte-identical
writes) as :func:`redact_json` does: each string leaf on its own, keys only by name.

Whatever the full path (:func:`redact_message` on every message) changes, the filtered
path (:func:`redact_messages`) changes identically, for records holding planted secrets
of every catalogue kind in keys, values, nested JSON strings and escaped forms; and a
record whose keys merely mention a needle ("input_tokens") or whose values hold
newlines is no longer redacted in full.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import CORPUS, NEGATIVES
from test_redact_batch import assert_batch_equals_one_by_one
from test_redact_catalogue import CATALOGUE, Case

import tinyjuice.redact as redact_mod
from tinyjuice.model import Message, Role, TextPart, ThinkingPart, ToolCall
from tinyjuice.redact import SecretKind, redact_message, redact_messages

_SECRETS = [c.text.format(c.secret) for c in CATALOGUE] + [c[1] for c in CORPUS]
_NEAR = [c.negative for c in CATALOGUE] + NEGATIVES


def _escaped(text: str) -> str:
    """``text`` as it looks inside a JSON string (quotes, newlines, slashes escaped)."""
    return orjson.dumps(text).decode()[1:-1]


def _unicode_escaped(text: str) -> str:
    """``text`` with its letters a, e, s and o written as ``\\u`` escapes."""
    return "".join(f"\\u{ord(c):04x}" if c in "aeso" else c for c in text)


_BITS = (
    _SECRETS
    + _NEAR
    + [_escaped(s) for s in _SECRETS[::2]]
    + [_unicode_escaped(s) for s in _SECRETS[1::3]]
    + [orjson.dumps({"output": s}).decode() for s in _SECRETS[::3]]
    + [orjson.dumps([orjson.dumps(s).decode()]).decode() for s in _SECRETS[1::4]]
    + [
        "plain words",
        "line one\nline two",
        "C:\\Users\\me\\token.txt",
        "\\n",
        "\\u0061",
        '"token": 5',
        "input_tokens",
        "cache_read_input_tokens: 12",
        "key: value",
        "",
        "[REDACTED:sensitive_key]",
        "café ÅNGSTRÖM İ",
    ]
)
_leaf_text = st.lists(st.sampled_from(_BITS), max_size=4).map(" ".join)
_KEYS = [
    # Mentions a needle but is no secret name.
    "input_tokens", "cache_creation_input_tokens", "max_tokens", "token_count", "keys",
    "toolUseResult", "usage", "content", "stdout", "type", "uuid", "BYPASS",
    # Sensitive names: everything under them is redacted.
    "password", "apiKey", "x-api-key", "Authorization", "client_secret", "auth",
    "GITHUB_TOKEN", "session_key", "cookie",
]  # fmt: skip
_key = st.sampled_from(_KEYS) | st.sampled_from(_BITS)
_scalar = st.none() | st.booleans() | st.integers(-5, 10**12) | st.floats(allow_nan=False)


def _record(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """JSON-like values with string leaves drawn from ``leaf``; some nested records are
    serialised into a string (JSON in a string of the record), and tuples stand in for
    lists now and then."""
    base = leaf | _scalar
    return st.recursive(
        base,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=3).map(tuple)
            | st.dictionaries(_key, inner, max_size=4)
            | st.dictionaries(_key, inner, max_size=3).map(lambda d: orjson.dumps(d).decode())
        ),
        max_leaves=12,
    )


_records = st.dictionaries(_key, _record(_leaf_text), max_size=5)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from([Role.USER, Role.ASSISTANT, Role.TOOL]))
    parts: tuple[TextPart | ThinkingPart, ...] = tuple(
        TextPart(draw(_leaf_text), extra=draw(_records)) for _ in range(draw(st.integers(0, 2)))
    )
    if draw(st.booleans()):
        parts += (ThinkingPart(draw(_leaf_text), extra=draw(_records)),)
    calls: tuple[ToolCall, ...] = ()
    if role is Role.ASSISTANT and draw(st.booleans()):
        args = orjson.dumps(draw(st.dictionaries(_key, _leaf_text, max_size=3))).decode()
        calls = (ToolCall("c1", "terminal", args, extra=draw(_records)),)
    return Message(role, parts, calls, reasoning=draw(st.none() | _leaf_text), extra=draw(_records))


@settings(max_examples=300, deadline=None)
@given(st.lists(_message(), max_size=6))
def test_filtered_records_redact_as_the_full_path(messages: list[Message]) -> None:
    assert_batch_equals_one_by_one(messages)


@settings(max_examples=200, deadline=None)
@given(st.lists(_records, min_size=1, max_size=6))
def test_records_alone_redact_as_the_full_path(records: list[dict[str, Any]]) -> None:
    # The shape of a Claude Code message: a short text, the raw record in extra.
    assert_batch_equals_one_by_one(
        [Message(Role.ASSISTANT, (TextPart("ok"),), extra=r) for r in records]
    )


def _where(case: Case) -> list[tuple[str, Any]]:
    text = case.text.format(case.secret)
    return [
        ("value", {"type": "user", "usage": {"input_tokens": 3}, "note": text}),
        ("list", {"toolUseResult": {"stdout": ["line one\nline two", text]}}),
        ("escaped", {"output": _escaped(text)}),
        ("nested json", {"toolUseResult": orjson.dumps({"stdout": text}).decode()}),
        ("nested twice", {"content": orjson.dumps([orjson.dumps(text).decode()]).decode()}),
        ("sensitive key", {"usage": {"input_tokens": 3}, "apiKey": case.secret}),
    ]


@pytest.mark.parametrize("case", CATALOGUE, ids=lambda c: str(c.kind))
def test_every_catalogue_secret_in_a_record_is_caught(case: Case) -> None:
    places = _where(case)
    messages = [Message(Role.TOOL, (TextPart("done"),), extra=r) for _, r in places]
    batch, changed = redact_messages(messages)
    assert batch == [redact_message(m) for m in messages]
    assert changed == len(places)
    for (where, _), m in zip(places, batch, strict=True):
        assert case.secret not in orjson.dumps(m.extra).decode(), where
        assert _escaped(case.secret) not in orjson.dumps(m.extra).decode(), where


def test_the_catalogue_has_every_kind() -> None:
    assert {c.kind for c in CATALOGUE} == set(SecretKind)


def test_needle_keys_and_newlines_do_not_send_a_record_down_the_full_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Claude Code record: "input_tokens" keys in usage, a tool result with newlines
    # (escapes once serialised). No secret: nothing is redacted in full.
    record = {
        "type": "user",
        "message": {"usage": {"input_tokens": 12, "cache_read_input_tokens": 3}},
        "toolUseResult": {"stdout": "a\nb\tc \\ d", "max_tokens": 5, "keys": ["x"]},
    }
    messages = [Message(Role.TOOL, (TextPart("a\nb"),), extra=record) for _ in range(3)]
    calls: list[Message] = []
    real = redact_mod.redact_message

    def counting(m: Message, text: Callable[[str], str] | None = None) -> Message:
        calls.append(m)
        return real(m, text)

    monkeypatch.setattr(redact_mod, "redact_message", counting)
    batch, changed = redact_messages(messages)
    assert changed == 0 and calls == []
    assert all(a is b for a, b in zip(batch, messages, strict=True))
    # A sensitive key still sends it there, and its value is redacted.
    keyed = Message(Role.TOOL, (TextPart("ok"),), extra={**record, "password": "hunter2"})
    batch, changed = redact_messages([keyed])
    assert changed == 1 and len(calls) == 1
    assert batch[0].extra["password"] == "[REDACTED:sensitive_key]"


def test_a_long_text_held_twice_is_scanned_once_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Claude Code tool result: its output is the text and again in the record's
    # toolUseResult (equal strings, not the same object), with a candidate ("api_key: 1").
    output = "".join(f"row {i}: api_key: {i}\n" for i in range(8))
    secret = CATALOGUE[0].text.format(CATALOGUE[0].secret)

    def message(text: str) -> Message:
        copy = "".join(list(text))  # an equal string, another object
        return Message(Role.TOOL, (TextPart(text),), extra={"toolUseResult": {"stdout": copy}})

    messages = [message(output), message(output + secret), message(output + secret)]
    scanned: list[str] = []
    real = redact_mod._redacted

    def counting(text: str, *known: bool) -> str:
        scanned.append(text)
        return real(text, *known)

    monkeypatch.setattr(redact_mod, "_redacted", counting)
    batch, changed = redact_messages(messages)
    assert sorted(scanned) == sorted([output, output + secret])
    monkeypatch.setattr(redact_mod, "_redacted", real)
    assert batch == [redact_message(m) for m in messages]
    assert changed == 2 and batch[0] is messages[0]
    assert CATALOGUE[0].secret not in orjson.dumps(batch[2].extra).decode()
