"""Offline trajectory compression (tinyjuice.fit, tinyjuice.dataset): target math with
exact small examples, boundary snapping, skipped vs failed-to-fit, summary failures, line
round trips, ordered parallel runs and streaming."""

from __future__ import annotations

import inspect
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from builders import WordCounter

from benchmarks.trajectories import trajectory_line
from tinyjuice.boundary import BoundaryIndex
from tinyjuice.dataset import (
    BatchInputError,
    detect_line_format,
    iter_lines,
    map_ordered,
    plan_jobs,
    run_batch,
)
from tinyjuice.fit import (
    BatchAggregator,
    BatchOptions,
    TrajectoryStatus,
    compress_trajectory,
    effective_target,
    extract_facts,
    fact_retention,
    head_end,
    plan_region,
    process_line,
    tail_start,
)
from tinyjuice.formats import load_bytes
from tinyjuice.model import Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.summary import FailureClass, SummaryError, SummaryRequest, SummaryText
from tinyjuice.tokens import count_transcript, default_counter


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{k}" for k in range(n))


def msg(role: Role, n: int, tag: str = "w") -> Message:
    return Message(role=role, parts=(TextPart(words(n, tag)),))


def call(call_id: str, n: int = 0) -> Message:
    return Message(
        role=Role.ASSISTANT,
        parts=(TextPart(words(n)),) if n else (),
        tool_calls=(ToolCall(call_id, "terminal", orjson.dumps({"command": "ls"}).decode()),),
    )


def result(call_id: str, n: int) -> Message:
    return Message(role=Role.TOOL, parts=(TextPart(words(n, "out")),), tool_call_id=call_id)


def transcript(messages: Sequence[Message]) -> Transcript:
    return Transcript(messages=tuple(messages), format="openai")


S, U, A = Role.SYSTEM, Role.USER, Role.ASSISTANT

#: S(10) U(10) A(100) U(100) A(100) U(100) A(100) U(5) A(5) — 530 words.
PLAIN = [
    msg(S, 10),
    msg(U, 10),
    msg(A, 100),
    msg(U, 100),
    msg(A, 100),
    msg(U, 100),
    msg(A, 100),
    msg(U, 5, "ask"),
    msg(A, 5),
]


def plan(messages: Sequence[Message], target: int, **kw: Any):
    tokens = count_transcript(transcript(messages), WordCounter())
    return plan_region(messages, tokens, target, **kw)


# ---------------------------------------------------------------------- target math


def test_plan_region_grows_only_as_far_as_needed() -> None:
    # need = 530 - 300 = 230, + 50 for the summary = 280: messages 3, 4, 5 (300 words).
    p = plan(PLAIN, 300, keep_last=2, summary_tokens=50)
    assert (p.total, p.need, p.head_end, p.tail_start) == (530, 230, 3, 7)
    assert (p.end, p.region_tokens, p.estimated_after) == (6, 300, 280)
    assert p.fits and p.compressible


def test_plan_region_takes_the_next_message_when_one_short() -> None:
    # need 330 + 50 = 380 > 300: the fourth message is needed (400 words).
    p = plan(PLAIN, 200, keep_last=2, summary_tokens=50)
    assert (p.end, p.region_tokens, p.estimated_after) == (7, 400, 180)
    assert p.fits


def test_plan_region_exact_fit_is_enough() -> None:
    # need 250 + 50 = 300 exactly: three messages, result exactly at the target.
    p = plan(PLAIN, 280, keep_last=2, summary_tokens=50)
    assert (p.end, p.estimated_after) == (6, 280)
    assert p.fits


def test_plan_region_cannot_fit_compresses_all_it_may() -> None:
    p = plan(PLAIN, 100, keep_last=2, summary_tokens=50)
    assert p.end == p.tail_start == 7
    assert p.estimated_after == 180 and not p.fits
    assert "smaller than" in p.reason


def test_plan_region_under_target_is_empty() -> None:
    p = plan(PLAIN, 600, keep_last=2)
    assert p.need < 0 and not p.compressible


def test_head_protects_first_of_each_role_and_tail_last_n() -> None:
    msgs = [msg(S, 3), msg(U, 3), call("c1"), result("c1", 3), *[msg(A, 3)] * 6, msg(U, 3)]
    idx = BoundaryIndex(msgs)
    # first system 0, user 1, assistant 2, tool 3 → head ends after the tool result.
    assert head_end(msgs, index=idx) == 4
    assert tail_start(msgs, 3, 4, index=idx) == len(msgs) - 3


def test_head_ignores_roles_first_seen_in_the_second_half() -> None:
    msgs = [msg(S, 3), msg(U, 3), *[msg(A, 3)] * 6, call("c1"), result("c1", 3)]
    assert head_end(msgs) == 3  # the first tool turn (index 9) is not protected


def test_region_end_snaps_forward_past_a_tool_group() -> None:
    # The raw end falls between a call and its result: the group goes whole.
    msgs = [
        msg(S, 10),
        msg(U, 10),
        msg(A, 10),
        msg(U, 100),
        call("c1", 50),
        result("c1", 100),
        msg(A, 100),
        msg(U, 5),
        msg(A, 5),
    ]
    # The call costs 50 words + name (1) + '{"command":"ls"}' (1) + 8 for the envelope = 60;
    # the result 100 + 2 for its call id. Total 402; need + summary = 102 + 10 = 112, first
    # reached at raw end 5 (100 + 60), between the call and its result.
    p = plan(msgs, 300, keep_last=2, summary_tokens=10)
    assert (p.total, p.need) == (402, 102)
    assert p.end == 6 and "moved from 5 to 6" in p.reason
    assert BoundaryIndex(msgs).is_legal(p.end)
    assert p.region_tokens == 100 + 60 + 102


def test_tail_snaps_back_so_it_never_starts_on_a_tool_result() -> None:
    msgs = [msg(S, 5), msg(U, 5), msg(A, 5), *[msg(U, 50), msg(A, 50)] * 3]
    msgs += [call("c9", 5), result("c9", 5), msg(A, 5)]
    idx = BoundaryIndex(msgs)
    # keep_last=2 would start the tail on the result: it moves back to the call.
    assert tail_start(msgs, 2, 3, anchor_latest_user=False, index=idx) == len(msgs) - 3


def test_latest_user_ask_is_anchored_in_the_tail() -> None:
    msgs = [msg(S, 5), msg(U, 5), msg(A, 5), msg(U, 50, "ask")]
    msgs += [m for k in range(6) for m in (call(f"c{k}", 5), result(f"c{k}", 50))]
    t = tail_start(msgs, 2, 3)
    assert t == 3  # the ask at 3 stays verbatim even with keep_last=2


# ------------------------------------------------------------------ compress_trajectory


def test_skipped_under_target_returns_the_same_object() -> None:
    t = transcript(PLAIN)
    r = compress_trajectory(t, BatchOptions(target_tokens=10_000), counter=WordCounter())
    assert r.transcript is t and not r.changed
    assert r.metrics.status is TrajectoryStatus.SKIPPED_UNDER_TARGET
    assert r.metrics.skipped_under_target and not r.metrics.still_over_limit
    assert r.metrics.tokens_after == r.metrics.tokens_before == 530


def test_compressed_trajectory_fits_and_keeps_head_and_tail_objects() -> None:
    counter = default_counter()
    big = [msg(S, 20), msg(U, 20)]
    for k in range(30):
        big += [call(f"c{k}", 10), result(f"c{k}", 200), msg(A, 30)]
    big += [msg(U, 10, "ask"), msg(A, 10)]
    t = transcript(big)
    before = count_transcript(t, counter).total
    target = before // 3
    r = compress_trajectory(t, BatchOptions(target_tokens=target, keep_last=2), counter=counter)
    m = r.metrics
    assert r.changed and m.status is TrajectoryStatus.COMPRESSED
    # The reported figure is the exact count of what was produced.
    assert m.tokens_after == count_transcript(r.transcript, counter).total <= target
    out = r.transcript.messages
    assert out[-2] is big[-2] and out[-1] is big[-1]  # tail: same objects
    assert m.region_start is not None and m.region_end is not None
    assert all(out[i] is big[i] for i in range(m.region_start))  # head: same objects
    assert sum(1 for x in out if x.meta.is_summary) == 1
    assert m.fallback_summaries == 1 and m.summary_calls == 0
    assert m.turns_removed == len(big) - len(out) > 0
    # Only as much as needed: one tool round fewer would not have fitted.
    assert m.region_end < len(big) - 2
    ids = {c.id for x in out for c in x.tool_calls}
    assert all(x.tool_call_id in ids for x in out if x.role is Role.TOOL)
    results = {x.tool_call_id for x in out if x.role is Role.TOOL}
    assert ids == results


def test_failed_to_fit_is_not_skipped() -> None:
    # A huge protected tail: compressing the whole middle cannot reach the target.
    msgs = [msg(S, 5), msg(U, 5), msg(A, 5), *[msg(U, 40), msg(A, 40)] * 3, msg(U, 900, "ask")]
    t = transcript(msgs)
    r = compress_trajectory(
        t, BatchOptions(target_tokens=500, keep_last=1, summary_tokens=64), counter=WordCounter()
    )
    assert r.metrics.status is TrajectoryStatus.STILL_OVER_LIMIT
    assert r.metrics.still_over_limit and not r.metrics.skipped_under_target
    agg = BatchAggregator()
    agg.add(r.metrics)
    agg.add(
        compress_trajectory(t, BatchOptions(target_tokens=10_000), counter=WordCounter()).metrics
    )
    s = agg.summary()
    assert (s.still_over_limit, s.skipped_under_target, s.compressed) == (1, 1, 0)


def test_nothing_compressible_is_still_over_limit_and_unchanged() -> None:
    t = transcript([msg(S, 300), msg(U, 300, "ask"), msg(A, 300)])
    r = compress_trajectory(t, BatchOptions(target_tokens=100), counter=WordCounter())
    assert r.transcript is t
    assert r.metrics.status is TrajectoryStatus.STILL_OVER_LIMIT
    assert r.metrics.tokens_after == r.metrics.tokens_before


def test_aggregate_tells_compacted_apart_from_unchanged() -> None:
    # One of each: rewritten but still over, over and untouched, fitted, under the target.
    over = [msg(S, 5), msg(U, 5), msg(A, 5), *[msg(U, 40), msg(A, 40)] * 3, msg(U, 900, "ask")]
    cases = [
        (over, BatchOptions(target_tokens=500, keep_last=1, summary_tokens=64)),
        ([msg(S, 300), msg(U, 300, "ask"), msg(A, 300)], BatchOptions(target_tokens=100)),
        (PLAIN, BatchOptions(target_tokens=300, keep_last=2, summary_tokens=50)),
        (PLAIN, BatchOptions(target_tokens=10_000)),
    ]
    agg = BatchAggregator()
    for messages, options in cases:
        r = compress_trajectory(transcript(messages), options, counter=WordCounter())
        assert r.metrics.compacted == r.changed
        assert r.metrics.to_dict()["compacted"] == r.changed
        agg.add(r.metrics)
    s = agg.summary()
    assert (s.compressed, s.still_over_limit, s.skipped_under_target) == (1, 2, 1)
    assert (s.compacted, s.compacted_still_over_limit, s.unchanged_over_limit) == (2, 1, 1)
    d = s.to_dict()
    assert (d["compressed"], d["still_over_limit"]) == (1, 2)  # the old keys keep their meaning
    assert (d["compacted"], d["compacted_still_over_limit"], d["unchanged_over_limit"]) == (2, 1, 1)


class FailingProvider:
    def __init__(self, failure: FailureClass) -> None:
        self.failure = failure
        self.name = "failing"
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryText:
        self.calls += 1
        raise SummaryError(self.failure, "simulated")


class EchoProvider:
    name = "echo"

    def summarize(self, request: SummaryRequest) -> SummaryText:
        return SummaryText(f"{len(request.messages)} messages were summarised.")


def _long() -> Transcript:
    msgs = [msg(S, 20), msg(U, 20)]
    for k in range(20):
        msgs += [call(f"c{k}", 10), result(f"c{k}", 150)]
    return transcript([*msgs, msg(U, 10, "ask"), msg(A, 10)])


@pytest.mark.parametrize("failure", [FailureClass.AUTH, FailureClass.NETWORK])
def test_auth_and_network_failures_drop_nothing(failure: FailureClass) -> None:
    t = _long()
    provider = FailingProvider(failure)
    r = compress_trajectory(t, BatchOptions(target_tokens=800), provider=provider)
    assert r.transcript is t and not r.changed
    m = r.metrics
    assert m.status is TrajectoryStatus.SUMMARY_FAILED and m.still_over_limit
    assert (m.summary_calls, m.summary_errors, m.fallback_summaries) == (1, 1, 0)
    assert m.failure_class == failure.value and provider.calls == 1


def test_other_failures_fall_back_to_the_deterministic_summary() -> None:
    r = compress_trajectory(
        _long(), BatchOptions(target_tokens=1500), provider=FailingProvider(FailureClass.SERVER)
    )
    m = r.metrics
    assert m.status is TrajectoryStatus.COMPRESSED
    assert (m.summary_calls, m.summary_errors, m.fallback_summaries) == (1, 1, 1)


def test_a_provider_summary_is_used_when_it_works() -> None:
    r = compress_trajectory(_long(), BatchOptions(target_tokens=1500), provider=EchoProvider())
    summary = next(x for x in r.transcript.messages if x.meta.is_summary)
    assert "messages were summarised." in summary.text
    assert (r.metrics.summary_calls, r.metrics.fallback_summaries) == (1, 0)


def test_rules_profile_applies_rules_first() -> None:
    t = _long()
    r = compress_trajectory(t, BatchOptions(target_tokens=2500, profile="rules"))
    assert r.changed and r.metrics.rules_applied > 0
    assert r.metrics.tokens_after <= 2500


def _with_secret(secret_at: int | None) -> Transcript:
    """:func:`_long` with the tool result ``secret_at`` (in the region) naming a
    password file: the value follows ``password=`` and reads as a path."""
    msgs = list(_long().messages)
    if secret_at is not None:
        text = "config loaded: password=/home/u/hunter2secret.txt\nok"
        msgs[secret_at] = replace(msgs[secret_at], parts=(TextPart(text),))
    return transcript(msgs)


def test_the_region_is_redacted_before_the_fallback_reads_it() -> None:
    # The fallback redacts every item it emits, but an item can lose its secret's
    # context: the path after "password=" alone is no secret. The region is redacted
    # first, so the value never reaches the summary.
    t = _with_secret(5)
    r = compress_trajectory(t, BatchOptions(target_tokens=1500), counter=default_counter())
    assert r.metrics.region_start is not None and r.metrics.region_end is not None
    assert r.metrics.region_start <= 5 < r.metrics.region_end
    summary = next(x for x in r.transcript.messages if x.meta.is_summary)
    assert "hunter2secret" not in summary.text
    assert all("hunter2secret" not in x.text for x in r.transcript.messages)


@pytest.mark.parametrize(("secret_at", "redacted"), [(None, 0), (5, 1)])
def test_the_region_is_redacted_in_one_batched_scan(
    monkeypatch: pytest.MonkeyPatch, secret_at: int | None, redacted: int
) -> None:
    # Only the messages the batched scan flags are redacted in full (one part each
    # here), not every message of the region.
    import tinyjuice.redact as redact_module

    parts: list[object] = []
    real = redact_module._redact_part

    def spy(part: Any, *rest: Any) -> Any:
        parts.append(part)
        return real(part, *rest)

    monkeypatch.setattr(redact_module, "_redact_part", spy)
    r = compress_trajectory(
        _with_secret(secret_at), BatchOptions(target_tokens=1500), counter=default_counter()
    )
    assert r.metrics.status is TrajectoryStatus.COMPRESSED
    assert r.metrics.region_end is not None and r.metrics.region_end > 10
    assert len(parts) == redacted


# -------------------------------------------------------------------------- lines


#: Trajectory 0 of the benchmark dataset: 51 turns, about 7,400 tokens.
LONG = 0


def test_process_line_round_trips_a_sharegpt_line() -> None:
    raw = trajectory_line(LONG)
    before = count_transcript(load_bytes(raw.rstrip(b"\n"), "x", "sharegpt")).total
    target = before // 2
    res = process_line(raw, "sharegpt", BatchOptions(target_tokens=target), line=7)
    assert res.output is not None and res.output.endswith(b"\n")
    assert res.output.count(b"\n") == 1  # one line in, one line out
    again = load_bytes(res.output.rstrip(b"\n"), "x", "sharegpt")
    assert count_transcript(again).total == res.metrics.tokens_after <= target
    assert res.metrics.line == 7 and res.metrics.status is TrajectoryStatus.COMPRESSED
    doc = orjson.loads(res.output)
    assert doc["id"] == orjson.loads(raw)["id"]  # other fields kept


def test_process_line_works_out_the_target_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The skip check and the compression share one effective_target (policy, window).
    import tinyjuice.fit as fit

    calls: list[int] = []
    real = fit.effective_target

    def spy(t: Transcript, options: BatchOptions) -> int:
        calls.append(1)
        return real(t, options)

    monkeypatch.setattr(fit, "effective_target", spy)
    raw = trajectory_line(LONG)
    before = count_transcript(load_bytes(raw.rstrip(b"\n"), "x", "sharegpt")).total
    res = process_line(raw, "sharegpt", BatchOptions(target_tokens=before // 2))
    assert res.metrics.status is TrajectoryStatus.COMPRESSED
    assert len(calls) == 1


def test_effective_target_is_worked_out_once_per_model_and_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The answer depends on format, model, window, policy and target only: a dataset's
    # lines share it, so the policy and model table are consulted once per distinct key.
    import tinyjuice.fit as fit
    import tinyjuice.policies as policies

    monkeypatch.setattr(fit, "_TARGETS", {})
    calls: list[str | None] = []
    real = policies.agent_threshold

    def spy(t: Transcript, *args: Any) -> Any:
        calls.append(t.model)
        return real(t, *args)

    monkeypatch.setattr(policies, "agent_threshold", spy)
    opts = BatchOptions(target_tokens=10**9)
    small = Transcript(messages=(msg(U, 3),), format="sharegpt", model="gpt-4o")
    other = replace(small, messages=(msg(U, 5), msg(A, 5)))
    first = effective_target(small, opts)
    assert effective_target(other, opts) == first
    assert calls == ["gpt-4o"]
    # Another model, window, policy or target is worked out (and answered) on its own.
    variants = [
        (replace(small, model="gpt-3.5-turbo"), opts),
        (replace(small, context_window=32_000), opts),
        (small, BatchOptions(target_tokens=10**9, policy="codex")),
        (small, BatchOptions(target_tokens=1_000)),
    ]
    for t, o in variants:
        got = effective_target(t, o)
        monkeypatch.setattr(fit, "_TARGETS", {})
        assert got == effective_target(t, o)  # the same answer when nothing was remembered
    assert len(calls) == 1 + 2 * len(variants)
    assert effective_target(small, BatchOptions(target_tokens=1_000)) == 1_000


@pytest.mark.parametrize("container", ["object", "list"])
def test_write_compact_is_the_indented_document_on_one_line(container: str) -> None:
    # process_line writes a changed ShareGPT line with write_compact: byte for byte what
    # indenting it and parsing it back gave, in the line's own container.
    from tinyjuice.formats.sharegpt import write, write_compact

    raw = trajectory_line(LONG).rstrip(b"\n")
    if container == "list":
        raw = b"[" + raw + b"]"
    t = load_bytes(raw, "x", "sharegpt")
    before = count_transcript(t).total
    res = compress_trajectory(t, BatchOptions(target_tokens=before // 2))
    assert res.changed
    for each in (t, res.transcript):
        assert write_compact(each) == orjson.dumps(orjson.loads(write(each)))
    assert write_compact(res.transcript).startswith(b"[" if container == "list" else b"{")
    out = process_line(raw + b"\n", "sharegpt", BatchOptions(target_tokens=before // 2))
    assert out.output == write_compact(res.transcript) + b"\n"


def test_process_line_keeps_crlf_and_reports_bad_lines() -> None:
    raw = trajectory_line(LONG).rstrip(b"\n") + b"\r\n"
    res = process_line(raw, "sharegpt", BatchOptions(target_tokens=3000))
    assert res.output is not None and res.output.endswith(b"}\r\n")
    bad = process_line(b'{"conversations": 5}\n', "sharegpt", BatchOptions(target_tokens=500))
    assert bad.output is None and bad.metrics.status is TrajectoryStatus.BAD_INPUT
    assert "conversations" in (bad.metrics.error or "")


@pytest.mark.parametrize("shape", ["list", "object"])
def test_openai_lines_keep_their_shape(shape: str) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    for k in range(12):
        messages += [
            {"role": "assistant", "content": f"step {k} " + words(80)},
            {"role": "user", "content": f"next {k}"},
        ]
    messages += [{"role": "user", "content": "final ask"}]
    doc: Any = messages if shape == "list" else {"messages": messages, "model": "gpt-4.1"}
    raw = orjson.dumps(doc) + b"\n"
    res = process_line(raw, "openai", BatchOptions(target_tokens=900))
    assert res.output is not None and res.output.count(b"\n") == 1
    out = orjson.loads(res.output)
    assert isinstance(out, list) if shape == "list" else out["model"] == "gpt-4.1"
    kept = out if shape == "list" else out["messages"]
    assert kept[-1] == {"role": "user", "content": "final ask"}


# ------------------------------------------------------------------ facts, aggregate


def test_fact_retention_counts_what_survives() -> None:
    removed = [
        Message(
            Role.ASSISTANT,
            tool_calls=(ToolCall("c1", "terminal", '{"command": "make test"}'),),
        ),
        Message(
            Role.TOOL,
            (TextPart('{"output": "ok\\nValueError: bad row in src/app/io.py", "exit_code": 1}'),),
            tool_call_id="c1",
        ),
        Message(Role.USER, (TextPart("see https://example.com/docs and ./run.sh"),)),
    ]
    facts = extract_facts(removed)
    assert facts["commands"] == ["make test"]
    assert facts["errors"] == ["ValueError: bad row in src/app/io.py"]
    assert facts["urls"] == ["https://example.com/docs"]
    assert "src/app/io.py" in facts["paths"] and "./run.sh" in facts["paths"]
    output = [Message(Role.USER, (TextPart("ran make test; src/app/io.py failed"),))]
    fr = fact_retention(removed, output)
    assert fr.by_kind["commands"] == (1, 1) and fr.by_kind["urls"] == (1, 0)
    assert fr.kept == 2 and fr.total == 5 and fr.rate == pytest.approx(0.4)


def test_aggregate_to_dict_sums_and_ratios() -> None:
    agg = BatchAggregator()
    t = _long()
    for target in (100_000, 1500):
        agg.add(compress_trajectory(t, BatchOptions(target_tokens=target)).metrics)
    d = agg.summary().to_dict(timings=False)
    assert d["trajectories"] == 2 and d["compressed"] == 1 and d["skipped_under_target"] == 1
    assert d["tokens_saved"] == d["tokens_before"] - d["tokens_after"] > 0
    assert d["turns_removed"] > 0 and "duration_s" not in d


# ------------------------------------------------------------------- dataset


def _dataset(path: Path, n: int, bad: dict[int, bytes] | None = None) -> Path:
    with path.open("wb") as fh:
        for i in range(n):
            if bad and i in bad:
                fh.write(bad[i])
            fh.write(trajectory_line(i))
    return path


def test_detect_line_format_tells_datasets_from_jsonl_sessions(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds.jsonl", 3, {0: b"not json\n"})
    assert detect_line_format(ds) == "sharegpt"
    root = Path(__file__).resolve().parents[2] / "sessions"
    assert detect_line_format(root / "claude-code.jsonl") is None
    assert detect_line_format(root / "hermes-gateway.jsonl") is None
    assert detect_line_format(root / "openai-chat.json") is None


def test_plan_jobs_mirrors_directories_and_refuses_overwrites(tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    _dataset(src / "a.jsonl", 2)
    (src / "sub" / "b.json").write_text('{"messages": [{"role": "user", "content": "x"}]}')
    (src / ".hidden").write_text("x")
    jobs = plan_jobs([src], tmp_path / "out")
    assert [(j.target.relative_to(tmp_path / "out").as_posix(), j.kind) for j in jobs] == [
        ("a.jsonl", "lines"),
        ("sub/b.json", "lines"),
    ]
    with pytest.raises(BatchInputError, match="over the input"):
        plan_jobs([src / "a.jsonl"], src / "a.jsonl")
    with pytest.raises(BatchInputError, match="no such"):
        plan_jobs([tmp_path / "missing"], tmp_path / "o")


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_map_ordered_keeps_order_and_bounds_what_it_reads(workers: int) -> None:
    taken: list[int] = []

    def items() -> Iterator[int]:
        for i in range(40):
            taken.append(i)
            yield i

    it = map_ordered(_square, items(), workers=workers, max_in_flight=4)
    first = next(it)
    assert first == (0, 0)
    # Only what is in flight has been read: the source is consumed incrementally.
    assert len(taken) <= (1 if workers == 1 else 5)
    rest = list(it)
    assert [x for x, _ in [first, *rest]] == list(range(40))
    assert all(y == x * x for x, y in rest)


def test_iter_lines_is_lazy(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds.jsonl", 3)
    gen = iter_lines(ds)
    assert inspect.isgenerator(gen)
    n, raw = next(gen)
    assert n == 1 and raw == trajectory_line(0)
    gen.close()


def _peak(tmp_path: Path, lines: int) -> tuple[int, int]:
    ds = tmp_path / f"same-{lines}.jsonl"
    ds.write_bytes(trajectory_line(17) * lines)  # ~6 KB a line
    out = tmp_path / f"out-{lines}.jsonl"
    jobs = plan_jobs([ds], out)
    tracemalloc.start()
    try:
        run = run_batch(jobs, BatchOptions(target_tokens=10**9), workers=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert run.summary.skipped_under_target == lines
    assert out.read_bytes() == ds.read_bytes()
    return peak, ds.stat().st_size


def test_run_batch_streams_without_holding_the_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rough counter keeps no text cache, so what is measured is the pipeline itself.
    monkeypatch.setenv("TJUI_TOKENIZER", "rough")
    small, _ = _peak(tmp_path, 120)
    big, size = _peak(tmp_path, 600)
    # Five times the lines, about the same peak: memory does not grow with the dataset.
    assert big < 1.5 * small, (small, big)
    assert big < size / 4, f"peak {big:,} bytes for a {size:,}-byte dataset"


def test_a_worker_keeps_short_counts_between_trajectories(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The counter's cache is bounded every few trajectories, but the short texts that
    # come back in the next trajectories (tool names, the shared system prompt) keep
    # their counts: only the long ones are forgotten.
    import tinyjuice.dataset as dataset

    monkeypatch.setattr(dataset, "_CACHE_RESET_EVERY", 1)
    src = tmp_path / "in.jsonl"
    src.write_bytes(trajectory_line(1) + trajectory_line(2))
    counter = default_counter()
    counter.clear_cache()  # type: ignore[attr-defined]
    run_batch(plan_jobs([src], tmp_path / "out.jsonl"), BatchOptions(target_tokens=10**9))
    cache = counter._cache  # type: ignore[attr-defined]
    assert "terminal" in cache
    assert cache and all(type(k) is str and len(k) <= dataset._CACHE_KEEP_CHARS for k in cache)


@pytest.mark.parametrize("workers", [1, 2])
def test_run_batch_bad_and_blank_lines_pass_through_in_order(tmp_path: Path, workers: int) -> None:
    ds = _dataset(tmp_path / "ds.jsonl", 40, {5: b"{oops\n", 9: b"\n"})
    out = tmp_path / f"out{workers}.jsonl"
    run = run_batch(plan_jobs([ds], out), BatchOptions(target_tokens=2500), workers=workers)
    lines_in = ds.read_bytes().splitlines(keepends=True)
    lines_out = out.read_bytes().splitlines(keepends=True)
    assert len(lines_out) == len(lines_in) == 42
    assert lines_out[5] == b"{oops\n" and lines_out[10] == b"\n"
    s = run.summary
    assert s.bad_inputs == 1 and s.bad[0][1] == 6  # reported with its 1-based line
    assert s.trajectories == 40 and s.compressed > 0 and s.skipped_under_target > 0
    for a, b in zip(lines_in, lines_out, strict=True):
        if a != b:
            assert orjson.loads(b)["id"] == orjson.loads(a)["id"]
    assert not (tmp_path / f"out{workers}.jsonl.partial").exists()


def test_run_batch_empty_files_are_no_trajectories_and_bad_files_are_not_lines(
    tmp_path: Path,
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "empty.json").write_bytes(b"")
    (src / "blank.jsonl").write_bytes(b"\n  \n")
    (src / "notes.txt").write_bytes(b"not a transcript\n")
    _dataset(src / "ds.jsonl", 3, {1: b"{oops\n"})
    out = tmp_path / "out"
    run = run_batch(plan_jobs([src], out), BatchOptions(target_tokens=2500))
    s = run.summary
    assert s.trajectories == 3 and s.bad_inputs == 2 and s.bad_files == 1
    bad = {(Path(where).name, line) for where, line, _ in s.bad}
    assert bad == {("notes.txt", None), ("ds.jsonl", 2)}
    for name in ("empty.json", "blank.jsonl", "notes.txt"):
        assert (out / name).read_bytes() == (src / name).read_bytes()
    empty = run_batch(plan_jobs([src / "empty.json"], tmp_path / "e.json"), BatchOptions(10))
    assert (empty.summary.trajectories, empty.summary.bad_inputs, empty.items) == (0, 0, 1)
    assert (tmp_path / "e.json").read_bytes() == b""


def test_run_batch_stops_when_asked_and_leaves_a_valid_partial(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds.jsonl", 30)
    out = tmp_path / "out.jsonl"
    seen = 0

    def stop() -> bool:
        nonlocal seen
        seen += 1
        return seen >= 7

    run = run_batch(plan_jobs([ds], out), BatchOptions(target_tokens=2500), should_stop=stop)
    assert run.interrupted and not out.exists()
    assert run.partial == str(out) + ".partial" and run.partial_lines == 7
    assert run.stopped_line == 7
    lines = Path(run.partial).read_bytes().splitlines()
    assert len(lines) == 7 and all(orjson.loads(x)["conversations"] for x in lines)


class CountingProvider:
    """A deterministic stub summary provider (module level: workers unpickle it)."""

    name = "counting"

    def summarize(self, request: SummaryRequest) -> SummaryText:
        return SummaryText(f"Summary of {len(request.messages)} turns.")


def counting_provider() -> CountingProvider:
    return CountingProvider()


def auth_failing_provider() -> FailingProvider:
    return FailingProvider(FailureClass.AUTH)


@pytest.mark.parametrize("workers", [1, 2])
def test_run_batch_with_a_provider_in_each_worker(tmp_path: Path, workers: int) -> None:
    ds = _dataset(tmp_path / "ds.jsonl", 24)
    out = tmp_path / "out.jsonl"
    run = run_batch(
        plan_jobs([ds], out),
        BatchOptions(target_tokens=2500),
        workers=workers,
        provider_factory=counting_provider,
    )
    s = run.summary
    assert s.compressed > 0 and s.summary_calls == s.compressed + s.still_over_limit
    assert s.fallback_summaries == 0 and s.summary_errors == 0
    assert out.read_bytes().count(b"turns.\\n\\n[END OF COMPACTION SUMMARY") == s.compressed


def test_run_batch_provider_auth_failure_changes_nothing(tmp_path: Path) -> None:
    ds = _dataset(tmp_path / "ds.jsonl", 12)
    out = tmp_path / "out.jsonl"
    run = run_batch(
        plan_jobs([ds], out),
        BatchOptions(target_tokens=2500),
        workers=2,
        provider_factory=auth_failing_provider,
    )
    s = run.summary
    assert s.summary_failed > 0 and s.compressed == 0
    assert s.summary_errors == s.summary_failed and s.tokens_after == s.tokens_before
    # An auth failure would repeat for every trajectory: the run stops at the first.
    assert run.aborted and "auth" in run.aborted and run.interrupted
    assert not out.exists() and run.partial is not None
    kept = Path(run.partial).read_bytes()
    assert ds.read_bytes().startswith(kept)  # what was written is unchanged input
