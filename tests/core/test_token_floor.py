"""Token floors (tinyjuice.tokens.text_floor / message_floor): never above the exact
count, under either known pre-tokenizer; and the batch's count back from the kept tail
leaves a long message it cannot keep unencoded, planning as an all-exact count."""

from __future__ import annotations

import orjson
import pytest
from builders import o200k_pieces_counter
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.fit import count_for_target, plan_region
from tinyjuice.model import Message, Role, TextPart, ThinkingPart, ToolCall, Transcript
from tinyjuice.tokens import (
    CountKind,
    RoughCounter,
    TiktokenCounter,
    count_transcript,
    default_counter,
    floor_over,
    has_piece_floor,
    message_floor,
    message_tokens,
    text_floor,
)


def _exact() -> TiktokenCounter:
    counter = default_counter()
    if not has_piece_floor(counter):
        pytest.skip("needs a tiktoken encoding with a known pre-tokenizer")
    return TiktokenCounter(counter._enc, counter.name)


def _counters() -> list[TiktokenCounter]:
    return [_exact(), o200k_pieces_counter(_exact())]


#: Characters where pieces and Python's blanks disagree or glue: every Unicode blank
#: kind, the separators Python alone calls blank, slashes after line breaks,
#: punctuation, digits, contractions, letters of other scripts, marks, emoji.
_ALPHABET = (
    "ab Z09 \n\r\t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2003\u2028\u2029\u202f\u3000"
    "/\\.,;:!?-_()[]{}'\"`#*=+<>|~@$%^&…日本語éü\u0301🎉\ufffd"
)
_TEXTS = st.text(alphabet=_ALPHABET, max_size=120)

_TRICKY = [
    "",
    " ",
    ".\n/",
    "x.\n//\n/",
    ")\r\n/ y",
    "!\x1c!",
    "a\x1fb",
    "\n/\n/\n/",
    "word\u00a0word",
    "1234567",
    "it's they'll",
    "  \n\n  ",
]


@pytest.mark.parametrize("text", _TRICKY)
def test_text_floor_is_at_most_the_count_on_tricky_texts(text: str) -> None:
    for counter in _counters():
        least = text_floor(text)
        assert least is None or least <= counter.count(text), (counter.name, text)


def test_separators_python_alone_calls_blank_have_no_floor() -> None:
    # "!\x1c!" is one punctuation piece, but str.split() makes it two runs.
    assert text_floor("!\x1c!") is None
    assert text_floor("a b c") == 3


@settings(max_examples=1500, deadline=None)
@given(_TEXTS)
def test_text_floor_is_at_most_the_count(text: str) -> None:
    least = text_floor(text)
    if least is None:
        return
    for counter in _counters():
        assert least <= counter.count(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_TEXTS, max_size=3),
    st.lists(st.tuples(st.text(max_size=12), _TEXTS), max_size=3),
    st.booleans(),
)
def test_message_floor_is_at_most_message_tokens(
    texts: list[str], calls: list[tuple[str, str]], result: bool
) -> None:
    parts = (*(TextPart(t) for t in texts), ThinkingPart("think it over"))
    m = Message(
        role=Role.TOOL if result else Role.ASSISTANT,
        parts=parts,
        tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)),
        tool_call_id="c0" if result else None,
    )
    for counter in _counters():
        least = message_floor(m, counter)
        if least is not None:
            assert least <= message_tokens(m, counter)
        # The gated form: the same floor exactly when it is over the room.
        for room in (0, 3, 40, 10**6):
            over = floor_over(m, counter, room)
            assert over == (least if least is not None and least > room else None)


def test_floor_is_not_a_trivial_bound() -> None:
    """Most of the count on prose, a fair part of it on test output (dense
    punctuation: a type checker's output is nearer a quarter)."""
    counter = _exact()
    prose = " ".join(
        f"The agent read the config file and reran the suite {i} times before it passed."
        for i in range(100)
    )
    run = "\n".join(
        f"PASSED tests/unit/test_queue.py::test_retry_{i} in 0.{i % 10}s, worker gw{i % 2}"
        for i in range(200)
    )
    for text, share in ((prose, 0.8), (run, 0.2)):
        least = text_floor(text)
        assert least is not None
        assert share * counter.count(text) < least <= counter.count(text)


class _SpyEncoding:
    """The default encoding, remembering every text it encodes (its pattern and the
    rest read through, so the counter keeps its floors)."""

    def __init__(self, enc: object) -> None:
        self._inner = enc
        self.encoded: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def encode_ordinary(self, text: str) -> list[int]:
        self.encoded.append(text)
        return self._inner.encode_ordinary(text)  # type: ignore[attr-defined, no-any-return]


def _spy() -> tuple[TiktokenCounter, list[str]]:
    base = _exact()
    enc = _SpyEncoding(base._enc)
    counter = TiktokenCounter(enc, base.name)  # type: ignore[arg-type]
    assert has_piece_floor(counter)
    return counter, enc.encoded


#: Where :func:`_session` puts its long output: after the system prompt, the ask and
#: eight call/result pairs, the ninth result.
_BIG = 2 + 2 * 8 + 1


def _session(big: str) -> Transcript:
    msgs = [
        Message(role=Role.SYSTEM, parts=(TextPart("You are a coding agent."),)),
        Message(role=Role.USER, parts=(TextPart("Fix the failing tests in src/app."),)),
    ]
    for k in range(12):
        cid = f"call_{k}"
        args = orjson.dumps({"command": f"pytest -x tests/test_{k}.py"}).decode()
        msgs.append(
            Message(role=Role.ASSISTANT, parts=(), tool_calls=(ToolCall(cid, "terminal", args),))
        )
        body = big if k == 8 else f"test_{k} passed in 0.{k}s\n" * 20
        msgs.append(Message(role=Role.TOOL, parts=(TextPart(body),), tool_call_id=cid))
    msgs.append(Message(role=Role.ASSISTANT, parts=(TextPart("All green now."),)))
    return Transcript(messages=tuple(msgs), format="openai")


def test_a_long_output_the_tail_cannot_keep_is_never_encoded() -> None:
    big = "".join(f"line {i}: value={i * 3} status=ok path=/srv/data/{i}\n" for i in range(3000))
    t = _session(big)
    spy, encoded = _spy()
    exact = count_transcript(t, _exact())
    target = exact.total - exact.per_message[_BIG] - 1200  # the big output cannot stay
    mixed = count_for_target(t, spy, target, keep_last=4, reserve=300)
    assert big not in encoded
    assert mixed.kind is CountKind.ESTIMATED
    assert mixed.total > target
    # Its figure is at least its floor and its rough estimate.
    floor = message_floor(t.messages[_BIG], spy)
    assert floor is not None
    rough = message_tokens(t.messages[_BIG], RoughCounter())
    assert mixed.per_message[_BIG] >= max(floor, rough)
    for r in (1, 300, 2000):
        a = plan_region(t.messages, mixed, target, keep_last=4, summary_tokens=r)
        b = plan_region(t.messages, exact, target, keep_last=4, summary_tokens=r)
        assert (a.head_end, a.tail_start, a.end, a.estimated_after) == (
            b.head_end,
            b.tail_start,
            b.end,
            b.estimated_after,
        )
        assert mixed.per_message[a.end :] == exact.per_message[a.end :]


def test_without_a_floor_the_crossing_message_is_counted() -> None:
    """A separator Python alone calls blank: no floor, so the message is encoded."""
    big = "".join(f"row {i}\x1ffield {i}\n" for i in range(3000))
    t = _session(big)
    spy, encoded = _spy()
    exact = count_transcript(t, _exact())
    target = exact.total - exact.per_message[_BIG] - 1200
    count_for_target(t, spy, target, keep_last=4, reserve=300)
    assert big in encoded
