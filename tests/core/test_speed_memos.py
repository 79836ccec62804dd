"""Per-message work compress() no longer repeats or does for nothing, with the same results.

Redaction remembers its answers for keys and short texts (pure functions; an unchanged
text is still returned as the very object passed in), the fallback's text redaction
answers the items with nothing to redact from one joined scan, and the rules of the
span are looked for only in messages that can hold them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice import redact as redact_mod
from tinyjuice.model import Message, MessageMeta, Role, TextPart
from tinyjuice.redact import is_sensitive_key, redact_json, redact_text
from tinyjuice.summary.fallback import TextRedactor, fallback_summary
from tinyjuice.survival import find_rules
from tinyjuice.tokens import RoughCounter

SECRET = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2


@pytest.fixture
def empty_memos() -> Iterator[None]:
    redact_mod._SHORT_TEXTS.clear()
    redact_mod._SENSITIVE_KEYS.clear()
    yield
    redact_mod._SHORT_TEXTS.clear()
    redact_mod._SENSITIVE_KEYS.clear()


def _count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(module, name)

    def spy(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_a_short_text_is_scanned_once_and_returned_as_itself(
    monkeypatch: pytest.MonkeyPatch, empty_memos: None
) -> None:
    calls = _count_calls(monkeypatch, redact_mod, "find_secrets")
    text = "".join(["assis", "tant"])
    again = "".join(["assist", "ant"])
    assert again == text and again is not text
    assert redact_text(text) is text
    assert redact_text(again) is again  # the object passed in, not the remembered one
    assert len(calls) == 1
    key = f"token={SECRET[:40]}"[:60]
    first = redact_text(key)
    assert first != key and redact_text(key) == first
    assert len(calls) == 2
    long = "x" * 100 + " plain"
    redact_text(long)
    redact_text(long)
    assert len(calls) == 4  # long texts are not remembered


def test_a_key_is_judged_once(monkeypatch: pytest.MonkeyPatch, empty_memos: None) -> None:
    seen: list[str] = []
    real = redact_mod._SECRET_NAME_RE

    class Spy:
        def match(self, s: str) -> re.Match[str] | None:
            seen.append(s)
            return real.match(s)

    monkeypatch.setattr(redact_mod, "_SECRET_NAME_RE", Spy())
    assert [is_sensitive_key(k) for k in ("apiKey", "input_tokens", "apiKey", "DB_PASSWORD")] == [
        True,
        False,
        True,
        True,
    ]
    assert is_sensitive_key("input_tokens") is False
    assert seen == ["api_key", "input_tokens", "db_password"]


def test_the_fallback_redacts_its_items_from_one_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    msgs = [
        Message(Role.USER, (TextPart(f"please fix src/app_{i}.py and run the tests"),))
        for i in range(40)
    ]
    msgs.append(Message(Role.USER, (TextPart(f"use key {SECRET} for src/deploy.py"),)))
    plain = fallback_summary(msgs, budget_tokens=2_000, counter=RoughCounter())
    red = TextRedactor()
    calls = _count_calls(monkeypatch, redact_mod, "find_secrets")
    primed = fallback_summary(msgs, budget_tokens=2_000, counter=RoughCounter(), redactor=red)
    assert primed.text == plain.text and primed.appendix == plain.appendix
    assert SECRET not in primed.text
    # Only the items where a secret may start are scanned one by one.
    assert 0 < len(calls) < 5


def test_rules_are_not_looked_for_in_prose_and_tool_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[Role] = []
    text = Message.text

    def spy(self: Message) -> str:
        read.append(self.role)
        return text.fget(self)  # type: ignore[attr-defined,no-any-return]

    msgs = [
        Message(Role.USER, (TextPart("Never push to main. Always run the tests."),)),
        Message(Role.ASSISTANT, (TextPart("I will never push to main."),)),
        Message(Role.TOOL, (TextPart("- always: do not edit"),), tool_name="bash"),
        Message(
            Role.USER,
            (TextPart("Contents of CLAUDE.md:\n- Never commit secrets."),),
            meta=MessageMeta(is_injected=True),
        ),
    ]
    want = find_rules(msgs)
    monkeypatch.setattr(Message, "text", property(spy))
    assert find_rules(msgs) == want
    assert [r.source for r in want] == ["user", "user", "claude_md"]
    assert Role.ASSISTANT not in read and Role.TOOL not in read


def _reference_json(value: Any) -> Any:
    """redact_json as it was: one call per entry through the generic mappers."""
    if isinstance(value, str):
        return redact_mod.redact_text(value)
    if isinstance(value, Mapping):
        return redact_mod._map_dict(
            value,
            lambda k, v: (
                redact_mod._redact_all(v)
                if isinstance(k, str) and is_sensitive_key(k)
                else _reference_json(v)
            ),
        )
    if isinstance(value, list | tuple):
        return redact_mod._map_list(value, _reference_json)
    return value


_leaf = (
    st.sampled_from(["", "x", SECRET, f"Bearer {SECRET}", "token=abc", "[REDACTED:jwt]"])
    | st.text(max_size=8)
    | st.integers()
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.none()
)
_key = st.sampled_from(["password", "apiKey", "input_tokens", "type", "auth", "x"]) | st.text(
    max_size=6
)
_json = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_key, inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_redact_json_equals_the_entry_by_entry_walk(value: Any) -> None:
    got, want = redact_json(value), _reference_json(value)
    assert got == want
    assert (got is value) == (want is value)
