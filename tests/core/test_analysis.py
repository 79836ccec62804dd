"""A TranscriptAnalysis reused across compress() calls gives the same results, faster."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tinyjuice.analysis import TranscriptAnalysis
from tinyjuice.formats import load
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import compress
from tinyjuice.tokens import count_transcript, default_counter

DEMO = Path(__file__).resolve().parents[2] / "sessions" / "demo.json"


def test_reused_analysis_gives_identical_results_and_rescans_nothing() -> None:
    t = load(DEMO)
    counter = default_counter()
    tokens = count_transcript(t, counter)
    analysis = TranscriptAnalysis()
    runs = [
        CompactionOptions(force=True, keep_last=2),
        CompactionOptions(force=True, keep_last=4),
        CompactionOptions(force=True, keep_last=2, focus_topic="tests"),
        CompactionOptions(force=True, keep_last=3, profile=Profile.RULES),
        CompactionOptions(force=True, keep_last=3),
    ]
    for options in runs:
        fresh = compress(t, options, counter=counter, tokens=tokens)
        reused = compress(t, options, counter=counter, tokens=tokens, analysis=analysis)
        assert reused.transcript == fresh.transcript
        assert reused.report.to_dict() == fresh.report.to_dict()
    assert analysis.redacted_reused > 0
    scanned = analysis.redacted_fresh
    # A boundary already seen: every redaction comes from memory, the digests this run
    # wrote (new objects, equal to those of the first run) included.
    again = compress(t, runs[0], counter=counter, tokens=tokens, analysis=analysis)
    assert again.report.to_dict()["digests"]["count"] > 0
    assert analysis.redacted_fresh == scanned


def test_redaction_is_remembered_by_identity_not_id() -> None:
    t = load(DEMO)
    analysis = TranscriptAnalysis()
    first, _ = analysis.redact_messages(list(t.messages))
    copies = [m.__class__(**{f: getattr(m, f) for f in m.__dataclass_fields__}) for m in t.messages]
    again, _ = analysis.redact_messages(copies)
    assert again == first
    assert analysis.redacted_fresh == 2 * len(t.messages)


def test_first_redaction_is_the_batch_one_and_is_remembered() -> None:
    # The first call takes every message to redact_messages at once (nothing to look
    # up); the next call on the same objects answers from memory, with the same objects.
    from tinyjuice.redact import redact_messages

    t = load(DEMO)
    messages = [*t.messages, t.messages[0]]  # one object twice
    analysis = TranscriptAnalysis()
    first, changed = analysis.redact_messages(messages)
    want, want_changed = redact_messages(messages)
    assert first == want and changed == want_changed
    assert analysis.redacted_fresh == len(messages) and analysis.redacted_reused == 0
    again, again_changed = analysis.redact_messages(messages)
    assert all(a is b for a, b in zip(again, first, strict=True))
    assert again_changed == changed
    assert analysis.redacted_fresh == len(messages)
    assert analysis.redacted_reused == len(messages)


def _generated(tmp_path: Path, n: int, seed: int) -> Path:
    from benchmarks.gen import _render_claude_code, conversation

    path = tmp_path / f"gen-{n}-{seed}.jsonl"
    path.write_bytes(_render_claude_code(conversation(n, seed)))
    return path


@pytest.mark.parametrize("seed", [3, 11])
def test_preview_sequences_with_and_without_analysis_are_identical(
    tmp_path: Path, seed: int
) -> None:
    """Boundary moves, focus and profile changes on one transcript: every run with a
    shared analysis equals a run without one (messages, report, fallback appendix)."""
    from dataclasses import replace

    from tjui.session import InspectorSession

    t = load(_generated(tmp_path, 1500, seed))
    counter = default_counter()
    tokens = count_transcript(t, counter)
    session = InspectorSession.build(t, tokens, counter)
    base = session.compaction_options()
    session.step_exchange(-1)
    moved = session.compaction_options()
    session.step_exchange(-2)
    moved_more = session.compaction_options()
    analysis = TranscriptAnalysis()
    runs = [
        base,
        moved,
        replace(moved, focus_topic="tests parser"),
        replace(base, profile=Profile.RULES),
        replace(moved_more, focus_topic="config"),
        base,
        replace(base, keep_last=5),
    ]
    appendices = 0
    for options in runs:
        kwargs = {"tokens": tokens, "counter": counter, "index": session.index}
        fresh = compress(t, options, **kwargs)
        reused = compress(t, options, analysis=analysis, **kwargs)
        assert reused.transcript == fresh.transcript
        assert reused.report.to_dict() == fresh.report.to_dict()
        assert reused.appendix == fresh.appendix
        appendices += bool(fresh.appendix)
    assert appendices  # the fallback's appendix (redacted items) was exercised
    assert analysis.redact_text.memo  # and its text redaction was remembered
    assert analysis.redact_text.facts.by_id  # and the items of each message
    assert analysis.digests  # and each tool result's digest
    assert analysis.digest_outcomes  # and its outcome
    assert analysis._tokens  # and the token counts of the digests written
    assert any(r is not d for _, d, r in analysis.error_lines.values())  # error lines
    remembered = analysis.redact_text
    assert remembered.facts.by_id and remembered.facts.by_value  # each message's items
    assert remembered.trail  # each call's file effects
    assert remembered.bullets and remembered.costs[counter]  # each item's bullet and cost


def test_appendix_bullets_memo_gives_what_a_fresh_render_gives() -> None:
    from tinyjuice.summary.fallback import TextRedactor, _appendix

    red = TextRedactor()
    memo: dict[str, tuple[list[str], list[str]]] = {}
    key = "tool_calls"
    left = {key: ["a", "b", "c", "token=ghp_" + "x" * 36]}
    steps = [
        lambda v: v.insert(0, "z"),  # the fit drops an item into the appendix
        lambda v: v.pop(0),  # the fill takes it back
        lambda v: v.pop(0),
        lambda v: v.__setitem__(1, "other"),  # not a tail of what was seen: rebuilt
        lambda v: v.append("new last"),
    ]
    assert _appendix(9, left, red, memo) == _appendix(9, left, red)
    for step in steps:
        step(left[key])
        assert _appendix(9, left, red, memo) == _appendix(9, left, red)
    assert memo[key][0] == left[key]


@pytest.mark.parametrize("seed", [5])
def test_digest_memo_gives_what_a_fresh_digest_gives(tmp_path: Path, seed: int) -> None:
    from tinyjuice.digest import DigestMemo, digest_tool_results

    msgs = load(_generated(tmp_path, 600, seed)).messages
    memo: DigestMemo = {}
    for protect_from in (500, 300, 550, 300, 120):
        fresh = digest_tool_results(msgs, protect_from=protect_from)
        reused = digest_tool_results(msgs, protect_from=protect_from, memo=memo)
        assert reused == fresh
    assert memo


@pytest.mark.parametrize("seed", [5])
def test_digest_memo_remembers_duplicate_pointers_by_text(tmp_path: Path, seed: int) -> None:
    """A de-duplicated result's pointer is the same object on the next run (so memos
    keyed by identity downstream do not grow), and is written afresh when its newest
    copy moved (another pointer text)."""
    from tinyjuice.digest import DigestMemo, digest_tool_results

    msgs = load(_generated(tmp_path, 600, seed)).messages
    memo: DigestMemo = {}
    first = digest_tool_results(msgs, protect_from=500, memo=memo)
    dups = [r.index for r in first.records if r.kind == "duplicate"]
    assert dups
    again = digest_tool_results(msgs, protect_from=500, memo=memo)
    assert again == first
    assert all(again.messages[i] is first.messages[i] for i in dups)
    size = len(memo)
    digest_tool_results(msgs, protect_from=500, memo=memo)
    assert len(memo) == size  # nothing new remembered for the same run
    # The same results one place earlier: each pointer names another index.
    for shifted in (msgs[1:], msgs, msgs[2:]):
        fresh = digest_tool_results(shifted, protect_from=490)
        assert digest_tool_results(shifted, protect_from=490, memo=memo) == fresh


@pytest.mark.parametrize("seed", [5])
def test_digest_outcome_memo_gives_what_a_fresh_digest_gives(tmp_path: Path, seed: int) -> None:
    """Each part of an outcome's key matters: the result's index, its call, its newest
    copy's index and that copy's call id."""
    from dataclasses import replace

    from tinyjuice.digest import DigestMemo, OutcomeMemo, digest_tool_results

    msgs = list(load(_generated(tmp_path, 600, seed)).messages)
    first = digest_tool_results(msgs, protect_from=500)
    dup = next(r for r in first.records if r.kind == "duplicate" and r.ref_index)
    assert dup.ref_index is not None
    dig = next(r for r in first.records if r.kind == "digest" and r.call_id)
    at = next(j for j in range(dig.index) if any(c.id == dig.call_id for c in msgs[j].tool_calls))
    recalled = list(msgs)  # the same call id, other arguments (a new call object)
    recalled[at] = replace(
        msgs[at],
        tool_calls=tuple(
            replace(c, arguments='{"command": "ls other", "file_path": "o/t.py"}')
            if c.id == dig.call_id
            else c
            for c in msgs[at].tool_calls
        ),
    )
    renamed = list(msgs)  # the newest copy answers another call id
    renamed[dup.ref_index] = replace(msgs[dup.ref_index], tool_call_id="call-renamed")
    trimmed = msgs[: dup.ref_index] + msgs[dup.ref_index + 1 :]  # the newest copy gone
    k = dup.index + 1  # the duplicate one place earlier, its newest copy where it was
    moved = [*msgs[1:k], msgs[0], *msgs[k:]]
    memo: DigestMemo = {}
    outcomes: OutcomeMemo = {}
    for variant in (msgs, msgs[1:], msgs, recalled, msgs, renamed, msgs, trimmed, msgs, moved):
        for protect_from in (500, 300):
            fresh = digest_tool_results(variant, protect_from=protect_from)
            reused = digest_tool_results(
                variant, protect_from=protect_from, memo=memo, outcomes=outcomes
            )
            assert reused == fresh
    assert outcomes


def test_rules_memo_gives_what_a_fresh_scan_gives() -> None:
    from tinyjuice.survival import RulesMemo, _may_hold_rules, find_rules

    for path in sorted((DEMO.parent).glob("*.json*"))[:6]:
        msgs = load(path).messages
        memo: RulesMemo = {}
        for lo, hi in ((0, len(msgs)), (1, len(msgs) // 2), (len(msgs) // 3, len(msgs))):
            fresh = find_rules(msgs[lo:hi], start_index=lo)
            assert find_rules(msgs[lo:hi], start_index=lo, memo=memo) == fresh
        # Every message that may hold rules, and no other (those are never read).
        assert set(memo) == {id(m) for m in msgs if _may_hold_rules(m)}


def test_appendix_id_hashed_in_pieces_equals_the_id_of_the_built_appendix() -> None:
    from tinyjuice.summary.fallback import (
        _CATEGORIES,
        TextRedactor,
        _appendix,
        _Draft,
    )

    def whole_id(appendix: str) -> str | None:
        # The id's definition: the first 16 hex digits of the built appendix's sha256.
        return hashlib.sha256(appendix.encode()).hexdigest()[:16] if appendix else None

    red = TextRedactor()
    left: dict[str, list[str]] = {key: [] for key, _ in _CATEGORIES}
    left["tool_calls"] = ["a", "b — é", "c\nd", "token=ghp_" + "x" * 36]
    left["paths"] = ["src/ü.py", "q/r.md"]
    draft = _Draft(1234, {key: [] for key in left}, left, {}, None, True, red)
    calls = left["tool_calls"]
    steps = [
        lambda: None,
        lambda: calls.insert(0, "z ×2"),  # the fit drops an item into the appendix
        lambda: calls.insert(0, "y — ÿ"),
        lambda: calls.pop(0),  # the fill takes them back
        lambda: calls.pop(0),
        lambda: calls.pop(0),
        # A category before the ones that change: the hash states kept after it are stale.
        lambda: left["paths"].__setitem__(0, "src/v.py"),
        lambda: left["paths"].append("s/t.md"),
        lambda: left["artifacts"].append("wrote a.py"),  # a new first category
        lambda: left["digests"].append("read x"),  # a new last one (the rest reused)
        lambda: left["digests"].clear(),  # the last one gone: the kept prefix is the id
        lambda: left["artifacts"].clear(),
        lambda: left["paths"].clear(),
        lambda: calls.__setitem__(1, "other"),  # neither a tail nor a head: hashed afresh
        lambda: left["urls"].append("https://x.y/z"),
        lambda: calls.clear(),
        lambda: left["urls"].clear(),  # nothing left out: no appendix, no id
    ]
    for step in steps:
        step()
        assert draft.appendix_id() == whole_id(_appendix(1234, left, red))
    assert draft.appendix_id() is None


@pytest.mark.parametrize("seed", [7])
def test_trail_memo_gives_what_a_fresh_trail_gives(tmp_path: Path, seed: int) -> None:
    from tinyjuice.facts import EffectsMemo, file_actions

    msgs = load(_generated(tmp_path, 600, seed)).messages
    memo: EffectsMemo = {}
    for lo, hi in ((0, 600), (10, 300), (0, 450), (200, 600), (10, 300)):
        assert file_actions(msgs[lo:hi], memo=memo) == file_actions(msgs[lo:hi])
    assert memo


@pytest.mark.parametrize("name", ["demo.json", "claude-code.jsonl", "openai-chat.json"])
def test_a_passed_index_over_the_messages_says_whether_any_is_a_summary(name: str) -> None:
    """The preview's own index answers "is any message a summary?" once per transcript
    (not a scan of every message per move); an index over another list is not trusted."""
    from tinyjuice.boundary import BoundaryIndex

    t = load(DEMO.parent / name)
    counter = default_counter()
    tokens = count_transcript(t, counter)
    options = CompactionOptions(force=True, keep_last=3)
    want = compress(t, options, counter=counter, tokens=tokens)
    index = BoundaryIndex(t.messages)
    got = compress(t, options, counter=counter, tokens=tokens, index=index)
    assert got.transcript == want.transcript
    assert got.report.to_dict() == want.report.to_dict()
    assert index._has_summary is not None  # consulted (and cached)
    other = BoundaryIndex(list(t.messages))
    assert not other.built_over(t.messages)
    got = compress(t, options, counter=counter, tokens=tokens, index=other)
    assert got.report.to_dict() == want.report.to_dict()


@pytest.mark.parametrize("seed", [9])
def test_error_lines_memo_gives_what_a_fresh_pass_gives(tmp_path: Path, seed: int) -> None:
    from tinyjuice.digest import digest_tool_results
    from tinyjuice.pipeline import _with_error_lines

    msgs = load(_generated(tmp_path, 600, seed)).messages
    memo: dict[int, tuple[object, object, object]] = {}
    for protect_from in (500, 300, 500):
        pruned = digest_tool_results(msgs, protect_from=protect_from).messages
        fresh = _with_error_lines(pruned, msgs)
        assert _with_error_lines(pruned, msgs, memo) == fresh  # type: ignore[arg-type]
        # Messages the prune left alone come back as they are.
        assert all(f is p for f, p, o in zip(fresh, pruned, msgs, strict=True) if p is o)
        assert any(f is not p for f, p in zip(fresh, pruned, strict=True))  # lines added
    with pytest.raises(ValueError):
        _with_error_lines(msgs[:-1], msgs)


def test_token_lookups_give_what_a_fresh_count_gives() -> None:
    """tokens_by_id is remembered for the same two sequences only; tokens_of prefers
    the known counts, then the memo (per counter), then a count."""
    from tinyjuice.tokens import message_tokens

    t = load(DEMO)
    counter = default_counter()
    per = count_transcript(t, counter).per_message
    analysis = TranscriptAnalysis()
    want = {id(m): n for m, n in zip(t.messages, per, strict=True)}
    got = analysis.tokens_by_id(t.messages, per)
    assert got == want
    assert analysis.tokens_by_id(t.messages, per) is got  # remembered
    other = tuple(n + 1 for n in per)  # other counts for the same messages
    assert analysis.tokens_by_id(t.messages, other) == {k: n + 1 for k, n in want.items()}
    shorter = t.messages[:-1]  # another sequence of the same messages
    assert analysis.tokens_by_id(shorter, per[:-1]) == {id(m): want[id(m)] for m in shorter}

    msgs = list(t.messages)
    known = {id(msgs[0]): 7}
    fresh = [7, *(message_tokens(m, counter) for m in msgs[1:])]
    assert analysis.tokens_of(msgs, counter, known) == fresh
    assert analysis.tokens_of(msgs, counter, known) == fresh  # from the memo
    assert analysis.tokens_of(msgs, counter, {}) == [message_tokens(m, counter) for m in msgs]

    from tinyjuice.tokens import RoughCounter

    rough = RoughCounter()  # another counter: its own counts, not the memo's
    assert analysis.tokens_of(msgs[1:], rough, {}) == [message_tokens(m, rough) for m in msgs[1:]]


def _old_redact_before_digest(messages, opts, redact_many):  # type: ignore[no-untyped-def]
    """The pipeline's redaction before the digest as it was (the reference)."""
    from tinyjuice.digest import ToolKind, tool_kind
    from tinyjuice.model import Role

    names = {c.id: c.name for m in messages for c in m.tool_calls}
    now = [
        i
        for i, m in enumerate(messages)
        if not (
            m.role is Role.TOOL
            and len(m.text) >= opts.digest_min_chars
            and tool_kind(m.tool_name or names.get(m.tool_call_id or "")) is not ToolKind.SEARCH
        )
    ]
    redacted, changed = redact_many([messages[i] for i in now])
    out = list(messages)
    for i, r in zip(now, redacted, strict=True):
        out[i] = r
    return out, changed, {id(r) for r in redacted}


@pytest.mark.parametrize("name", ["demo.json", "claude-code.jsonl", "openai-chat.json"])
def test_redaction_before_the_digest_picks_what_it_picked_before(name: str) -> None:
    from dataclasses import replace

    from tinyjuice.pipeline import _redact_before_digest
    from tinyjuice.redact import redact_messages

    msgs = list(load(DEMO.parent / name).messages)
    # Also with the tool names dropped (found through the calls instead) and with
    # multi-part results.
    unnamed = [replace(m, tool_name=None) if m.tool_name else m for m in msgs]
    doubled = [replace(m, parts=(*m.parts, *m.parts)) if m.tool_call_id else m for m in msgs]
    assert any(m.tool_name for m in msgs) or any(m.tool_call_id for m in msgs)
    for messages in (msgs, unnamed, doubled):
        for min_chars in (0, 40, 400):
            opts = CompactionOptions(digest_min_chars=min_chars)
            want = _old_redact_before_digest(messages, opts, redact_messages)
            got = _redact_before_digest(messages, opts, redact_messages)
            assert got[0] == want[0] and got[1] == want[1]
            # The same positions marked as redacted already.
            assert [i for i, m in enumerate(got[0]) if id(m) in got[2]] == [
                i for i, m in enumerate(want[0]) if id(m) in want[2]
            ]


def test_a_repeated_preview_sequence_remembers_nothing_new(tmp_path: Path) -> None:
    """Runs already seen add no entry to the memos keyed by message identity (the
    digests written are the same objects as the first time)."""
    from tjui.session import InspectorSession

    t = load(_generated(tmp_path, 1500, 4))
    counter = default_counter()
    tokens = count_transcript(t, counter)
    session = InspectorSession.build(t, tokens, counter)
    runs = [session.compaction_options()]
    for _ in range(2):
        session.step_exchange(-1)
        runs.append(session.compaction_options())
    analysis = TranscriptAnalysis()
    kwargs = {"tokens": tokens, "counter": counter, "index": session.index}

    def sizes() -> tuple[int, ...]:
        return (
            len(analysis._tokens),
            len(analysis.digests),
            len(analysis.digest_outcomes),
            len(analysis._derived),
            len(analysis.redact_text.rules),
        )

    for options in runs:
        compress(t, options, analysis=analysis, **kwargs)
    seen = sizes()
    assert any(d["kind"] == "duplicate" for d in compress(t, runs[0], **kwargs).report.digests)
    for options in runs:
        compress(t, options, analysis=analysis, **kwargs)
    assert sizes() == seen
