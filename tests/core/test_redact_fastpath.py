"""The batch redaction's shortcuts answer exactly as the full per-text scan.

``redact_messages`` gathers a message's strings with ``_json_strings`` (source records
walked without recursion, their keys tested against a set of keys known to be safe),
scans them joined (``_hit_texts``: one match per text is enough), and then leaves every
scanned text without a match as it is, and runs the rules on a matched one without the
candidate filter. Each is compared here with the plain definition on texts holding
every secret pattern (the corpus and the catalogue) and their near misses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import CORPUS, NEGATIVES
from test_redact_batch import assert_batch_equals_one_by_one
from test_redact_catalogue import CATALOGUE

from tinyjuice import redact as redact_mod
from tinyjuice._escapes import decoded_views
from tinyjuice.model import Message, Role, TextPart, ToolCall
from tinyjuice.redact import (
    _AWS_CANDIDATE,
    _CANDIDATE_SCAN,
    _PLAIN_PASSES,
    _SCAN_PASSES,
    _SHAPE_PASSES,
    _SHAPES,
    _BatchText,
    _find_secrets,
    _hit_texts,
    _json_strings,
    find_secrets,
    is_sensitive_key,
    redact_text,
)

_BITS = (
    [c[1] for c in CORPUS]
    + NEGATIVES
    + [c.text.format(c.secret) for c in CATALOGUE]
    + [c.negative for c in CATALOGUE]
    + ["TOKEN", "Key", "auth", '"', "'", "= x", "key: 1", "\\n", '\\"', "\\u0061"]
    # As stored: JSON-escaped (secrets only found in the decoded reading).
    + [orjson.dumps({"output": c.text.format(c.secret)}).decode() for c in CATALOGUE[::2]]
)
_GLUE = [" ", "\n", "\t", ":", "=", "\x00", "\u0130", "\u212a", "-", "_", "word", ""]
_text = st.lists(st.sampled_from(_BITS) | st.sampled_from(_GLUE), max_size=8).map("".join)


def test_the_pieces_hold_every_pattern() -> None:
    kinds = {h.kind for t in _BITS for h in find_secrets(t)}
    assert {c.kind for c in CATALOGUE} <= kinds


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, max_size=8))
def test_the_joined_scan_leaves_alone_only_what_redaction_leaves_alone(
    texts: list[str],
) -> None:
    scanned, hit = _hit_texts(texts)
    assert list(scanned) == list(dict.fromkeys(t for t in texts if t))
    assert hit <= scanned.keys()
    unsafe = hit | {t for t in scanned if "\\" in t}
    fast = _BatchText(scanned, unsafe)
    for t in texts:
        want = redact_text(t)
        got = fast(t)
        assert got == want
        assert (got is t) == (want is t)
        # The rules run on a matched text without the filter, and find the same.
        assert _find_secrets(t, True) == find_secrets(t)


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, max_size=8))
def test_the_passes_flag_exactly_what_the_candidate_scan_flags(texts: list[str]) -> None:
    # Text by text, each alone: the per-character passes against the one alternation.
    for t in texts:
        low = t.lower()
        assert any(p.search(low) for _, p in _SCAN_PASSES) == bool(_CANDIDATE_SCAN.search(low))
        # The newer shapes' gate in _scan, likewise.
        assert any(p.search(low) for p in _SHAPE_PASSES) == bool(re.search(_SHAPES, low))
    # Joined: a match never runs into the next text, and every text is judged.
    _, hit = _hit_texts(texts)
    assert hit == {
        t for t in texts if t and (_CANDIDATE_SCAN.search(t.lower()) or _AWS_CANDIDATE.search(t))
    }


def test_each_pass_starts_with_its_entry_character() -> None:
    # _hit_texts skips a pass when its entry is not in the text: sound only if every
    # match starts with that literal character.
    from re import _parser  # type: ignore[attr-defined]

    for entry, pattern in _SCAN_PASSES:
        first = _parser.parse(pattern.pattern)[0]
        assert first == (_parser.LITERAL, ord(entry)), pattern.pattern


_ESCAPED_BITS = [*_BITS, '\\"', "\\n", "\\t", "\\/", "\\\\", "\\b", "\\f", "\\r", "\\"]
_escaped_text = st.lists(st.sampled_from(_ESCAPED_BITS) | st.sampled_from(_GLUE), max_size=10).map(
    "".join
)


@settings(max_examples=400, deadline=None)
@given(_escaped_text)
def test_plain_passes_find_nothing_new_in_a_decoded_reading(text: str) -> None:
    # redact_messages reads decoded views of a text without \u escapes with the escape
    # passes only: a plain pass matching a view must match the text as it stands.
    if "\\u" in text:
        return
    low = text.lower()
    for view in decoded_views(text):
        for _, pattern in _PLAIN_PASSES:
            if pattern.search(view.lower()):
                assert pattern.search(low), (pattern.pattern, text)
        if _AWS_CANDIDATE.search(view):
            assert _AWS_CANDIDATE.search(text), text


def _reference_strings(value: Any, out: list[str]) -> bool:
    """The plain definition: every string leaf; whether any key is sensitive."""
    if isinstance(value, str):
        out.append(value)
        return False
    sensitive = False
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str) and is_sensitive_key(k):
                sensitive = True
            sensitive |= _reference_strings(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            sensitive |= _reference_strings(v, out)
    return sensitive


_keys = st.sampled_from(["path", "auth", "apiKey", "input_tokens", "note", "x-api-key", "id"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_keys, inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_source_strings_are_every_string_leaf(value: Any) -> None:
    redact_mod._SAFE_KEYS.clear()
    for _ in range(2):  # the second time with the safe keys remembered
        got: list[str] = []
        want: list[str] = []
        assert _json_strings(value, got) == _reference_strings(value, want)
        assert sorted(got) == sorted(want)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_text, st.dictionaries(_keys, _json, max_size=3)), max_size=6))
def test_batch_equals_one_by_one_with_records(items: list[tuple[str, Any]]) -> None:
    messages = [
        Message(
            Role.TOOL if i % 2 else Role.ASSISTANT,
            (TextPart(text),),
            (ToolCall("c", "run", orjson.dumps({"cmd": text}).decode()),) if i % 3 == 0 else (),
            extra={"toolUseResult": {"stdout": "".join(list(text))}, **record},
        )
        for i, (text, record) in enumerate(items)
    ]
    assert_batch_equals_one_by_one(messages)


# A name hit's name ends with a secret word: the filters flag a secret word only there
# (and "…key" only after a prefix word). Names are built from segments, secret words
# among them, in every spelling is_sensitive_key reads (camelCase, "_", "-", upper case,
# the Kelvin sign and the long s, which case-insensitive rules read as "k" and "s").
_SEGMENTS = [
    "api", "access", "secret", "private", "client", "session", "token", "tokens", "key",
    "keys", "password", "passwd", "passphrase", "credential", "credentials", "cookie",
    "authorization", "auth", "db", "max", "size", "x", "aws", "Token", "KEY", "Key",
    "PASSWORD", "\u212aey", "pa\u017f\u017fword", "\u017fecret", "se", "cret", "2",
]  # fmt: skip
_SEPARATORS = ["", "_", "-", "__", "."]
_name = st.tuples(
    st.lists(st.tuples(st.sampled_from(_SEPARATORS), st.sampled_from(_SEGMENTS)), max_size=4),
    st.sampled_from(_SEPARATORS),
).map(lambda seg: "".join(sep + word for sep, word in seg[0]) + seg[1])
_ASSIGNS = ["=", ": ", " = ", '": "', "': '", '"=', '="', ":\t", " :", "\n:"]
_VALUES = ["hunter2hunter2", "abcdefgh1234", "x", "A1b2C3d4E5f6G7h8", "$VAR", "required"]
_line = st.tuples(
    st.sampled_from(["", "  ", "export ", "- ", '{"', "--", "machine h login u ", "host=db "]),
    _name,
    st.sampled_from(_ASSIGNS),
    st.sampled_from(_VALUES),
    st.sampled_from(["", "\n", '"', "'", ",", " # note"]),
).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_line, min_size=1, max_size=3).map("\n".join))
def test_the_filters_flag_every_name_the_rules_redact(text: str) -> None:
    if not _find_secrets(text, True):  # the rules without any filter
        return
    assert redact_mod._CANDIDATE.search(redact_mod._lowered(text))
    assert _hit_texts([text, "tokens: 1"])[1] >= {text}
    assert find_secrets(text) == _find_secrets(text, True)
