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
import pytest
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
    _NEEDLES,
    _SCAN_PASSES,
    _SHAPE_PASSES,
    _SHAPES,
    _WIDE_ESCAPE,
    _BatchText,
    _find_secrets,
    _hit_texts,
    _json_strings,
    _present,
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
        # The passes also flag where an escape may hide a match (never less).
        passes = any(p.search(low) for _, p in _SCAN_PASSES)
        assert passes >= bool(_CANDIDATE_SCAN.search(low))
        if "\\" not in t:
            assert passes == bool(_CANDIDATE_SCAN.search(low))
        # The newer shapes' gate in _scan, likewise.
        assert any(p.search(low) for p in _SHAPE_PASSES) == bool(re.search(_SHAPES, low))
    # Joined: a match never runs into the next text, and every text is judged.
    _, hit = _hit_texts(texts)
    assert hit >= {
        t for t in texts if t and (_CANDIDATE_SCAN.search(t.lower()) or _AWS_CANDIDATE.search(t))
    }
    plain = {t for t in texts if "\\" not in t}
    assert hit & plain == {
        t for t in plain if t and (_CANDIDATE_SCAN.search(t.lower()) or _AWS_CANDIDATE.search(t))
    }


@settings(max_examples=300, deadline=None)
@given(_text)
def test_present_needles_are_found_as_one_by_one(text: str) -> None:
    low = text.lower()
    assert _present(low) == {n for n in _NEEDLES if n in low}


@settings(max_examples=500, deadline=None)
@given(_text)
def test_the_one_text_filter_flags_what_the_alternation_flags(text: str) -> None:
    # _scan's filter (the passes, and the AWS shape in the original case) lets through
    # every text the one alternation lets through but for a lower-case AWS look-alike,
    # which no rule redacts (the AWS rule reads capitals).
    low = redact_mod._lowered(text)
    if redact_mod._CANDIDATE.search(low) and not redact_mod._may_start(text, low):
        assert not _find_secrets(text, True), text


_WORDS = [
    "token", "api_key", "apikey", "api-key", "access_key", "secret", "credential",
    "credentials", "cookie", "password", "passwd", "passphrase", "authorization", "aiza",
    "private key", "private  key", "bearer", "sk-" + "a" * 20, "k_live_" + "a" * 16, "xox",
    "eyj", "ghp_", "hf_", "glpat-", "://u:p@h", ":aa" + "b" * 33, "cook", "secre", "toke",
]  # fmt: skip
_ENDS = ["", ":", "=", '":', "' =", "\n:", "_:", "-=", "s:", " x", "\t\n", "ie:", "t="]


def test_the_passes_flag_every_word_as_the_candidate_scan_does() -> None:
    # Every secret word, cut short or run on, with every kind of name end around it.
    for before in ("", "x", "my_", "\x00", "se", "pass", "auth", "coo"):
        for word in _WORDS:
            for end in _ENDS:
                low = f"{before}{word}{end}"
                got = any(p.search(low) for _, p in _SCAN_PASSES)
                assert got == bool(_CANDIDATE_SCAN.search(low)), low


def test_each_pass_starts_with_its_entry_character() -> None:
    # _hit_texts skips a pass when its entry is not in the text: sound only if every
    # match starts with that literal character.
    from re import _parser  # type: ignore[attr-defined]

    for entry, pattern in _SCAN_PASSES:
        first = _parser.parse(pattern.pattern)[0]
        assert first == (_parser.LITERAL, ord(entry)), pattern.pattern


_ESCAPED_BITS = [
    *_BITS,
    *(orjson.dumps(orjson.dumps(c.text.format(c.secret)).decode()).decode() for c in CATALOGUE),
    *(c.text.format(c.secret).replace("/", "\\/") for c in CATALOGUE[::3]),
    *["token", "api_key", "password", "bearer", "client_secret", "https://u", ":p@h", "://"],
    *['\\"', "\\n", "\\t", "\\/", "\\\\", "\\b", "\\f", "\\r", "\\", "\\u0020", "\\u0041"],
]
_escaped_text = st.lists(st.sampled_from(_ESCAPED_BITS) | st.sampled_from(_GLUE), max_size=10).map(
    "".join
)


def _flagged(text: str) -> bool:
    return bool(_CANDIDATE_SCAN.search(text.lower()) or _AWS_CANDIDATE.search(text))


@settings(max_examples=500, deadline=None)
@given(_escaped_text)
def test_the_passes_flag_what_a_decoded_reading_may_show(text: str) -> None:
    # redact_messages reads decoded views only of a text holding \u or \/ : for any
    # other, the passes on the text as it stands must flag what its views would show.
    if _WIDE_ESCAPE.search(text):
        return
    flagged = bool(_hit_texts([text])[1])
    for view in decoded_views(text):
        if _flagged(view):
            assert flagged, (view, text)


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_every_escaped_secret_is_flagged_as_it_stands(levels: int) -> None:
    # Every secret of the corpus and the catalogue, stored as JSON in JSON (the way a
    # tool result holds another's output), and its lines' ends and quotes escaped: found
    # by the passes on the text as it stands, or read decoded (\u, \/).
    texts = [c[1] for c in CORPUS] + [c.text.format(c.secret) for c in CATALOGUE]
    texts.append("curl -H Bearer\tq8Zk2LmN4pR7sT1vX3yB")
    for text in texts:
        for stored in (text, f"password\n: {text}", f'{{"token": "{text}"}}'):
            for _ in range(levels):
                stored = orjson.dumps({"output": stored, "exit_code": 0}).decode()
            for form in (stored, stored.replace("/", "\\/")):
                if _WIDE_ESCAPE.search(form) or not find_secrets(form):
                    continue
                assert _hit_texts([form])[1], form


@settings(max_examples=300, deadline=None)
@given(st.lists(_escaped_text, max_size=6))
def test_batch_equals_one_by_one_on_escaped_texts(texts: list[str]) -> None:
    messages = [Message(Role.TOOL, (TextPart(t),)) for t in texts]
    assert_batch_equals_one_by_one(messages)


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
    assert redact_mod._may_start(text, redact_mod._lowered(text))
    assert _hit_texts([text, "tokens: 1"])[1] >= {text}
    assert find_secrets(text) == _find_secrets(text, True)
