"""When compaction fires, backs off or aborts: thresholds, the summary failure policy,
persistence advice and leases.

Which acceptance line each test covers: docs/acceptance.md.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from builders import (
    Conv,
    FakeProvider,
    RetryingProvider,
    openai_dump,
)
from pipeline_helpers import (
    LARGE,
    NOW,
    ROUGH,
    SMALL,
    assert_unchanged,
    run,
    session,
    summary_of,
)

from tinyjuice.lease import InMemoryLease
from tinyjuice.model import Usage
from tinyjuice.options import CompactionOptions, CompactionState
from tinyjuice.report import PersistenceRecommendation, Status
from tinyjuice.summary import (
    FailureClass,
)
from tinyjuice.tokens import count_transcript

# =========================================================================== threshold


def test_below_threshold_is_noop() -> None:
    t = session().transcript(context_window=LARGE)
    state = CompactionState(compaction_count=2)
    r = run(t, state=state)
    assert r.report.status is Status.BELOW_THRESHOLD
    assert "below threshold" in r.report.reason
    assert r.state is state
    assert_unchanged(r, t)


def test_64k_window_with_64k_floor_compacts_below_the_window() -> None:
    # A 64K model: the 64K floor would never fire, the small-window rule fires at 85%.
    t = session(10, lines=300).transcript(context_window=64_000)
    r = run(t)
    assert 54_400 <= r.report.before_tokens < 64_000
    assert r.report.threshold_tokens == int(64_000 * 0.85) < 64_000
    assert r.report.threshold_rule == "small_window"
    assert r.report.status is Status.COMPACTED
    assert r.report.after_tokens < r.report.threshold_tokens


def test_output_reservation_lowers_threshold_in_report() -> None:
    c = session(10, lines=300)  # ~60K estimated tokens of conversation
    n = len(c.messages)
    t = c.transcript(
        context_window=200_000, usage=[Usage(input_tokens=140_000, message_index=n - 1)]
    )
    plain = run(t)
    reserved = run(t, CompactionOptions(max_output_tokens=16_000))
    assert plain.report.effective_window == 200_000
    assert reserved.report.effective_window == 184_000
    assert reserved.report.threshold_tokens == int(184_000 * 0.75) < plain.report.threshold_tokens
    # 140K is under 75% of 200K but over 75% of the 184K left after the reservation.
    assert plain.report.status is Status.BELOW_THRESHOLD
    assert reserved.report.status is Status.COMPACTED


def test_report_distinguishes_estimate_from_measured() -> None:
    c = session()
    estimated = run(c.transcript(context_window=SMALL))
    measured = run(
        c.transcript(
            context_window=SMALL,
            usage=[Usage(input_tokens=7_000, message_index=len(c.messages) - 1)],
        )
    )
    assert estimated.report.prompt_tokens_kind == "estimated"
    assert estimated.report.tokens_kind == "estimated" and estimated.report.counter == "rough"
    assert estimated.report.prompt_tokens == estimated.report.before_tokens
    assert measured.report.prompt_tokens_kind == "measured"
    assert measured.report.prompt_tokens == 7_000
    d = measured.report.to_dict()
    assert d["prompt_tokens"] == {"value": 7_000, "kind": "measured"}
    assert d["tokens_kind"] == "estimated"


def test_measured_usage_overrides_estimate_in_report() -> None:
    big = session(10, lines=300)
    n = len(big.messages)
    est = count_transcript(big.transcript(), ROUGH).total
    # The estimate is under the 100K-window threshold (75K); the provider measured more.
    over = big.transcript(
        context_window=100_000, usage=[Usage(input_tokens=80_000, message_index=n - 1)]
    )
    r = run(over)
    assert est < r.report.threshold_tokens <= 80_000
    assert r.report.prompt_tokens == 80_000 and r.report.prompt_tokens_kind == "measured"
    assert r.report.status is Status.COMPACTED
    # And the other way: the estimate is over, the measured prompt is under.
    c = session()
    m = len(c.messages)
    under = c.transcript(
        context_window=SMALL, usage=[Usage(input_tokens=1_000, message_index=m - 1)]
    )
    r2 = run(under)
    assert r2.report.before_tokens >= r2.report.threshold_tokens
    assert r2.report.status is Status.BELOW_THRESHOLD and r2.report.prompt_tokens == 1_000
    # A reading taken long before the end of the transcript is stale: the estimate is used.
    stale = c.transcript(context_window=SMALL, usage=[Usage(input_tokens=1_000, message_index=2)])
    assert run(stale).report.prompt_tokens_kind == "estimated"


# =========================================================================== failure policy


@pytest.mark.parametrize("failure", [FailureClass.AUTH, FailureClass.NETWORK])
def test_auth_and_network_failures_abort_even_with_fallback_enabled(failure: FailureClass) -> None:
    t = session().transcript(context_window=SMALL)
    opts = CompactionOptions(fallback_enabled=True, accept_lossy_fallback=True)
    r = run(t, opts, FakeProvider([failure]))
    assert r.report.status is Status.ABORTED
    assert r.report.failure_class == failure.value
    assert r.report.summary_kind.value == "none"
    assert_unchanged(r, t)
    assert r.state.cooldown_until is not None and r.state.cooldown_until > NOW


def test_auth_failure_never_rotates_into_degraded_session() -> None:
    t = session().transcript(context_window=SMALL)
    lease = InMemoryLease(clock=lambda: NOW)
    r = run(
        t,
        CompactionOptions(prefer_child_continuation=True),
        FakeProvider([FailureClass.AUTH]),
        lease=lease,
    )
    assert r.report.status is Status.ABORTED and r.report.failure_class == "auth"
    assert r.report.persistence is PersistenceRecommendation.NO_PERSISTENCE_CHANGE
    assert r.report.compaction_count == 0 and r.state.compaction_count == 0
    assert not any(m.meta.generated_by for m in r.messages)
    assert_unchanged(r, t)
    assert lease.holder_of("sess-1") is None  # the lease was released
    # The cooldown keeps automatic compaction from hammering a bad credential.
    again = run(t, state=r.state, now=NOW + 5)
    assert again.report.status is Status.COOLDOWN


def test_network_failure_preserves_original_messages() -> None:
    t = session().transcript(context_window=SMALL)
    before = openai_dump(t.messages)
    r = run(t, provider=FakeProvider([FailureClass.NETWORK]))
    assert r.report.status is Status.ABORTED and r.report.failure_class == "network"
    assert r.report.dropped is False
    assert r.transcript is t
    assert r.messages == t.messages
    assert all(a is b for a, b in zip(r.messages, t.messages, strict=True))
    assert openai_dump(r.messages) == before
    assert "nothing was changed" in r.report.reason


def test_transient_failure_with_fallback_inserts_fallback_summary() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider([FailureClass.SERVER]))
    assert r.report.status is Status.COMPACTED
    assert r.report.summary_kind.value == "fallback"
    assert r.report.failure_class == "server" and r.report.retry_class == "fallback"
    assert r.report.dropped is True
    assert any("server" in w for w in r.report.warnings)
    assert "locally" in summary_of(r).text


def test_timeout_retries_once_on_main_model() -> None:
    t = session().transcript(context_window=SMALL)
    main = FakeProvider(["## Goal\nFrom the main model."])
    r = run(t, provider=RetryingProvider([FailureClass.TIMEOUT], main=main))
    assert r.report.status is Status.COMPACTED
    assert r.report.summary_kind.value == "llm"
    assert "main model" in (r.report.summary_confidence or "")
    assert "From the main model." in summary_of(r).text
    failing = RetryingProvider([FailureClass.TIMEOUT], main=FakeProvider([FailureClass.TIMEOUT]))
    r2 = run(t, provider=failing)
    assert r2.report.summary_kind.value == "fallback" and r2.report.failure_class == "timeout"


def test_abort_on_summary_failure_aborts() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(
        t, CompactionOptions(abort_on_summary_failure=True), FakeProvider([FailureClass.SERVER])
    )
    assert r.report.status is Status.ABORTED and r.report.failure_class == "server"
    assert_unchanged(r, t)
    none = run(t, CompactionOptions(abort_on_summary_failure=True), None)
    assert none.report.status is Status.ABORTED
    assert_unchanged(none, t)


def test_empty_summary_is_never_inserted() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, CompactionOptions(abort_on_summary_failure=True), FakeProvider(["   "]))
    assert r.report.status is Status.ABORTED and r.report.failure_class == "empty"
    assert_unchanged(r, t)


def test_force_bypasses_transient_cooldown() -> None:
    t = session().transcript(context_window=SMALL)
    failed = run(
        t, CompactionOptions(abort_on_summary_failure=True), FakeProvider([FailureClass.SERVER])
    )
    state = failed.state
    assert state.cooldown_until is not None and state.cooldown_until > NOW
    auto = run(t, state=state, now=NOW + 1)
    assert auto.report.status is Status.COOLDOWN
    assert_unchanged(auto, t)
    forced = run(t, CompactionOptions(force=True), FakeProvider(), state=state, now=NOW + 1)
    assert forced.report.status is Status.COMPACTED
    assert forced.state.cooldown_until is None
    later = run(t, state=state, now=state.cooldown_until + 1)
    assert later.report.status is Status.COMPACTED


def _pinned_spec_session(spec_lines: int) -> Conv:
    """A long spec pinned in the head (no decay) and many short exchanges after it."""
    c = Conv()
    spec = "- requirement: every endpoint returns JSON and logs a request id\n" * spec_lines
    c.user("Spec:\n" + spec, label="first")
    c.assistant("Understood.")
    c.user("start")
    for i in range(20):
        c.exchange(
            f"question {i}: " + "about the request-id middleware " * 4,
            f"answer {i}: " + "the middleware sets the header " * 4,
        )
    return c


def _grow(result, k: int):
    g = Conv(system=None)
    g.messages = list(result.messages)
    for j in range(3):
        g.exchange(
            f"more {k}.{j} " + "about the request-id middleware " * 4,
            "ok: " + "the middleware sets the header " * 4,
        )
    return g.transcript(context_window=SMALL)


def test_repeated_low_savings_backs_off() -> None:
    # Just over the 6,800 threshold, with most of the prompt pinned in the head: every
    # compaction can only save a few percent (state is threaded through the calls).
    lines = next(
        k
        for k in range(200, 400)
        if count_transcript(_pinned_spec_session(k).transcript(), ROUGH).total > 6_850
    )
    t = _pinned_spec_session(lines).transcript(context_window=SMALL)
    opts = CompactionOptions(decay_head_after_first_compaction=False)
    provider = FakeProvider(["## Goal\nKeep going."])
    state = None
    reports = []
    for k in range(3):
        r = run(t, opts, provider, state=state)
        reports.append(r.report)
        state = r.state
        if r.changed:
            assert r.report.tokens_saved / r.report.before_tokens < 0.10
            assert r.report.after_tokens < r.report.threshold_tokens  # no strike
            t = _grow(r, k)
    assert [x.status for x in reports] == [Status.COMPACTED, Status.COMPACTED, Status.BACKED_OFF]
    assert state.low_savings_backoff and not state.auto_blocked and state.strikes == 0
    assert "10%" in reports[2].reason
    assert reports[2].prompt_tokens >= reports[2].threshold_tokens
    forced = run(t, dataclasses.replace(opts, force=True), provider, state=state)
    assert forced.report.status is Status.COMPACTED


def test_automatic_noop_counts_a_strike() -> None:
    # Over the threshold, yet the whole conversation fits the tail: a no-op. Repeating it
    # every turn would loop; two no-ops block automatic compaction instead.
    c = Conv()
    c.user("Spec:\n" + "- requirement: every endpoint returns JSON\n" * 700)
    c.exchange("go", "ok")
    t = c.transcript(context_window=SMALL)
    assert count_transcript(t, ROUGH).total > 6_800
    state = None
    statuses = []
    for _ in range(3):
        r = run(t, state=state)
        statuses.append(r.report.status)
        state = r.state
        assert_unchanged(r, t)
    assert statuses == [Status.NOOP, Status.NOOP, Status.BACKED_OFF]
    assert state.auto_blocked
    # Manual requests never earn strikes.
    manual = run(t, CompactionOptions(keep_last=5))
    assert manual.report.status is Status.NOOP and manual.state.strikes == 0


# =========================================================================== persistence


def test_hosts_distinguish_in_place_from_rotation() -> None:
    t = session().transcript(context_window=SMALL)
    in_place = run(t).report
    child = run(t, CompactionOptions(prefer_child_continuation=True)).report
    assert in_place.persistence is PersistenceRecommendation.IN_PLACE_ARCHIVE
    assert child.persistence is PersistenceRecommendation.CHILD_CONTINUATION
    assert in_place.to_dict()["persistence"] == "in_place_archive"
    assert child.to_dict()["persistence"] == "child_continuation"
    for rep in (in_place, child):
        d = rep.to_dict()
        assert d["before"]["messages"] == len(t.messages) > d["after"]["messages"]
        assert d["boundary"]["start"] is not None and d["boundary"]["end"] is not None
        assert d["compaction_count"] == 1
        assert d["summary"]["kind"] == "fallback"
        assert d["recoverable"]


def test_no_op_requires_no_persistence_change() -> None:
    t = session().transcript(context_window=SMALL)
    lease = InMemoryLease(clock=lambda: NOW)
    lease.try_acquire("sess-1", holder="other")
    results = [
        run(session().transcript(context_window=LARGE)),  # below threshold
        run(t, CompactionOptions(keep_last=50)),  # nothing to compress
        run(t, lease=lease),  # lease busy
        run(t, provider=FakeProvider([FailureClass.AUTH])),  # aborted
    ]
    statuses = [r.report.status for r in results]
    assert statuses == [Status.BELOW_THRESHOLD, Status.NOOP, Status.LEASE_BUSY, Status.ABORTED]
    for r in results:
        assert r.report.persistence is PersistenceRecommendation.NO_PERSISTENCE_CHANGE
        assert r.report.to_dict()["persistence"] == "no_persistence_change"
        assert not r.changed and r.report.reason


def test_report_excludes_raw_content_unless_preview() -> None:
    c = Conv()
    c.user("ZEBRA-ASK-1 please fix src/zebra.py", label="first")
    c.assistant("ZEBRA-ANSWER-1")
    for i in range(6):
        c.user(f"ZEBRA-STEP-{i}")
        c.terminal(f"zebra-cmd-{i}", lines=100)
        c.assistant(f"ZEBRA-DONE-{i}")
    c.user("ZEBRA-LAST")
    c.assistant("ZEBRA-FINAL")
    t = c.transcript(context_window=SMALL)
    plain = json.dumps(run(t, provider=FakeProvider(["ZEBRA-SUMMARY"])).report.to_dict())
    assert "zebra" not in plain.lower()
    preview = run(
        t, CompactionOptions(include_preview=True), FakeProvider(["ZEBRA-SUMMARY"])
    ).report
    assert preview.preview is not None
    assert "ZEBRA-SUMMARY" in json.dumps(preview.to_dict())


# =========================================================================== locks


def test_lease_busy_returns_messages_unchanged_with_status() -> None:
    t = session().transcript(context_window=SMALL)
    lease = InMemoryLease(clock=lambda: NOW)
    lease.try_acquire("sess-1", holder="gateway-7")
    provider = FakeProvider()
    r = run(t, provider=provider, lease=lease)
    assert r.report.status is Status.LEASE_BUSY
    assert "in flight" in r.report.reason and "gateway-7" in r.report.reason
    assert r.report.dropped is False
    assert provider.requests == []  # no summary was even attempted
    assert_unchanged(r, t)


def test_concurrent_compaction_attempts_do_not_both_mutate() -> None:
    t = session().transcript(context_window=SMALL)
    lease = InMemoryLease(clock=lambda: NOW)
    inner: list = []

    class Reentrant(FakeProvider):
        def summarize(self, request):
            # A second agent path tries to compact the same session meanwhile.
            inner.append(run(t, provider=FakeProvider(), lease=lease))
            return super().summarize(request)

    outer = run(t, provider=Reentrant(), lease=lease)
    assert outer.report.status is Status.COMPACTED
    assert len(inner) == 1 and inner[0].report.status is Status.LEASE_BUSY
    assert_unchanged(inner[0], t)
    assert lease.holder_of("sess-1") is None  # released after bookkeeping
    assert run(t, lease=lease).report.status is Status.COMPACTED


def test_crashed_compactor_lease_expires() -> None:
    clock = [NOW]
    lease = InMemoryLease(ttl=300, clock=lambda: clock[0])
    lease.try_acquire("sess-1", holder="crashed-worker")  # never released
    t = session().transcript(context_window=SMALL)
    assert run(t, lease=lease).report.status is Status.LEASE_BUSY
    clock[0] += 301
    r = run(t, lease=lease)
    assert r.report.status is Status.COMPACTED
    assert lease.holder_of("sess-1") is None
