"""A followed file's state, extended append by append, equals a fresh load of the file.

Core extends each part by the new messages alone: the reader's lines
(:func:`load_appended`), the counts (:func:`extend_tokens`), the usage series
(:func:`extend_usage_series`), the boundary index (:meth:`BoundaryIndex.extended`) and the
breakdown's sums (:func:`breakdown_sums`); :class:`FollowedFile` holds them for a live
view. After any sequence of appends each must equal what a fresh load computes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from builders import SpyCounter, text_message

from tinyjuice.boundary import BoundaryIndex
from tinyjuice.breakdown import breakdown_sums, compute_breakdown
from tinyjuice.follow import FollowedFile, live_status
from tinyjuice.formats import LoadError, load_appended, load_bytes
from tinyjuice.model import Message, Role, TextPart, Transcript
from tinyjuice.policies import extend_usage_series, usage_series
from tinyjuice.tokens import RoughCounter, count_transcript, default_counter, extend_tokens

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
#: Claude Code (its uuid chain, streamed turns, sidechains), Codex, Hermes JSON lines.
FORMATS = ["claude-code.jsonl", "codex-rollout.jsonl", "hermes-gateway.jsonl"]
_INDEX = ("n", "legal", "group_start", "group_end", "legal_indices", "user_indices", "_stops")


def _cuts(data: bytes, step: int) -> list[int]:
    cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return [*cuts[::step], len(data)]


def _loads(data: bytes, name: str) -> bool:
    try:
        load_bytes(data, SESSIONS / name)
    except LoadError:
        return False
    return True


@pytest.mark.parametrize("step", [1, 4])
@pytest.mark.parametrize("name", FORMATS)
def test_a_followed_file_equals_a_fresh_load_after_every_append(name: str, step: int) -> None:
    data = (SESSIONS / name).read_bytes()
    counter = default_counter()
    followed = FollowedFile(SESSIONS / name, counter=counter)
    index = sums = None
    for cut in _cuts(data, step):
        if not _loads(data[:cut], name):
            continue  # a prefix no reader takes (the first lines of a session)
        got = followed.read(data[:cut])
        want = load_bytes(data[:cut], SESSIONS / name)
        tokens = count_transcript(want, counter)
        assert got == want
        assert followed.tokens == tokens
        assert followed.series == usage_series(want, tokens)
        assert followed.status() == live_status(want, tokens)
        index = BoundaryIndex(got.messages) if index is None else index.extended(got.messages)
        fresh = BoundaryIndex(got.messages)
        assert [getattr(index, a) for a in _INDEX] == [getattr(fresh, a) for a in _INDEX]
        assert index.has_summary() == fresh.has_summary()
        assert followed.tokens is not None
        sums = breakdown_sums(got, followed.tokens, counter, sums)
        assert compute_breakdown(got, followed.tokens, sums=sums) == compute_breakdown(want, tokens)


def test_claude_code_appends_extend_each_part_from_the_new_messages() -> None:
    """The point of it all: the leading messages are kept, not rebuilt or recounted."""
    name = "claude-code.jsonl"
    data = (SESSIONS / name).read_bytes()
    cut = _cuts(data, 1)[-10]  # the last lines continue the main chain
    before, source = load_appended(data[:cut], None, SESSIONS / name)
    after, _ = load_appended(data, source, SESSIONS / name)
    k = len(before.messages) - 1  # the last turn may have grown: from it on is new
    assert all(a is b for a, b in zip(before.messages[:k], after.messages, strict=False))
    counter = RoughCounter()
    tokens = count_transcript(before, counter)
    series = usage_series(before, tokens)
    grown = extend_tokens(tokens, before, after, counter)
    assert grown == count_transcript(after, counter)
    extended = extend_usage_series(series, before, tokens, after, grown)
    assert all(a is b for a, b in zip(extended.points[:10], series.points[:10], strict=True))
    assert extended == usage_series(after, grown)


def test_extend_tokens_counts_from_the_first_changed_message() -> None:
    spy = SpyCounter()
    before = Transcript(
        messages=(text_message("one"), text_message("two", Role.ASSISTANT), text_message("thr")),
        format="t",
    )
    previous = count_transcript(before, spy)
    # The last message grew (a streamed turn) and one more came.
    after = replace(
        before, messages=(*before.messages[:2], text_message("three, longer"), text_message("4"))
    )
    spy.seen.clear()
    assert extend_tokens(previous, before, after, spy) == count_transcript(after, RoughCounter())
    assert "one" not in spy.seen and "two" not in spy.seen and "three, longer" in spy.seen


def test_finish_from_a_checkpoint_equals_finish_whole() -> None:
    """A reader finishes a grown list from where it left off (its last message may
    have changed): the same messages and warnings as finishing it whole."""
    from tinyjuice.formats._messages import finish, finish_from
    from tinyjuice.model import ToolCall

    def call(cid: str, args: str = "{}") -> Message:
        return Message(role=Role.ASSISTANT, parts=(), tool_calls=(ToolCall(cid, "Bash", args),))

    def result(cid: str) -> Message:
        return Message(role=Role.TOOL, parts=(TextPart("ok"),), tool_call_id=cid)

    msgs = [
        text_message("go"),
        result("orphan"),
        call("c1"),
        result("c1"),
        text_message("next"),
        result("c1"),  # out of order
        call("c2", "{not json"),
        result("c2"),
    ]
    resume = None
    for n in range(1, len(msgs) + 1):
        got, warnings, resume = finish_from(msgs[:n], resume)
        assert (got, warnings) == finish(msgs[:n])
        assert resume.count == n - 1
    # The last message changed (a streamed turn grew): finished again from it.
    grown = [*msgs[:-1], result("c3"), text_message("end")]
    _, _, resume = finish_from(msgs, None)
    got, warnings, _ = finish_from(grown, resume)
    assert (got, warnings) == finish(grown)


def test_a_grown_live_view_reuses_the_messages_on_screen(tmp_path: Path) -> None:
    """After a compaction the live context is renumbered from 0; a grown file's live
    view keeps the renumbered messages it already had and equals one made whole."""
    from cc_shapes import Chain, two_compactions

    from tinyjuice.live import live_split

    path = two_compactions(tmp_path)
    data = path.read_bytes()
    before, source = load_appended(data, None, path)
    first = live_split(before)
    assert first.start > 0
    more = Chain()
    more.n = 1000  # new uuids, continuing the chain from its last line
    more.parent = json_last_uuid(data)
    more.user("one more ask")
    more.assistant("one more answer", 9_000)
    grown = data + b"".join(json_line(ln) for ln in more.lines)
    after, _ = load_appended(grown, source, path)
    split = live_split(after, previous=first)
    assert split.live == live_split(load_bytes(grown, path)).live
    n = len(first.live.messages)
    assert all(a is b for a, b in zip(split.live.messages[:n], first.live.messages, strict=True))


def json_last_uuid(data: bytes) -> str:
    import json

    return str(json.loads(data.splitlines()[-1])["uuid"])


def json_line(line: dict[str, object]) -> bytes:
    import json

    return json.dumps(line).encode() + b"\n"
