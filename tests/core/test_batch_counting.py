"""Batch counting what decides (tinyjuice.fit.count_for_target): the region, the output
and ``tokens_after`` are those of an all-exact count; ``tokens_before`` of a trajectory
over the target may be an estimate, and every figure says which it is."""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path

import orjson
import pytest
from builders import WordCounter

from benchmarks.trajectories import trajectory_line
from tinyjuice.dataset import plan_jobs, run_batch
from tinyjuice.fit import (
    BatchAggregator,
    BatchOptions,
    TrajectoryStatus,
    compress_trajectory,
    count_for_target,
    plan_region,
    process_line,
)
from tinyjuice.formats import load_bytes
from tinyjuice.model import Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.summary import FailureClass, SummaryError
from tinyjuice.tokens import CountKind, count_transcript, default_counter

REPO = Path(__file__).resolve().parents[2]


class ExactWords(WordCounter):
    """One token per word plus one per message, labelled exact: plain arithmetic."""

    name = "exact-words"
    kind = CountKind.EXACT
    message_overhead = 1


def _text(rng: random.Random, tag: str) -> str:
    return " ".join(f"{tag}{k}" for k in range(rng.choice((0, 1, 3, 20, 80, 300))))


def _random_trajectory(rng: random.Random) -> Transcript:
    msgs: list[Message] = [Message(role=Role.SYSTEM, parts=(TextPart(_text(rng, "s")),))]
    for turn in range(rng.randint(1, 14)):
        msgs.append(Message(role=Role.USER, parts=(TextPart(_text(rng, "u")),)))
        if rng.random() < 0.4:
            cid = f"c{turn}"
            args = orjson.dumps({"command": _text(rng, "a")}).decode()
            msgs.append(
                Message(role=Role.ASSISTANT, parts=(), tool_calls=(ToolCall(cid, "sh", args),))
            )
            msgs.append(
                Message(role=Role.TOOL, parts=(TextPart(_text(rng, "o")),), tool_call_id=cid)
            )
        msgs.append(Message(role=Role.ASSISTANT, parts=(TextPart(_text(rng, "r")),)))
    return Transcript(messages=tuple(msgs), format="openai")


def _decisions(plan: object) -> tuple[object, ...]:
    return tuple(
        getattr(plan, k) for k in ("head_end", "tail_start", "end", "estimated_after", "fits")
    )


@pytest.mark.parametrize("counter", [ExactWords(), default_counter()], ids=["words", "tiktoken"])
def test_count_for_target_plans_every_region_as_an_exact_count(counter: object) -> None:
    rng = random.Random(14)
    estimated = 0
    for _ in range(300):
        t = _random_trajectory(rng)
        exact = count_transcript(t, counter)  # type: ignore[arg-type]
        target = rng.randint(1, max(2, exact.total + 50))
        keep_last = rng.choice((0, 2, 4))
        anchor = rng.random() < 0.8
        reserve = rng.choice((1, 50, 750))
        mixed = count_for_target(
            t,
            counter,  # type: ignore[arg-type]
            target,
            keep_last=keep_last,
            reserve=reserve,
            anchor_latest_user=anchor,
        )
        if mixed.kind is CountKind.EXACT:
            assert mixed == exact
            continue
        estimated += 1
        assert mixed.total > target and exact.total > target
        assert (mixed.system_prompt, mixed.tools) == (exact.system_prompt, exact.tools)
        for r in (reserve, reserve + 1, 2 * reserve + 100, 5000):
            kw = {"keep_last": keep_last, "summary_tokens": r, "anchor_latest_user": anchor}
            a = plan_region(t.messages, mixed, target, **kw)  # type: ignore[arg-type]
            b = plan_region(t.messages, exact, target, **kw)  # type: ignore[arg-type]
            assert _decisions(a) == _decisions(b)
            # What the plan keeps is counted exactly.
            assert exact.per_message[: a.head_end] == mixed.per_message[: a.head_end]
            assert exact.per_message[a.end :] == mixed.per_message[a.end :]
    assert estimated > 30  # the estimating path was taken


def _lines(n: int) -> list[bytes]:
    return [trajectory_line(i) for i in range(n)]


@pytest.mark.parametrize(
    ("target", "summary_tokens", "keep_last"),
    [(3000, 750, 4), (1500, 750, 4), (6000, 750, 2), (3000, 1, 4), (2000, 100, 0)],
)
def test_process_line_writes_the_same_exact_or_not(
    target: int, summary_tokens: int, keep_last: int
) -> None:
    options = BatchOptions(target_tokens=target, summary_tokens=summary_tokens, keep_last=keep_last)
    estimated = 0
    for raw in _lines(60):
        a = process_line(raw, "sharegpt", options)
        b = process_line(raw, "sharegpt", options, exact=True)
        assert a.output == b.output
        ma, mb = a.metrics.to_dict(timings=False), b.metrics.to_dict(timings=False)
        assert mb["tokens_before_kind"] == mb["tokens_after_kind"] == "exact"
        assert ma["tokens_after_kind"] == "exact"
        if ma["tokens_before_kind"] == "estimated":
            estimated += 1
            assert a.metrics.status is TrajectoryStatus.COMPRESSED
            for key in ("tokens_before", "tokens_saved", "ratio", "tokens_before_kind"):
                ma.pop(key), mb.pop(key)
        assert ma == mb
    assert estimated > 0


def test_labels_add_up_in_the_aggregate() -> None:
    options = BatchOptions(target_tokens=3000)
    default, exact = BatchAggregator(), BatchAggregator()
    for raw in _lines(40):
        default.add(process_line(raw, "sharegpt", options).metrics)
        exact.add(process_line(raw, "sharegpt", options, exact=True).metrics)
    d, e = default.summary().to_dict(timings=False), exact.summary().to_dict(timings=False)
    assert d["tokens_before_kind"] == "estimated" and d["estimated_before"] > 0
    assert e["tokens_before_kind"] == "exact" and e["estimated_before"] == 0
    assert d["tokens_after_kind"] == e["tokens_after_kind"] == "exact"
    assert d["tokens_after"] == e["tokens_after"]
    assert d["estimated_before"] <= d["compressed"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_run_batch_writes_the_same_bytes_exact_or_not(tmp_path: Path) -> None:
    src = tmp_path / "ds.jsonl"
    src.write_bytes(b"".join(_lines(80)))
    runs = {}
    for exact in (False, True):
        out = tmp_path / f"out-{exact}.jsonl"
        runs[exact] = run_batch(
            plan_jobs([src], out), BatchOptions(target_tokens=2500), exact=exact
        ).summary
        assert out.exists()
    assert _sha(tmp_path / "out-False.jsonl") == _sha(tmp_path / "out-True.jsonl")
    assert runs[False].tokens_before_kind == "estimated"
    assert runs[True].tokens_before_kind == "exact"
    loaded = [load_bytes(line.rstrip(b"\n"), "x", "sharegpt") for line in _lines(80)]
    assert runs[True].tokens_before == sum(count_transcript(t).total for t in loaded)


# At 200 every trajectory is still over the limit or under the target (all counted); at
# 4000 and 8000 one is compressed with its middle estimated.
@pytest.mark.parametrize(("target", "estimated"), [(200, 0), (4000, 1), (8000, 1)])
def test_sample_sessions_write_the_same_bytes_exact_or_not(
    tmp_path: Path, target: int, estimated: int
) -> None:
    src = tmp_path / "sessions"
    shutil.copytree(REPO / "sessions", src)
    outputs = {}
    for exact in (False, True):
        out = tmp_path / f"out-{exact}"
        summary = run_batch(
            plan_jobs([src], out), BatchOptions(target_tokens=target), exact=exact
        ).summary
        assert summary.estimated_before == (0 if exact else estimated)
        outputs[exact] = {
            p.relative_to(out): _sha(p) for p in sorted(out.rglob("*")) if p.is_file()
        }
    assert outputs[False] == outputs[True] and outputs[True]


class _AuthFailure:
    name = "auth-failure"

    def summarize(self, request: object) -> object:
        raise SummaryError(FailureClass.AUTH, "simulated")


def test_tokens_after_kind_says_when_tokens_after_is_the_estimate() -> None:
    # A failed summary leaves tokens_after = tokens_before: an estimate when the counts
    # given were count_for_target's, whatever the counter's own kind.
    rng = random.Random(15)
    counter = ExactWords()
    checked = 0
    for _ in range(300):
        t = _random_trajectory(rng)
        target = count_transcript(t, counter).total // 2  # type: ignore[arg-type]
        options = BatchOptions(target_tokens=target, summary_tokens=50, keep_last=2)
        mixed = count_for_target(t, counter, target, keep_last=2, reserve=50)  # type: ignore[arg-type]
        if mixed.kind is not CountKind.ESTIMATED:
            continue
        m = compress_trajectory(
            t, options, counter=counter, tokens=mixed, provider=_AuthFailure(), target=target
        ).metrics
        assert m.status is TrajectoryStatus.SUMMARY_FAILED
        assert m.tokens_after == mixed.total
        assert (m.tokens_before_kind, m.tokens_after_kind) == ("estimated", "estimated")
        checked += 1
    assert checked > 10
