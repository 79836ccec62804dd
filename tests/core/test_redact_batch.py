"""redact_messages is exactly redact_message over each message, only cheaper."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import CORPUS, NEGATIVES
from test_redact_catalogue import CATALOGUE

from tinyjuice.model import MediaPart, Message, Role, TextPart, ThinkingPart, ToolCall
from tinyjuice.redact import (
    _EXACT_SENSITIVE,
    _KEY_PREFIXES,
    is_sensitive_key,
    redact_message,
    redact_messages,
)

_CATALOGUE_TEXTS = [c.text.format(c.secret) for c in CATALOGUE]
_PIECES = (
    [c[1] for c in CORPUS]
    + NEGATIVES
    + _CATALOGUE_TEXTS
    # As stored: JSON-escaped tool output, and JSON nested in a string of it.
    + [orjson.dumps({"output": t}).decode() for t in _CATALOGUE_TEXTS[::3]]
    + [orjson.dumps([orjson.dumps(t).decode()]).decode() for t in _CATALOGUE_TEXTS[1::3]]
    + ["plain words", "café ÅNGSTRÖM İ", "\n", " ", "C:\\Users\\me\\token.txt"]
)
_text = st.lists(st.sampled_from(_PIECES), max_size=6).map(" ".join)
_keys = st.sampled_from(["path", "auth", "Auth", "password", "apiKey", "note", "x-api-key", "cmd"])


@st.composite
def _message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from([Role.USER, Role.ASSISTANT, Role.TOOL]))
    parts = tuple(TextPart(draw(_text)) for _ in range(draw(st.integers(0, 2))))
    if draw(st.booleans()):
        parts += (ThinkingPart(draw(_text)),)
    if draw(st.booleans()):
        # A remote image's URL is read as text, an encoded one never (redact._media_url).
        source = draw(st.sampled_from(["url", "base64", "file"]))
        data = draw(st.sampled_from(["https://cdn.example/a.png?", "data:image/png,", ""]))
        extra = draw(st.dictionaries(_keys, _text, max_size=2))
        parts += (MediaPart("image/png", 0, source, data + draw(_text), extra),)
    calls: tuple[ToolCall, ...] = ()
    if role is Role.ASSISTANT and draw(st.booleans()):
        args = draw(st.dictionaries(_keys, _text, max_size=3))
        calls = (ToolCall("c1", "terminal", orjson.dumps(args).decode()),)
    extra = draw(st.dictionaries(_keys, _text, max_size=2))
    return Message(role, parts, calls, reasoning=draw(st.none() | _text), extra=extra)


def assert_batch_equals_one_by_one(messages: list[Message]) -> None:
    """``redact_messages`` gives what ``redact_message`` gives one by one, counts the
    changed ones, and hands back untouched messages as the same objects."""
    batch, changed = redact_messages(messages)
    single = [redact_message(m) for m in messages]
    assert batch == single
    assert changed == sum(1 for a, b in zip(single, messages, strict=True) if a is not b)
    for a, b in zip(batch, messages, strict=True):
        if a == b:
            assert a is b  # untouched messages are the same objects


@settings(max_examples=150, deadline=None)
@given(st.lists(_message(), max_size=8))
def test_batch_equals_one_by_one(messages: list[Message]) -> None:
    assert_batch_equals_one_by_one(messages)


def _spellings(word: str) -> set[str]:
    parts = word.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    return {
        word,
        word.upper(),
        word.replace("_", "-"),
        camel,
        camel.title(),
        f"_{word}_",
        "my_" + word,
    }


# The exact names from the rules themselves: a name added there is checked here too.
_SENSITIVE_WORDS = [
    *sorted(_EXACT_SENSITIVE),
    *("secret", "password", "passwd", "passphrase", "token", "apikey", "credentials"),
    *(f"{p}_key" for p in _KEY_PREFIXES),
]


def test_every_spelling_of_a_sensitive_key_is_redacted_in_batch() -> None:
    # "auth" holds no needle of the joined scan: tool-call arguments naming it were
    # left as they were in batch, while redact_message redacted the value.
    value = "Zq8-not-a-real-secret-vALUE"
    keys = sorted({k for w in _SENSITIVE_WORDS for k in _spellings(w) if is_sensitive_key(k)})
    assert {"auth", "AUTH", "Auth", "_auth_"} <= set(keys)
    messages = [
        Message(Role.ASSISTANT, (), (ToolCall("c1", "login", orjson.dumps({k: value}).decode()),))
        for k in keys
    ] + [Message(Role.TOOL, (TextPart("ok"),), extra={"record": {k: value}}) for k in keys]
    batch, changed = redact_messages(messages)
    assert changed == len(messages)
    for m in batch:
        assert value not in m.tool_calls[0].arguments if m.tool_calls else value not in str(m.extra)
    assert batch == [redact_message(m) for m in messages]


def test_every_corpus_secret_is_caught_in_batch() -> None:
    msgs = [Message(Role.TOOL, (TextPart(f"output: {c[1]} end"),)) for c in CORPUS]
    batch, changed = redact_messages(msgs)
    assert changed == len(CORPUS)
    for m, c in zip(batch, CORPUS, strict=True):
        assert c[2] not in m.text, c[0]


def test_every_catalogue_secret_is_caught_in_batch_as_stored() -> None:
    stored = [orjson.dumps({"output": t, "exit_code": 0}).decode() for t in _CATALOGUE_TEXTS]
    msgs = [Message(Role.TOOL, (TextPart(t),)) for t in stored]
    batch, changed = redact_messages(msgs)
    assert changed == len(CATALOGUE)
    for m, c in zip(batch, CATALOGUE, strict=True):
        assert c.secret not in m.text, c.kind
        assert orjson.loads(m.text)["exit_code"] == 0


_ESCAPY = st.text(alphabet=st.sampled_from(list('\\"/nrtbfu0aA9 x\x00')), max_size=24)


@settings(max_examples=300, deadline=None)
@given(_ESCAPY)
def test_fast_unescape_reads_like_the_mapped_one(text: str) -> None:
    # The batch filter decodes with plain replacements; find_secrets with a position map.
    # Both must read the same text, or the filter could pass over what find_secrets sees.
    from tinyjuice._escapes import unescape, unescaped_text

    mapped = unescape(text)
    assert unescaped_text(text) == (None if mapped is None else mapped.text)
