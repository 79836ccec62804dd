"""The compaction pipeline end to end: ``compress()`` and ``plan_boundary()``.

Seed acceptance lines → named tests (module::test, "here" = this file)
=======================================================================

Seed 000 — Test Matrix
- JSON argument shrink preserves parseability →
  test_digest::test_json_argument_shrink_preserves_parseability,
  here::test_json_argument_shrink_preserves_parseability
- Non-JSON argument shrink is a no-op → test_digest::test_non_json_argument_shrink_is_noop,
  here::test_non_json_argument_shrink_is_noop
- Tool result without retained tool call is removed →
  test_boundary::test_tool_result_without_retained_call_is_removed,
  here::test_sanitization_after_summary_insertion
- Tool call without retained result is stripped or bridged according to policy →
  test_boundary::test_tool_call_without_retained_result_is_stripped_or_bridged,
  here::test_orphan_call_policy_strip_or_bridge_in_pipeline
- Tail selector anchors latest real user message →
  test_boundary::test_tail_selector_anchors_latest_real_user,
  here::test_most_recent_user_ask_outside_compressed_middle
- Tail selector anchors latest visible assistant message →
  test_boundary::test_tail_selector_anchors_latest_visible_assistant,
  here::test_last_assistant_answer_outside_compressed_middle
- Summary metadata excludes generated summaries from latest-user search →
  test_boundary::test_summary_metadata_excluded_from_latest_user_search,
  here::test_summary_messages_excluded_from_latest_user_anchor
- Partial split keeps last N user exchanges →
  test_boundary::test_partial_split_keeps_last_n_user_exchanges,
  here::test_keep_last_2_preserves_last_two_exchanges_verbatim
- Partial rejoin avoids user/user and assistant/assistant adjacency →
  test_boundary::test_partial_rejoin_avoids_same_role_adjacency,
  here::test_partial_rejoin_keeps_role_alternation
- Static prefix cache key is stable under tool order changes →
  test_cache_hints::test_static_prefix_cache_key_stable_under_tool_order,
  here::test_report_cache_key_ignores_tool_order
- Compression failure policy aborts on auth and network failures →
  test_summary::test_failure_policy_aborts_on_auth,
  test_summary::test_failure_policy_aborts_on_network,
  here::test_auth_failure_never_rotates_into_degraded_session,
  here::test_network_failure_preserves_original_messages
- Deterministic fallback summary redacts sensitive content →
  test_summary::test_fallback_summary_redacts_sensitive_content,
  here::test_fallback_summary_never_preserves_secrets
- Context breakdown never requires raw prompt logging →
  test_breakdown::test_context_breakdown_never_requires_raw_text,
  here::test_report_explains_trigger_without_raw_text

Seed 000 — Acceptance
Threshold and token budgeting
- 64K model with 64K floor → threshold below 64K →
  test_budget::test_64k_window_with_64k_floor_threshold_below_64k,
  here::test_64k_window_with_64k_floor_compacts_below_the_window
- Output reservation reduces the input budget →
  test_budget::test_output_reservation_reduces_input_budget,
  here::test_output_reservation_lowers_threshold_in_report
- Report distinguishes rough estimates from provider usage →
  test_budget::test_report_distinguishes_estimated_and_measured_prompt_tokens,
  here::test_report_distinguishes_estimate_from_measured
Deterministic tool-output prepass
- Repeated identical read-file outputs keep only the newest full copy →
  test_digest::test_repeated_read_file_keeps_only_newest_full_copy,
  here::test_repeated_read_file_outputs_keep_newest_full_copy
- Old terminal output becomes a command/exit/line-count summary →
  test_digest::test_old_terminal_output_becomes_command_exit_line_count_digest,
  here::test_old_terminal_output_becomes_command_exit_line_digest
- Recent tail output remains exact → test_digest::test_recent_tail_output_remains_exact,
  here::test_recent_tail_tool_output_remains_exact
- (spec) Record each digest in the report → test_digest::test_each_digest_recorded_in_report,
  here::test_scenario_report_says_what_was_dropped
- Tool arguments remain valid JSON after shrinking →
  here::test_tool_arguments_stay_valid_json_after_shrinking,
  test_pipeline_properties::test_valid_json_arguments_stay_valid
- Sensitive keys and values are redacted before persistence or model calls →
  test_redact::test_sensitive_keys_redacted_before_persistence,
  here::test_secrets_redacted_before_summary_provider_sees_them
Provider-safe tool-argument shrinking
- A large write_file argument stays valid JSON →
  test_digest::test_large_write_file_argument_stays_valid_json,
  here::test_large_write_file_argument_stays_valid_json
- Non-JSON tool arguments are not corrupted → here::test_non_json_tool_arguments_not_corrupted
- Unicode is preserved without unnecessary escaping →
  test_digest::test_unicode_preserved_without_escaping,
  here::test_unicode_arguments_preserved_unescaped
Multimodal and historical media
- Five images cannot be near-zero tokens → test_media::test_five_images_not_near_zero_tokens,
  here::test_five_images_count_in_report_tokens
- Old screenshots do not survive every compaction →
  test_media::test_old_screenshots_do_not_survive,
  here::test_old_screenshots_do_not_survive_compaction
- The newest image-bearing user turn remains →
  test_media::test_newest_image_bearing_user_turn_kept, here::test_newest_image_turn_kept
Protected head
- First compaction may keep the opening task framing →
  test_boundary::test_first_compaction_keeps_opening_framing,
  here::test_first_compaction_keeps_opening_task_framing
- Repeated compactions do not repeatedly copy the first request →
  test_boundary::test_repeated_compaction_does_not_copy_first_request,
  here::test_repeated_compaction_does_not_copy_first_request_again
- System prompt protected unless the caller omits it →
  test_boundary::test_system_prompt_protected_unless_omitted,
  here::test_system_prompt_survives_compaction_unless_unprotected
Tail selection by token budget
- A huge old tool result does not force preserving all recent history →
  test_boundary::test_huge_old_tool_result_does_not_force_all_recent_history,
  here::test_huge_old_tool_result_does_not_bloat_the_tail
- A short transcript does not rotate into a no-op compaction →
  test_boundary::test_short_transcript_does_not_rotate_into_noop,
  here::test_forced_short_transcript_still_compacts
- The selected boundary is deterministic → test_boundary::test_boundary_is_deterministic,
  here::test_compress_is_deterministic
Tool-group boundary alignment
- No output has a tool result whose call id is missing →
  here::test_no_orphaned_tool_results_after_compaction,
  test_pipeline_properties::test_tool_pairs_complete_and_tail_identical
- No tool-call-only assistant message the provider rejects →
  here::test_no_unanswered_tool_calls_after_compaction
- Sanitization happens after summary insertion and tail reattachment →
  here::test_sanitization_after_summary_insertion
Latest user and assistant anchors
- The most recent user ask stays outside the middle →
  here::test_most_recent_user_ask_outside_compressed_middle
- The last rendered assistant answer stays outside the middle →
  here::test_last_assistant_answer_outside_compressed_middle
- Compaction summaries are excluded from the latest-user search →
  here::test_summary_messages_excluded_from_latest_user_anchor
Structured handoff summary
- Summary text cannot be mistaken for an active request →
  test_summary::test_summary_not_mistaken_for_active_request,
  here::test_summary_message_is_marked_reference_only
- Summary output is redacted after generation →
  test_summary::test_render_redacts_generated_summary_text,
  here::test_provider_summary_redacted_after_generation
- Generated summaries carry strippable metadata →
  test_summary::test_summary_metadata_is_tagged_and_strippable,
  here::test_summary_message_carries_strippable_metadata
- Repeated compactions update the summary instead of nesting →
  test_summary::test_repeated_compactions_update_not_nest,
  here::test_repeated_compaction_updates_summary_not_nested,
  here::test_repeated_fallback_compaction_keeps_one_summary
Iterative summary updates
- A resumed session with a previous summary continues iteratively →
  test_summary::test_resumed_session_rehydrates_previous_summary,
  here::test_resumed_session_sends_previous_summary_to_provider
- A new session cannot inherit another session's summary →
  test_summary::test_new_session_does_not_inherit_summary,
  here::test_new_session_does_not_inherit_state_summary
- Historical summary wrappers are stripped before re-summarization →
  test_summary::test_historical_wrappers_stripped,
  here::test_previous_summary_wrappers_stripped_before_resummarization
Deterministic fallback summary
- Provider absent → fallback can still compact →
  here::test_summary_provider_absent_fallback_still_compacts
- Fallback says it is locally generated and may be incomplete →
  test_summary::test_fallback_says_locally_generated,
  here::test_fallback_summary_says_locally_generated
- Secrets are redacted before preservation → here::test_fallback_summary_never_preserves_secrets
- (spec) Fallback marked lower confidence in the report →
  here::test_fallback_marked_lower_confidence_in_report
Summary failure policy
- Auth failure never rotates into a degraded session →
  here::test_auth_failure_never_rotates_into_degraded_session
- Network failure preserves the original message list →
  here::test_network_failure_preserves_original_messages
- Manual force bypasses transient cooldown → test_budget::test_force_bypasses_transient_cooldown,
  here::test_force_bypasses_transient_cooldown
- Repeated <10% estimated savings backs off →
  test_budget::test_repeated_under_10_percent_savings_backs_off,
  here::test_repeated_low_savings_backs_off
In-place vs child-session
- Hosts can tell "succeeded in place" from "session id rotated" →
  here::test_hosts_distinguish_in_place_from_rotation
- A no-op needs no persistence change → here::test_no_op_requires_no_persistence_change
- Reports exclude raw content unless a preview was asked for →
  here::test_report_excludes_raw_content_unless_preview
Locks
- Concurrent attempts do not both mutate the session →
  test_lease::test_concurrent_compaction_attempts_do_not_both_acquire,
  here::test_concurrent_compaction_attempts_do_not_both_mutate
- A crashed compactor cannot block compaction forever →
  test_lease::test_crashed_compactor_cannot_block_forever,
  here::test_crashed_compactor_lease_expires
- Hosts can surface "already in flight" without data loss →
  here::test_lease_busy_returns_messages_unchanged_with_status
Manual partial compression
- keep_last=2 preserves the last two user exchanges verbatim →
  here::test_keep_last_2_preserves_last_two_exchanges_verbatim
- Rejoined messages keep role alternation → here::test_partial_rejoin_keeps_role_alternation
- Preview has head, tail and total counts and rough tokens →
  test_boundary::test_preview_includes_head_tail_total_and_tokens,
  here::test_plan_boundary_preview_counts_and_tokens
Prompt cache
- Tool order does not change the cache key → here::test_report_cache_key_ignores_tool_order
- A timestamped session id does not make identical prefixes cache-cold →
  test_cache_hints::test_timestamped_session_id_does_not_change_key,
  here::test_report_cache_key_ignores_session_id
- Cache hints are reported separately from compression steps →
  test_cache_hints::test_cache_hints_reported_separately, here::test_cache_hints_reported_separately
Context usage breakdown
- Report separates conversation compression from static tool/schema cost →
  test_breakdown::test_report_separates_conversation_from_static_schema_cost,
  here::test_report_separates_static_schema_cost_from_savings
- Hosts render a usage bar without raw prompt text →
  test_breakdown::test_context_breakdown_never_requires_raw_text,
  here::test_report_explains_trigger_without_raw_text
- Measured usage overrides the rough estimate →
  test_breakdown::test_measured_usage_overrides_estimate,
  here::test_measured_usage_overrides_estimate_in_report
ACP structured truncation
- Structured output rendered compactly without losing status/error →
  here::test_failed_tool_output_digest_keeps_status_and_error
- Deep or large JSON cannot blow the context budget →
  here::test_deep_large_json_tool_output_bounded
- Raw credentials in known sensitive keys are redacted →
  here::test_sensitive_json_keys_redacted_in_compacted_output
Offline trajectory
- Reproducible with a stub summary provider → here::test_stub_provider_compaction_is_reproducible
- Metrics distinguish skipped-under-target from failed-to-fit →
  here::test_metrics_distinguish_below_threshold_from_failed_to_fit
- Tool-call/result markers are not orphaned →
  test_pipeline_properties::test_tool_pairs_complete_and_tail_identical

Seed 004 — Acceptance
P0  JSON shrinking parseable → here::test_json_argument_shrink_preserves_parseability;
    non-JSON not corrupted → here::test_non_json_tool_arguments_not_corrupted;
    retained results have retained calls → here::test_no_orphaned_tool_results_after_compaction;
    tail selection deterministic and budget-aware → here::test_compress_is_deterministic,
    here::test_tail_selection_is_budget_aware;
    partial keeps last N → here::test_keep_last_2_preserves_last_two_exchanges_verbatim
P1  duplicate read-file keeps newest copy →
    here::test_repeated_read_file_outputs_keep_newest_full_copy;
    old terminal output concise digest →
    here::test_old_terminal_output_becomes_command_exit_line_digest;
    recent tail verbatim → here::test_recent_tail_tool_output_remains_exact;
    sensitive data redacted before digest persistence → here::test_digests_never_carry_secrets
P1  tool order/cache key → here::test_report_cache_key_ignores_tool_order;
    cache hints separate → here::test_cache_hints_reported_separately;
    frozen byte ranges left for adapters to splice byte-identically →
    here::test_retained_prefix_is_byte_identical_for_splicing
P2  summary not mistaken for a fresh request →
    here::test_summary_message_is_marked_reference_only;
    auth and network failures preserve messages →
    here::test_auth_failure_never_rotates_into_degraded_session,
    here::test_network_failure_preserves_original_messages;
    fallback says local/incomplete → here::test_fallback_summary_says_locally_generated;
    repeated compactions update → here::test_repeated_compaction_updates_summary_not_nested
P2  hosts show why compression triggered without raw text →
    here::test_report_explains_trigger_without_raw_text;
    measured usage overrides estimates → here::test_measured_usage_overrides_estimate_in_report

POLICIES.md "What real users complain about" → scenario tests
- summary failure (network, 529) dropped the whole middle →
  here::test_scenario_529_summary_failure_never_drops_middle_silently,
  here::test_network_failure_preserves_original_messages
- compaction looping (tool schemas counted / still over threshold / no-op every turn) →
  here::test_scenario_compaction_loop_with_heavy_tool_schemas_backs_off,
  here::test_scenario_measured_reading_still_over_threshold_backs_off,
  here::test_automatic_noop_counts_a_strike
- threshold invisible or surprising → here::test_scenario_threshold_is_visible_in_report
- latest user message or in-flight tool call lost; stale tasks resurfacing →
  here::test_scenario_latest_user_message_and_in_flight_call_survive,
  here::test_scenario_stale_task_in_summary_is_marked_historical
- "not compacting, deleting" → here::test_scenario_report_says_what_was_dropped
- providers rejecting compacted history →
  here::test_scenario_compacted_history_starts_with_user_for_anthropic,
  here::test_scenario_no_orphaned_tool_results, here::test_scenario_no_truncated_argument_json
- summaries lose paths and commands → here::test_fallback_keeps_paths_commands_and_asks,
  here::test_repeated_fallback_compaction_keeps_one_summary

Seed 001 (rule-based profile): every rule, the config keys and "never dropped" → test_rules.
Property tests over generated transcripts for both profiles → test_pipeline_properties.
"""

from __future__ import annotations

import dataclasses
import json
from itertools import pairwise

import orjson
import pytest
from builders import (
    Conv,
    FakeProvider,
    RetryingProvider,
    anthropic_roles,
    coding_session,
    fake_secrets,
    openai_dump,
    orphan_calls,
    orphan_results,
    secret_fragments,
)

from tinyjuice.boundary import BoundaryIndex, is_legal_boundary
from tinyjuice.budget import record_reading
from tinyjuice.formats import dumps
from tinyjuice.lease import InMemoryLease
from tinyjuice.model import Message, Role, TextPart, Usage
from tinyjuice.options import CompactionOptions, CompactionState, Profile
from tinyjuice.pipeline import compress, plan_boundary
from tinyjuice.report import PersistenceRecommendation, Status
from tinyjuice.summary import (
    END_MARKER,
    HANDOFF_PREFIX,
    FailureClass,
    strip_tinyjuice_metadata,
)
from tinyjuice.tokens import RoughCounter, count_transcript, message_tokens

ROUGH = RoughCounter()
#: A window the default coding session (about 8K rough tokens) is over the threshold of.
SMALL = 8_000
#: A window nothing in these tests reaches.
LARGE = 400_000
NOW = 10_000.0


def run(transcript, options=None, provider=None, state=None, **kw):
    kw.setdefault("now", NOW)
    return compress(
        transcript, options or CompactionOptions(), provider, state, counter=ROUGH, **kw
    )


def session(steps: int = 6, **kw) -> Conv:
    return coding_session(steps, **kw)


def texts(messages) -> str:
    return "\n".join(m.text for m in messages)


def summary_of(result) -> Message:
    found = [m for m in result.messages if m.meta.generated_by == "summary"]
    assert len(found) == 1, [m.meta for m in result.messages]
    return found[0]


def assert_unchanged(result, transcript) -> None:
    """Byte-identical: the same transcript object, equal messages, equal renderings."""
    assert result.transcript is transcript
    assert all(a is b for a, b in zip(result.messages, transcript.messages, strict=True))
    assert openai_dump(result.messages) == openai_dump(transcript.messages)
    assert not result.changed
    assert result.report.after_messages == result.report.before_messages
    assert result.report.persistence is PersistenceRecommendation.NO_PERSISTENCE_CHANGE
    assert result.report.dropped is False


def tail_of(result, transcript) -> None:
    """The tail [boundary_end:] is returned as the same objects."""
    end = result.report.boundary_end
    tail = transcript.messages[end:]
    assert tail, "expected a non-empty tail"
    got = result.messages[len(result.messages) - len(tail) :]
    assert all(a is b for a, b in zip(got, tail, strict=True))
    assert openai_dump(got) == openai_dump(tail)


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


# =========================================================================== prepass


def _capture(t, options=None, **kw):
    provider = FakeProvider()
    r = run(t, options, provider, **kw)
    assert r.report.status is Status.COMPACTED, r.report.reason
    assert len(provider.requests) == 1
    return r, provider.requests[0]


def test_repeated_read_file_outputs_keep_newest_full_copy() -> None:
    c = session(4)
    body = "\n".join(f"{k:>4}| config_line_{k} = {k * 7}" for k in range(80))
    c.user("read the config", label="r1")
    c.read_file("conf/settings.toml", output=body)
    c.assistant("Read it.")
    c.user("read it again")
    c.read_file("conf/settings.toml", output=body)
    for i in range(4, 8):
        c.user(f"Step {i}: update src/mod_{i}.py")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=60)
        c.assistant(f"Step {i} done.")
    c.user("show me the config once more", label="last")
    c.read_file("conf/settings.toml", output=body)
    c.assistant("Here it is.")
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t)
    # Exactly one full copy is left anywhere: the newest, verbatim, in the tail.
    assert sum(m.text == body for m in r.messages) == 1
    assert r.messages[-2].text == body and r.messages[-2] is t.messages[-2]
    assert not any(m.text == body for m in request.messages)
    kinds = [d["kind"] for d in r.report.digests]
    assert "duplicate" in kinds
    dup = [m.text for m in request.messages if "same output as message" in m.text]
    # Both older copies point at the newest one, by its index in the transcript.
    newest = len(t.messages) - 2
    assert len(dup) == 2
    assert all(s.startswith(f"[read_file] same output as message #{newest}") for s in dup)
    assert {d["index"] for d in r.report.digests if d["kind"] == "duplicate"} == {
        c.at["r1"] + 2,
        c.at["r1"] + 6,
    }


def test_old_terminal_output_becomes_command_exit_line_digest() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t)
    first = t.messages[c.at["ask1"] + 2]  # the terminal result of step 1 (exit 1)
    assert first.role is Role.TOOL and len(first.text) > 1000
    digested = [m for m in request.messages if m.tool_call_id == first.tool_call_id]
    assert len(digested) == 1
    line = digested[0].text
    assert "\n" not in line and len(line) < 200
    assert line.startswith("[terminal]")
    assert "`pytest tests/test_1.py -q`" in line and "exit 1" in line and "61 lines" in line
    assert digested[0].meta.generated_by == "digest"
    rec = [d for d in r.report.digests if d["call_id"] == first.tool_call_id]
    assert rec and rec[0]["kind"] == "digest" and rec[0]["chars_after"] < rec[0]["chars_before"]


def test_recent_tail_tool_output_remains_exact() -> None:
    t = session().transcript(context_window=SMALL)
    r, _ = _capture(t)
    tail_results = [m for m in t.messages[r.report.boundary_end :] if m.role is Role.TOOL]
    assert tail_results and all(len(m.text) > 1000 for m in tail_results)
    for m in tail_results:
        assert any(m is x for x in r.messages)
    assert all(d["index"] < r.report.boundary_end for d in r.report.digests)
    tail_of(r, t)


def early(setup, *, steps: int = 6, then=None) -> Conv:
    """A session whose ``setup`` turns come right after the protected head, so they land in
    the compressed middle; ``then`` adds turns at the very end (the verbatim tail)."""
    c = Conv()
    c.user("Start the refactor of src/app.py", label="first")
    c.assistant("Starting.")
    setup(c)
    for i in range(steps):
        c.user(f"Step {i}: update src/mod_{i}.py and run tests/test_{i}.py", label=f"ask{i}")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=60, exit_code=i % 2)
        c.read_file(f"src/mod_{i}.py", lines=60)
        c.assistant(f"Step {i} done.")
    if then is not None:
        then(c)
    c.user("Anything left?", label="last")
    c.assistant("Nothing; all tests pass.")
    return c


def _big_write(path: str, content: str):
    def setup(c: Conv) -> None:
        c.user(f"write {path}", label="write")
        c.write_file(path, content)
        c.assistant(f"Wrote {path}.")

    return setup


def _one_call(name: str, args, output: str, **kw):
    def setup(c: Conv) -> None:
        c.user(f"please run {name}", label=name)
        c.call(name, args, output, **kw)
        c.assistant(f"{name} finished.")

    return setup


def _calls_named(messages, name: str) -> list:
    return [call for m in messages for call in m.tool_calls if call.name == name]


def test_tool_arguments_stay_valid_json_after_shrinking() -> None:
    content = "".join(f'print("line {k}", {{"k": [{k}, "\\\\", "\\u00e9"]}})\n' for k in range(300))
    t = early(_big_write("src/gen.py", content)).transcript(context_window=SMALL)
    r, request = _capture(t)
    shrunk = [d for d in r.report.digests if d["kind"] == "args_shrunk"]
    assert shrunk and shrunk[0]["chars_after"] < shrunk[0]["chars_before"]
    (call,) = _calls_named(request.messages, "write_file")
    args = json.loads(call.arguments)  # still parses
    assert args["path"] == "src/gen.py"
    assert len(call.arguments) < len(content)
    for m in r.messages:
        for kept in m.tool_calls:
            json.loads(kept.arguments)


def test_large_write_file_argument_stays_valid_json() -> None:
    content = "x = {'a': \"quoted\"}\n" * 2000  # ~40 KB of code with quotes and newlines
    t = early(_big_write("src/big.py", content)).transcript(context_window=SMALL)
    _r, request = _capture(t)
    (call,) = _calls_named(request.messages, "write_file")
    parsed = orjson.loads(call.arguments)
    assert parsed["path"] == "src/big.py"
    assert parsed["content"].startswith("x = {'a': \"quoted\"}")
    assert len(parsed["content"]) <= 200 + 24


def test_json_argument_shrink_preserves_parseability() -> None:
    args = {
        "edits": [{"old": "a" * 900 + '"\\\n', "new": "b" * 900, "line": 3, "dry": False}],
        "meta": {"id": "req-42", "note": None, "tags": ["x", "y"]},
        "path": "src/very/deep/dir/file.py",
    }
    t = early(_one_call("apply_edits", args, "applied 1 edit")).transcript(context_window=SMALL)
    _, request = _capture(t)
    (call,) = _calls_named(request.messages, "apply_edits")
    parsed = json.loads(call.arguments)
    assert parsed["meta"] == args["meta"] and parsed["path"] == args["path"]
    assert parsed["edits"][0]["line"] == 3 and parsed["edits"][0]["dry"] is False
    assert len(parsed["edits"][0]["old"]) < 900


def test_non_json_argument_shrink_is_noop() -> None:
    raw = "cd src && make all " + "VERBOSE=1 " * 120  # not JSON, longer than 500 chars
    t = early(_one_call("shell", raw, "built")).transcript(context_window=SMALL)
    r, request = _capture(t)
    (call,) = _calls_named(request.messages, "shell")
    assert call.arguments == raw
    assert not [d for d in r.report.digests if d["kind"] == "args_shrunk"]


def test_non_json_tool_arguments_not_corrupted() -> None:
    # Non-JSON arguments anywhere (middle or tail) are never rewritten.
    raw = 'grep -rn "TODO(" src/ | head -n 50 ' + "--include=*.py " * 60
    setup = _one_call("shell", raw, "src/a.py:3: TODO(fix)")
    t = early(setup, then=setup).transcript(context_window=SMALL)
    r, request = _capture(t)
    (middle_call,) = _calls_named(request.messages, "shell")
    assert middle_call.arguments == raw
    (tail_call,) = _calls_named(r.messages, "shell")
    assert tail_call.arguments == raw


def test_unicode_arguments_preserved_unescaped() -> None:
    text = "Grüße, naïve café — 日本語のテキスト ✓ " * 40
    t = early(_big_write("docs/greeting.md", text)).transcript(context_window=SMALL)
    _, request = _capture(t)
    (call,) = _calls_named(request.messages, "write_file")
    assert "日本語のテキスト" in call.arguments and "Grüße" in call.arguments
    assert "\\u" not in call.arguments
    assert len(call.arguments) < len(text)
    json.loads(call.arguments)


def _secret_session() -> tuple[Conv, dict[str, str]]:
    s = fake_secrets()
    c = Conv()
    c.user(f"Use my key {s['openai']} to call the API", label="first")
    c.assistant("Noted.")
    c.user("Deploy with the AWS credentials and DB")
    c.call(
        "terminal",
        {"command": f"DATABASE_URL={s['postgres']} ./deploy.sh", "api_key": s["github"]},
        json.dumps(
            {
                "output": f"export AWS_ACCESS_KEY_ID={s['aws']}\nAuthorization: Bearer {s['jwt']}\n"
                + "deploying...\n" * 60,
                "exit_code": 0,
            }
        ),
    )
    c.call(
        "http_request",
        {"url": "https://api.example.com", "headers": {"Authorization": f"Bearer {s['jwt']}"}},
        json.dumps({"password": "hunter2" + "Secr3tPw", "token": s["github"], "ok": True}),
    )
    c.assistant(f"Deployed using {s['aws']}.")
    for i in range(6):
        c.user(f"Step {i}: check src/mod_{i}.py")
        c.terminal(f"pytest tests/test_{i}.py -q", lines=40)
        c.assistant(f"Step {i} ok.")
    c.user("What's next?", label="last")
    c.assistant("Release notes.")
    return c, s


def _assert_no_secrets(text: str, secrets: dict[str, str]) -> None:
    for kind, secret in secrets.items():
        for frag in secret_fragments(secret):
            assert frag not in text, f"{kind} secret leaked"


def _request_text(request) -> str:
    parts = [request.previous_summary or ""]
    for m in request.messages:
        parts.append(m.text)
        parts.append(m.reasoning or "")
        parts.extend(call.arguments for call in m.tool_calls)
    return "\n".join(parts)


def test_secrets_redacted_before_summary_provider_sees_them() -> None:
    c, s = _secret_session()
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t, CompactionOptions(protect_first_n=0, force=True))
    assert r.report.redactions > 0
    seen = _request_text(request)
    _assert_no_secrets(seen, s)
    assert "[REDACTED:" in seen
    # The secrets really were in the middle that was sent.
    assert r.report.boundary_start <= c.at["first"] < r.report.boundary_end


def test_digests_never_carry_secrets() -> None:
    c, s = _secret_session()
    t = c.transcript(context_window=SMALL)
    r, request = _capture(t, CompactionOptions(protect_first_n=0, force=True, include_preview=True))
    digests = [m.text for m in request.messages if m.meta.generated_by == "digest"]
    assert digests
    _assert_no_secrets("\n".join(digests), s)
    _assert_no_secrets(json.dumps(r.report.to_dict()), s)


def test_sensitive_json_keys_redacted_in_compacted_output() -> None:
    c, s = _secret_session()
    t = c.transcript(context_window=SMALL)
    r = run(t, CompactionOptions(protect_first_n=0, force=True))
    assert r.report.status is Status.COMPACTED
    out = texts(r.messages) + "".join(call.arguments for m in r.messages for call in m.tool_calls)
    _assert_no_secrets(out, s)
    assert "hunter2" not in out


# =========================================================================== media


def test_five_images_count_in_report_tokens() -> None:
    c = (
        Conv()
        .user("compare these five screenshots", images=5)
        .assistant("They differ in the header.")
    )
    r = run(c.transcript(context_window=LARGE))
    assert r.report.before_tokens >= 5 * 1_600
    assert r.report.head_tokens + r.report.middle_tokens + r.report.tail_tokens >= 5 * 1_600


def _image_session() -> Conv:
    c = Conv()
    c.user("Here is the broken layout", images=2, label="first")
    c.assistant("I see the overlap.")
    for i in range(5):
        c.user(f"Step {i}: fix the css in web/style_{i}.css")
        c.screenshot()
        c.terminal(f"npm run build:{i}", lines=40)
        c.assistant(f"Step {i} fixed.")
    c.user("Now it looks like this", images=1, label="newest")
    c.assistant("Almost there; the footer still overlaps.", label="last_answer")
    return c


def test_old_screenshots_do_not_survive_compaction() -> None:
    c = _image_session()
    t = c.transcript(context_window=SMALL)
    before = sum(len(m.media) for m in t.messages)
    assert before == 2 + 5 + 1
    r = run(t)
    assert r.report.status is Status.COMPACTED
    # Images survive only inside the verbatim tail; every older one became a placeholder.
    tail = t.messages[r.report.boundary_end :]
    with_media = [m for m in r.messages if m.media]
    assert with_media and all(any(m is x for x in tail) for m in with_media)
    assert sum(len(m.media) for m in r.messages) < before
    first = next(m for m in r.messages if m.role is Role.USER and "broken layout" in m.text)
    assert first.text.count("[image omitted: image/png") == 2
    assert r.report.media_replaced >= 1
    assert any(s.step == "media" for s in r.report.steps)
    # Compacting again does not bring any image back.
    again = run(r.transcript, CompactionOptions(keep_last=1), state=r.state)
    assert sum(len(m.media) for m in again.messages) == 1


def test_newest_image_turn_kept() -> None:
    c = _image_session()
    t = c.transcript(context_window=SMALL)
    r = run(t)
    newest = t.messages[c.at["newest"]]
    assert any(m is newest for m in r.messages)
    assert len(newest.media) == 1


# =========================================================================== head


def test_first_compaction_keeps_opening_task_framing() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t)
    first = t.messages[c.at["first"]]
    assert r.messages[0] is t.messages[0]  # system prompt
    assert any(m is first for m in r.messages)
    assert r.report.compaction_count == 1 and r.state.compaction_count == 1


def _more_steps(transcript, start: int, count: int):
    c = Conv(system=None)
    c.messages = list(transcript.messages)
    c._ids = 500 + start
    for i in range(start, start + count):
        c.user(f"Step {i}: also fix src/extra_{i}.py")
        c.terminal(f"pytest tests/test_extra_{i}.py -q", lines=60)
        c.assistant(f"Extra step {i} done.")
    c.user("And the final check?", label="last")
    c.assistant("All green.")
    return dataclasses.replace(transcript, messages=c.build()), c


def test_repeated_compaction_does_not_copy_first_request_again() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r1 = run(t)
    first = t.messages[c.at["first"]]
    assert any(m is first for m in r1.messages)
    t2, _ = _more_steps(r1.transcript, 100, 6)
    r2 = run(t2, state=r1.state)
    assert r2.report.status is Status.COMPACTED
    assert r2.report.compaction_count == 2
    assert not any(m.is_real_user and m.text == first.text for m in r2.messages)
    # Only the system prompt is protected after the first compaction.
    assert r2.report.boundary_start == 1


def test_system_prompt_survives_compaction_unless_unprotected() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    kept = run(t)
    assert kept.messages[0] is t.messages[0] and kept.messages[0].role is Role.SYSTEM
    dropped = run(t, CompactionOptions(protect_system=False, protect_first_n=0))
    assert dropped.report.status is Status.COMPACTED
    assert dropped.report.boundary_start == 0
    assert not any(m.role is Role.SYSTEM for m in dropped.messages)
    assert dropped.messages[0].role is Role.USER


# =========================================================================== tail


def test_huge_old_tool_result_does_not_bloat_the_tail() -> None:
    c = Conv()
    c.user("dump the whole database table", label="first")
    c.assistant("Dumping.")
    c.user("go")
    c.terminal("psql -c 'select * from events'", lines=4_000, label="huge")
    c.assistant("That is 4,000 rows.")
    for i in range(12):
        c.exchange(f"Question {i} about src/q_{i}.py?", f"Answer {i}: see src/q_{i}.py line {i}.")
    t = c.transcript(context_window=LARGE)
    r = run(t, CompactionOptions(force=True))
    assert r.report.status is Status.COMPACTED
    huge = t.messages[c.at["huge"] + 1]
    assert not any(m is huge for m in r.messages)
    assert r.report.boundary_end > c.at["huge"] + 1
    assert r.report.after_tokens < r.report.before_tokens // 5


def test_forced_short_transcript_still_compacts() -> None:
    c = Conv().exchange("Why does the build fail?", "Let me look.")
    c.user("Run the suite")
    c.terminal("pytest -q", lines=200, exit_code=1)
    c.assistant("One failure in tests/test_app.py.")
    c.exchange("Fix it", "Fixed.")
    t = c.transcript(context_window=LARGE)
    assert len(t.messages) == 9
    auto = run(t)
    assert auto.report.status is Status.BELOW_THRESHOLD
    # Everything fits the tail budget; force falls back to the 3-message floor.
    forced = run(t, CompactionOptions(force=True, protect_first_n=0, protect_last_n=3))
    assert forced.report.status is Status.COMPACTED, forced.report.reason
    assert forced.report.tail_messages == 3
    assert forced.report.middle_messages >= 1
    assert forced.messages[-2:] == t.messages[-2:]
    # Nothing worth compressing: an honest no-op, not an empty rotation.
    tiny = Conv().exchange("a", "b").exchange("c", "d").exchange("e", "f")
    noop = run(tiny.transcript(context_window=LARGE), CompactionOptions(force=True))
    assert noop.report.status is Status.NOOP
    assert noop.report.persistence is PersistenceRecommendation.NO_PERSISTENCE_CHANGE


def test_compress_is_deterministic() -> None:
    t = session().transcript(context_window=SMALL)
    a, b = run(t), run(t)
    assert a.report == b.report
    assert openai_dump(a.messages) == openai_dump(b.messages)
    p1 = plan_boundary(t, CompactionOptions(), counter=ROUGH)
    p2 = plan_boundary(t, CompactionOptions(), tokens=count_transcript(t, ROUGH))
    assert (
        (p1.start, p1.end) == (p2.start, p2.end) == (a.report.boundary_start, a.report.boundary_end)
    )


def test_tail_selection_is_budget_aware() -> None:
    t = session(10).transcript(context_window=SMALL)
    small = run(t, CompactionOptions(tail_target_ratio=0.10, anchor_latest_assistant=False))
    big = run(t, CompactionOptions(tail_target_ratio=0.60, anchor_latest_assistant=False))
    assert small.report.tail_tokens < big.report.tail_tokens
    assert small.report.tail_messages < big.report.tail_messages
    budget = int(small.report.threshold_tokens * 0.10)
    # The tail holds at most 1.5 × budget unless the 8-message floor needs more.
    floor_tokens = sum(message_tokens(m, ROUGH) for m in t.messages[-8:])
    assert small.report.tail_tokens <= max(int(budget * 1.5), floor_tokens)


# =========================================================================== tool groups


def _parallel_session() -> Conv:
    c = Conv()
    c.user("inspect the repo", label="first")
    c.assistant("Starting.")
    for i in range(6):
        c.user(f"Step {i}: check three files")
        c.parallel(
            ("read_file", {"path": f"src/a_{i}.py"}, "A" * 400),
            ("read_file", {"path": f"src/b_{i}.py"}, "B" * 400),
            ("search_files", {"pattern": "TODO", "path": "src"}, "src/x.py:1: TODO" * 20),
            order=[2, 0, 1],
            label=f"par{i}",
        )
        c.assistant(f"Checked step {i}.")
    c.user("summarise", label="last")
    c.assistant("Done.")
    return c


def test_no_orphaned_tool_results_after_compaction() -> None:
    c = _parallel_session()
    t = c.transcript(context_window=SMALL)
    for boundary in range(1, len(t.messages)):
        r = run(t, CompactionOptions(boundary=boundary))
        assert not orphan_results(r.messages), boundary
        assert r.report.boundary_end is not None
        assert is_legal_boundary(t.messages, r.report.boundary_end)


def test_no_unanswered_tool_calls_after_compaction() -> None:
    c = _parallel_session()
    t = c.transcript(context_window=SMALL)
    for keep in range(0, 8):
        r = run(t, CompactionOptions(keep_last=keep))
        assert not orphan_calls(r.messages), keep
        for m in r.messages:
            assert not (
                m.role is Role.ASSISTANT
                and m.tool_calls
                and not any(
                    x.role is Role.TOOL and x.tool_call_id == m.tool_calls[0].id for x in r.messages
                )
            )


def test_sanitization_after_summary_insertion() -> None:
    # A broken log: an interrupted call in the protected head (never answered) and a
    # stray result in the tail whose call was never logged.
    c = Conv()
    c.user("start", label="first")
    c.in_flight("terminal", {"command": "sleep 100"}, label="interrupted")
    c.user("never mind that; do the steps")
    for i in range(5):
        c.terminal(f"make step{i}", lines=40)
        c.assistant(f"step {i}")
        c.user(f"next {i}")
    c.raw(Message(Role.TOOL, (TextPart("stray output"),), tool_call_id="ghost", tool_name="x"))
    c.assistant("Finished.")
    t = c.transcript(context_window=SMALL)
    strip = run(t, CompactionOptions(protect_first_n=2, force=True))
    assert strip.report.status is Status.COMPACTED
    assert strip.report.sanitizer["stripped_calls"] == 1
    assert strip.report.sanitizer["removed_results"] == 1
    assert not orphan_results(strip.messages) and not orphan_calls(strip.messages)
    summary_of(strip)  # the summary was inserted, and the sanitizer ran on the joined list
    bridge = run(t, CompactionOptions(protect_first_n=2, force=True, orphan_calls="bridge"))
    assert bridge.report.sanitizer["bridged_calls"] == 1
    assert not orphan_results(bridge.messages) and not orphan_calls(bridge.messages)
    stub = [m for m in bridge.messages if m.meta.generated_by == "bridge" and m.role is Role.TOOL]
    assert (
        len(stub) == 1 and stub[0].tool_call_id == t.messages[c.at["interrupted"]].tool_calls[0].id
    )


def test_orphan_call_policy_strip_or_bridge_in_pipeline() -> None:
    c = Conv()
    c.user("go", label="first")
    c.in_flight("terminal", {"command": "make"}, label="orphan")  # interrupted, never answered
    c.user("continue")
    for i in range(6):
        c.terminal(f"make step{i}", lines=60)
        c.exchange(f"q{i}", f"a{i}")
    t = c.transcript(context_window=LARGE)
    call = t.messages[c.at["orphan"]].tool_calls[0]
    opts = CompactionOptions(force=True, protect_first_n=3)
    stripped = run(t, opts)
    assert stripped.report.status is Status.COMPACTED
    assert stripped.report.boundary_start > c.at["orphan"]  # the call is in the kept head
    assert not any(call.id in [x.id for x in m.tool_calls] for m in stripped.messages)
    assert stripped.report.sanitizer["stripped_calls"] == 1
    bridged = run(t, dataclasses.replace(opts, orphan_calls="bridge"))
    assert any(
        m.tool_call_id == call.id and m.meta.generated_by == "bridge" for m in bridged.messages
    )
    assert not orphan_calls(bridged.messages) and not orphan_results(bridged.messages)


# =========================================================================== anchors


def test_most_recent_user_ask_outside_compressed_middle() -> None:
    c = session(4, last_answer=None)
    for i in range(8):  # a long autonomous run after the last ask
        c.terminal(f"pytest tests/test_run_{i}.py -q", lines=60)
    t = c.transcript(context_window=SMALL)
    r = run(t)
    assert r.report.status is Status.COMPACTED
    last = t.messages[c.at["last"]]
    assert r.report.boundary_end <= c.at["last"]
    assert any(m is last for m in r.messages)
    assert not (r.report.boundary_start <= c.at["last"] < r.report.boundary_end)


def test_last_assistant_answer_outside_compressed_middle() -> None:
    c = session(4)
    c.user("now run the slow suite", label="slow")
    for i in range(8):  # tool-only turns: no visible answer after "slow"
        c.terminal(f"pytest tests/slow_{i}.py -q", lines=60)
    t = c.transcript(context_window=SMALL)
    answer = t.messages[c.at["last_answer"]]
    anchored = run(t)
    assert anchored.report.boundary_end <= c.at["last_answer"]
    assert any(m is answer for m in anchored.messages)
    # The ask it answered stays with it.
    assert any(m is t.messages[c.at["last"]] for m in anchored.messages)
    loose = run(t, CompactionOptions(anchor_latest_assistant=False))
    assert loose.report.boundary_end > c.at["last_answer"]
    assert not any(m is answer for m in loose.messages)


def test_summary_messages_excluded_from_latest_user_anchor() -> None:
    c = session(4, last_answer=None)
    c.injected("<environment_context>cwd=/work/repo</environment_context>", kind="environment")
    c.agent_summary("## Goal\nAn agent-written summary that must not count as the ask.")
    for i in range(8):
        c.terminal(f"pytest tests/test_run_{i}.py -q", lines=60)
    t = c.transcript(context_window=SMALL)
    r = run(t)
    assert r.report.boundary_end <= c.at["last"]
    assert any(m is t.messages[c.at["last"]] for m in r.messages)


# =========================================================================== summary


def test_summary_message_is_marked_reference_only() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider(["## Pending asks\nThe user asked to delete the database."]))
    s = summary_of(r)
    assert s.text.startswith(HANDOFF_PREFIX) and s.text.rstrip().endswith(END_MARKER)
    assert "latest user message" in s.text.lower()
    assert s.meta.is_summary and not s.is_real_user
    at = r.messages.index(s)
    later_users = [m for m in r.messages[at + 1 :] if m.is_real_user]
    assert later_users and later_users[-1].text == t.messages[-2].text


def test_provider_summary_redacted_after_generation() -> None:
    key = fake_secrets()["openai"]
    t = session().transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider([f"## Critical Context\nThe key is {key}."]))
    s = summary_of(r)
    assert key not in s.text and "[REDACTED:" in s.text


def test_summary_message_carries_strippable_metadata() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, CompactionOptions(lineage_id="L1"), FakeProvider())
    s = summary_of(r)
    assert s.meta.generated_by == "summary"
    assert s.hints["tinyjuice"] == {"kind": "llm", "lineage_id": "L1"}
    cleaned = strip_tinyjuice_metadata(r.messages)
    assert all("tinyjuice" not in m.hints for m in cleaned)
    assert [m.text for m in cleaned] == [m.text for m in r.messages]


def test_repeated_compaction_updates_summary_not_nested() -> None:
    provider = FakeProvider(["## Goal\nFirst summary body.", "## Goal\nSecond summary body."])
    t = session().transcript(context_window=SMALL)
    r1 = run(t, provider=provider)
    t2, _ = _more_steps(r1.transcript, 100, 6)
    r2 = run(t2, provider=provider, state=r1.state)
    assert r2.report.status is Status.COMPACTED
    assert len(provider.requests) == 2
    second = provider.requests[1]
    assert second.previous_summary is not None
    assert "First summary body." in second.previous_summary
    assert (
        HANDOFF_PREFIX not in second.previous_summary and END_MARKER not in second.previous_summary
    )
    assert not any(m.meta.is_summary for m in second.messages)
    s = summary_of(r2)
    assert s.text.count(HANDOFF_PREFIX) == 1 and s.text.count(END_MARKER) == 1
    assert "Second summary body." in s.text
    assert sum(m.meta.is_summary for m in r2.messages) == 1


def test_repeated_fallback_compaction_keeps_one_summary() -> None:
    t = session().transcript(context_window=SMALL)
    r1 = run(t)
    t2, _ = _more_steps(r1.transcript, 100, 6)
    r2 = run(t2, state=r1.state)
    assert r2.report.status is Status.COMPACTED
    s = summary_of(r2)
    assert s.text.count(HANDOFF_PREFIX) == 1 and s.text.count(END_MARKER) == 1
    # The first summary's content is carried into the update, not lost with it.
    first = summary_of(r1).text
    carried = [a for a in (f"Step {i}: update src/mod_{i}.py" for i in range(6)) if a in first]
    assert carried and all(a in s.text for a in carried)
    assert "src/mod_0.py" in s.text and "https://ci.example.com/runs/42" in s.text
    assert r2.report.summary_tokens <= 2_000  # still within the summary budget


def test_resumed_session_sends_previous_summary_to_provider() -> None:
    c = Conv()
    c.agent_summary("## Goal\nMigrate the billing service to Postgres 16.", label="old")
    c.user("continue the migration")
    for i in range(6):
        c.terminal(f"psql -f migrations/{i:03d}.sql", lines=100)
        c.assistant(f"migration {i} applied")
        c.user(f"next {i}")
    c.assistant("Ready.")
    t = c.transcript(context_window=SMALL)
    provider = FakeProvider()
    r = run(t, provider=provider, state=None)
    assert r.report.status is Status.COMPACTED
    request = provider.requests[0]
    assert request.previous_summary is not None
    assert "Migrate the billing service to Postgres 16." in request.previous_summary
    assert not any(m.meta.is_summary for m in request.messages)
    # The old summary was replaced by the update, not kept beside it.
    assert sum(m.meta.is_summary for m in r.messages) == 1
    assert summary_of(r).meta.generated_by == "summary"
    # Without a provider the fallback carries the old summary's content forward.
    fb = run(t)
    assert sum(m.meta.is_summary for m in fb.messages) == 1
    assert "Migrate the billing service to Postgres 16." in summary_of(fb).text


def test_new_session_does_not_inherit_state_summary() -> None:
    t = session().transcript(context_window=SMALL)
    stale = CompactionState(previous_summary="## Goal\nOTHER SESSION PLAN", lineage_id="A")
    other = FakeProvider()
    run(t, CompactionOptions(lineage_id="B"), other, state=stale)
    assert other.requests[0].previous_summary is None
    none = FakeProvider()
    run(t, CompactionOptions(), none, state=stale)
    assert none.requests[0].previous_summary is None
    same = FakeProvider()
    run(t, CompactionOptions(lineage_id="A"), same, state=stale)
    assert same.requests[0].previous_summary == "## Goal\nOTHER SESSION PLAN"


def test_previous_summary_wrappers_stripped_before_resummarization() -> None:
    c = Conv()
    c.summary("## Goal\nKeep the API stable.", label="old")
    c.user("go on")
    for i in range(6):
        c.terminal(f"make test{i}", lines=100)
        c.assistant(f"t{i}")
        c.user(f"more {i}")
    c.assistant("ok")
    t = c.transcript(context_window=SMALL)
    assert t.messages[c.at["old"]].text.startswith(HANDOFF_PREFIX)
    provider = FakeProvider()
    run(t, provider=provider)
    prev = provider.requests[0].previous_summary
    assert prev == "## Goal\nKeep the API stable."


# =========================================================================== fallback


def test_summary_provider_absent_fallback_still_compacts() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, provider=None)
    assert r.report.status is Status.COMPACTED
    assert r.report.summary_kind.value == "fallback"
    assert r.report.summary_provider is None
    assert r.report.dropped is True
    assert r.report.after_tokens < r.report.before_tokens
    summary_of(r)


def test_fallback_summary_says_locally_generated() -> None:
    r = run(session().transcript(context_window=SMALL))
    s = summary_of(r).text.lower()
    assert "locally" in s and "may be incomplete" in s


def test_fallback_summary_never_preserves_secrets() -> None:
    c, s = _secret_session()
    r = run(c.transcript(context_window=SMALL), CompactionOptions(protect_first_n=0, force=True))
    assert r.report.summary_kind.value == "fallback"
    _assert_no_secrets(summary_of(r).text, s)


def test_fallback_marked_lower_confidence_in_report() -> None:
    t = session().transcript(context_window=SMALL)
    fb = run(t).report
    llm = run(t, provider=FakeProvider()).report
    assert fb.summary_confidence == "low" and fb.to_dict()["summary"]["confidence"] == "low"
    assert llm.summary_confidence == "model" and llm.summary_kind.value == "llm"
    assert llm.dropped is False and fb.dropped is True


def test_fallback_keeps_paths_commands_and_asks() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t)
    s = summary_of(r).text
    middle = t.messages[r.report.boundary_start : r.report.boundary_end]
    asks = [m.text for m in middle if m.is_real_user]
    assert asks and all(a in s for a in asks)
    for i in range(6):
        if r.report.boundary_start <= c.at[f"ask{i}"] < r.report.boundary_end:
            assert f"src/mod_{i}.py" in s
            assert f"pytest tests/test_{i}.py -q" in s


def test_lossy_fallback_not_accepted_aborts_unchanged() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, CompactionOptions(accept_lossy_fallback=False))
    assert r.report.status is Status.ABORTED
    assert r.report.failure_class == "no_provider"
    assert_unchanged(r, t)


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


# =========================================================================== partial


def test_keep_last_2_preserves_last_two_exchanges_verbatim() -> None:
    c = session()
    t = c.transcript(context_window=LARGE)  # manual: works below the threshold
    r = run(t, CompactionOptions(keep_last=2))
    assert r.report.status is Status.COMPACTED
    start = c.at["ask5"]
    assert r.report.boundary_end == start and r.report.boundary_requested == start
    kept = t.messages[start:]
    assert r.messages[len(r.messages) - len(kept) :] == kept
    assert all(a is b for a, b in zip(r.messages[len(r.messages) - len(kept) :], kept, strict=True))
    assert sum(m.is_real_user for m in kept) == 2
    assert "keeping the last 2" in (r.report.snap_reason or "")


def test_partial_rejoin_keeps_role_alternation() -> None:
    t = _parallel_session().transcript(context_window=LARGE)
    for keep in range(1, 7):
        r = run(t, CompactionOptions(keep_last=keep))
        assert r.report.status is Status.COMPACTED
        roles = anthropic_roles(r.transcript)
        assert roles[0] == "user"
        assert all(a != b for a, b in pairwise(roles)), (keep, roles)


def test_plan_boundary_preview_counts_and_tokens() -> None:
    t = session().transcript(context_window=SMALL)
    tokens = count_transcript(t, ROUGH)
    index = BoundaryIndex(t.messages)
    plan = plan_boundary(t, CompactionOptions(keep_last=2), tokens, index=index)
    assert plan.head_messages + plan.middle_messages + plan.tail_messages == plan.total_messages
    assert plan.total_messages == len(t.messages)
    assert plan.head_tokens + plan.middle_tokens + plan.tail_tokens == tokens.messages_total
    assert plan.total_tokens == tokens.total
    assert plan.projected_tokens < plan.total_tokens
    assert not plan.no_op
    r = run(t, CompactionOptions(keep_last=2))
    assert (plan.start, plan.end) == (r.report.boundary_start, r.report.boundary_end)
    # Planning never mutates anything.
    assert count_transcript(t, ROUGH) == tokens


def test_explicit_boundary_snaps_and_says_why() -> None:
    c = _parallel_session()
    t = c.transcript(context_window=LARGE)
    inside = c.at["par3"] + 2  # between two results of a parallel group
    assert not is_legal_boundary(t.messages, inside)
    r = run(
        t,
        CompactionOptions(boundary=inside, anchor_latest_user=False, anchor_latest_assistant=False),
    )
    assert r.report.status is Status.COMPACTED
    assert r.report.boundary_requested == inside
    assert r.report.boundary_end != inside
    assert is_legal_boundary(t.messages, r.report.boundary_end)
    assert "tool" in (r.report.snap_reason or "").lower()


def test_keep_last_covering_everything_is_noop() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, CompactionOptions(keep_last=50))
    assert r.report.status is Status.NOOP
    assert "nothing to compress" in r.report.reason
    assert_unchanged(r, t)


# =========================================================================== cache


def _tools() -> list[dict]:
    return [
        {"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
    ]


def test_cache_hints_reported_separately() -> None:
    t = session().transcript(context_window=SMALL, tools=_tools())
    r = run(t)
    rep = r.report
    assert rep.cache_hints and rep.cache_key and rep.cache_key.startswith("tjpfx_")
    assert not any("cache" in s.step for s in rep.steps)
    d = rep.to_dict()
    assert d["cache"]["hints"] and "cache" not in {s["step"] for s in d["steps"]}
    # Hints are reported, never written into the messages.
    assert b"cache_control" not in openai_dump(r.messages)
    for hint in rep.cache_hints:
        i = hint["message_index"]
        assert i is None or 0 <= i < len(r.messages)


def test_report_cache_key_ignores_tool_order() -> None:
    a = run(session().transcript(context_window=SMALL, tools=_tools()))
    b = run(session().transcript(context_window=SMALL, tools=list(reversed(_tools()))))
    assert a.report.cache_key == b.report.cache_key
    c = run(
        session(system="A different system prompt.").transcript(
            context_window=SMALL, tools=_tools()
        )
    )
    assert c.report.cache_key != a.report.cache_key


def test_report_cache_key_ignores_session_id() -> None:
    a = run(session().transcript(context_window=SMALL, session_id="run-2026-07-04T10:00:00"))
    b = run(session().transcript(context_window=SMALL, session_id="run-2026-07-05T11:30:00"))
    assert a.report.cache_key == b.report.cache_key


def test_retained_prefix_is_byte_identical_for_splicing() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t)
    start = r.report.boundary_start
    assert all(a is b for a, b in zip(r.messages[:start], t.messages[:start], strict=True))
    tail_of(r, t)
    # Only the retained tail after the new summary goes cache-cold.
    assert r.report.cache_cold_tokens == r.report.tail_tokens


# =========================================================================== breakdown


def test_report_separates_static_schema_cost_from_savings() -> None:
    tools = [
        {"type": "function", "function": {"name": f"tool_{k}", "description": "d" * 400}}
        for k in range(20)
    ]
    t = session().transcript(context_window=SMALL, tools=tools)
    tokens = count_transcript(t, ROUGH)
    assert tokens.tools > 1_000
    r = run(t, CompactionOptions(force=True))
    rep = r.report
    static = tokens.system_prompt + tokens.tools
    assert rep.head_tokens + rep.middle_tokens + rep.tail_tokens + static == rep.before_tokens
    assert rep.after_tokens == static + sum(message_tokens(m, ROUGH) for m in r.messages)
    # The savings come from the conversation only; the schemas cost the same after.
    assert rep.tokens_saved <= rep.middle_tokens


def test_report_explains_trigger_without_raw_text() -> None:
    c = Conv()
    c.user("SECRET-PLAN-ALPHA is the codename")
    c.assistant("ok")
    t = c.transcript(context_window=LARGE)
    d = run(t).report.to_dict()
    dumped = json.dumps(d)
    assert "SECRET-PLAN-ALPHA" not in dumped
    assert d["status"] == "below_threshold"
    assert str(d["budget"]["threshold_tokens"]) in d["reason"].replace(",", "")
    assert d["budget"]["threshold_rule"] in ("ratio", "floor", "small_window")
    assert d["prompt_tokens"]["kind"] == "estimated"


# =========================================================================== ACP


def test_failed_tool_output_digest_keeps_status_and_error() -> None:
    output = json.dumps(
        {
            "output": "INFO running\n" * 50 + 'ERROR: relation "users" does not exist\n',
            "exit_code": 2,
        }
    )
    setup = _one_call("terminal", {"command": "alembic upgrade head"}, output, is_error=True)
    t = early(setup).transcript(context_window=SMALL)
    _r, request = _capture(t)
    digests = [m.text for m in request.messages if m.role is Role.TOOL and "alembic" in m.text]
    assert len(digests) == 1
    assert "`alembic upgrade head`" in digests[0] and "exit 2" in digests[0]
    fb = run(t)
    assert 'relation "users" does not exist' in summary_of(fb).text


def test_deep_large_json_tool_output_bounded() -> None:
    deep: object = {"leaf": "v" * 50}
    for k in range(60):
        deep = {f"level_{k}": deep, "items": [f"item-{j}" for j in range(100)]}
    blob = json.dumps(deep)
    assert len(blob) > 50_000
    t = early(_one_call("get_config", {"path": "/etc/app"}, blob)).transcript(context_window=SMALL)
    _r, request = _capture(t)
    (digest,) = [m for m in request.messages if m.role is Role.TOOL and m.tool_name == "get_config"]
    assert len(digest.text) < 300
    fb = run(t)
    assert fb.report.summary_tokens <= plan_boundary(t, counter=ROUGH).summary_budget
    assert fb.report.after_tokens < fb.report.before_tokens // 3


# =========================================================================== trajectory


def test_stub_provider_compaction_is_reproducible() -> None:
    t = session().transcript(context_window=SMALL)
    a = run(t, provider=FakeProvider(["## Goal\nStub."]))
    b = run(t, provider=FakeProvider(["## Goal\nStub."]))
    assert a.report.to_dict() == b.report.to_dict()
    assert openai_dump(a.messages) == openai_dump(b.messages)
    assert a.state == b.state


def test_metrics_distinguish_below_threshold_from_failed_to_fit() -> None:
    skipped = run(session(2).transcript(context_window=LARGE))
    assert skipped.report.status is Status.BELOW_THRESHOLD
    # Schemas alone exceed the threshold: compaction runs but cannot fit.
    tools = [
        {"type": "function", "function": {"name": f"t{k}", "description": "d" * 2_000}}
        for k in range(20)
    ]
    t = session().transcript(context_window=SMALL, tools=tools)
    r = run(t)
    assert r.report.status is Status.COMPACTED
    assert r.report.after_tokens >= r.report.threshold_tokens
    assert any("still over the threshold" in w for w in r.report.warnings)
    assert r.state.strikes == 1
    assert not any(
        "still over" in w for w in run(session().transcript(context_window=SMALL)).report.warnings
    )


# =========================================================================== POLICIES scenarios


def test_scenario_529_summary_failure_never_drops_middle_silently() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider([FailureClass.SERVER]))  # HTTP 529 overloaded
    rep = r.report
    # Either nothing changed, or the middle was replaced by a fallback that says so.
    assert rep.status is Status.COMPACTED
    assert rep.dropped and rep.failure_class == "server" and rep.summary_kind.value == "fallback"
    assert rep.warnings and "server" in rep.warnings[0]
    s = summary_of(r).text
    middle = t.messages[rep.boundary_start : rep.boundary_end]
    for m in middle:
        if m.is_real_user:
            assert m.text in s
    strict = run(
        t, CompactionOptions(abort_on_summary_failure=True), FakeProvider([FailureClass.SERVER])
    )
    assert strict.report.status is Status.ABORTED
    assert_unchanged(strict, t)


def test_scenario_compaction_loop_with_heavy_tool_schemas_backs_off() -> None:
    tools = [
        {"type": "function", "function": {"name": f"t{k}", "description": "d" * 2_000}}
        for k in range(20)
    ]
    t = session().transcript(context_window=SMALL, tools=tools)
    state = None
    statuses = []
    for _ in range(4):
        r = run(t, state=state)
        statuses.append(r.report.status)
        state = r.state
        if r.changed:
            t, _ = _more_steps(r.transcript, 300 + len(statuses) * 10, 2)
    assert statuses[:2] == [Status.COMPACTED, Status.COMPACTED]
    assert statuses[2:] == [Status.BACKED_OFF, Status.BACKED_OFF]
    assert state.auto_blocked


def test_scenario_measured_reading_still_over_threshold_backs_off() -> None:
    # The estimate says compaction worked; the provider keeps measuring over the threshold.
    c = session()
    state = None
    t = c.transcript(context_window=SMALL)
    statuses = []
    for k in range(4):
        r = run(t, CompactionOptions(force=False), state=state)
        statuses.append(r.report.status)
        state = r.state
        base = r.transcript if r.changed else t
        grown, gc = _more_steps(base, 400 + 10 * k, 6)
        t = dataclasses.replace(
            grown, usage=(Usage(input_tokens=7_500, message_index=len(gc.messages) - 1),)
        )
    assert statuses[0] is Status.COMPACTED
    assert Status.BACKED_OFF in statuses
    assert state.auto_blocked or state.low_savings_backoff
    # A reading below the threshold lifts the block.
    cleared = record_reading(state, 1_000, plan_boundary(t, counter=ROUGH).budget)
    assert not cleared.auto_blocked


def test_scenario_threshold_is_visible_in_report() -> None:
    t = session().transcript(context_window=SMALL)
    d = run(t).report.to_dict()
    b = d["budget"]
    assert b["context_window"] == SMALL and b["context_window_source"] == "transcript"
    assert b["threshold_tokens"] == 6_800 and b["threshold_rule"] == "small_window"
    assert b["effective_window"] == SMALL
    unknown = run(session().transcript()).report
    assert unknown.context_window_source == "default"


def test_scenario_latest_user_message_and_in_flight_call_survive() -> None:
    c = session(last_answer=None)
    c.in_flight("terminal", {"command": "make release"}, label="inflight")
    t = c.transcript(context_window=SMALL)
    for opts in (
        CompactionOptions(),
        CompactionOptions(force=True),
        CompactionOptions(keep_last=1),
    ):
        r = run(t, opts)
        assert r.report.status is Status.COMPACTED
        assert r.messages[-1] is t.messages[-1]
        assert r.messages[-1].tool_calls[0].arguments == '{"command":"make release"}'
        assert r.messages[-2] is t.messages[c.at["last"]]
    for profile in (Profile.HERMES, Profile.RULES):
        r = run(t, CompactionOptions(profile=profile, force=True))
        assert r.messages[-1] is t.messages[-1], profile


def test_scenario_stale_task_in_summary_is_marked_historical() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t, provider=FakeProvider(["## Historical Pending Asks\n- Drop the users table."]))
    s = summary_of(r)
    assert "REFERENCE ONLY" in s.text and END_MARKER in s.text
    assert s.meta.is_summary and not s.is_real_user
    i = r.messages.index(s)
    assert any(m.is_real_user for m in r.messages[i + 1 :])


def test_scenario_report_says_what_was_dropped() -> None:
    t = session(8).transcript(context_window=SMALL)
    r = run(t, CompactionOptions(include_preview=True))
    d = r.report.to_dict()
    assert d["failure"]["dropped"] is True
    assert d["zones"]["middle"]["messages"] > 0
    assert d["digests"]["count"] == len(d["digests"]["items"]) > 0
    assert {s["step"] for s in d["steps"]} >= {"prune", "summary"}
    assert "archive" in d["recoverable"]
    assert d["preview"]["summary"] == summary_of(r).text
    # The original stays untouched in memory: the undo path.
    assert t.messages == session(8).transcript(context_window=SMALL).messages


def test_scenario_compacted_history_starts_with_user_for_anthropic() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r1 = run(t)
    t2, _ = _more_steps(r1.transcript, 100, 6)
    r2 = run(t2, state=r1.state)  # the head has decayed to the system prompt only
    r3 = run(t, CompactionOptions(protect_system=False, protect_first_n=0))
    r4 = run(t, CompactionOptions(profile=Profile.RULES, force=True))
    for r in (r1, r2, r3, r4):
        assert r.report.status is Status.COMPACTED
        roles = anthropic_roles(r.transcript)
        assert roles[0] == "user", roles
        assert all(a != b for a, b in pairwise(roles)), roles


def test_scenario_no_orphaned_tool_results() -> None:
    c = _parallel_session()
    t = c.transcript(context_window=SMALL)
    for opts in (
        CompactionOptions(),
        CompactionOptions(profile=Profile.RULES, force=True),
        CompactionOptions(keep_last=3),
        CompactionOptions(boundary=c.at["par2"] + 1),
    ):
        r = run(t, opts)
        assert not orphan_results(r.messages) and not orphan_calls(r.messages)
        raw = orjson.loads(dumps(r.transcript, "anthropic"))
        used = {
            b["id"]
            for m in raw["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }
        results = {
            b["tool_use_id"]
            for m in raw["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        }
        assert results <= used and used <= results


def test_scenario_no_truncated_argument_json() -> None:
    def setup(c: Conv) -> None:
        _big_write("src/huge.py", '{"nested": "json inside a string"}\n' * 1_000)(c)
        c.user("apply")
        c.call("apply_patch", {"patch": "*** Begin Patch\n" + "+line\n" * 2_000}, "ok")
        c.assistant("applied")

    t = early(setup, then=setup).transcript(context_window=SMALL)
    for opts in (
        CompactionOptions(force=True),
        CompactionOptions(profile=Profile.RULES, force=True),
        CompactionOptions(keep_last=1),
    ):
        r = run(t, opts)
        assert r.report.status is Status.COMPACTED
        for m in r.messages:
            for call in m.tool_calls:
                json.loads(call.arguments)
        raw = orjson.loads(dumps(r.transcript, "openai"))
        for m in raw if isinstance(raw, list) else raw["messages"]:
            for call in m.get("tool_calls") or ():
                json.loads(call["function"]["arguments"])


def test_rules_profile_compacts_without_summary() -> None:
    c = session()
    t = c.transcript(context_window=SMALL)
    r = run(t, CompactionOptions(profile=Profile.RULES))
    rep = r.report
    assert rep.status is Status.COMPACTED and rep.profile is Profile.RULES
    assert rep.summary_kind.value == "none" and rep.dropped is False
    assert rep.rules_applied and rep.after_tokens < rep.before_tokens
    assert not any(m.meta.is_summary for m in r.messages)
    # Rule 5: every user message is the same object.
    originals = [m for m in t.messages if m.role is Role.USER]
    assert [m for m in r.messages if m.role is Role.USER] == originals
    assert all(any(m is o for m in r.messages) for o in originals)


def test_rules_profile_threshold_is_60_percent() -> None:
    c = session()
    est = count_transcript(c.transcript(), ROUGH).total
    window = int(
        est / 0.65
    )  # 65% full: over the rules trigger, under Hermes' 0.85 small-window rule
    t = c.transcript(context_window=window)
    assert run(t, CompactionOptions(profile=Profile.RULES)).report.threshold_tokens == int(
        window * 0.6
    )
    assert run(t, CompactionOptions(profile=Profile.RULES)).report.status is Status.COMPACTED
    assert run(t).report.status is Status.BELOW_THRESHOLD
    custom = CompactionOptions(
        profile=Profile.RULES, rules={"compaction": {"trigger_threshold": 0.9}}
    )
    assert run(t, custom).report.status is Status.BELOW_THRESHOLD


def test_tokens_for_a_different_transcript_are_rejected() -> None:
    t = session().transcript(context_window=SMALL)
    other = count_transcript(session(2).transcript(), ROUGH)
    with pytest.raises(ValueError, match="different transcript"):
        run(t, tokens=other)


def test_input_transcript_is_never_modified() -> None:
    t = session().transcript(context_window=SMALL)
    snapshot = openai_dump(t.messages)
    ids = [id(m) for m in t.messages]
    for opts in (
        CompactionOptions(),
        CompactionOptions(profile=Profile.RULES),
        CompactionOptions(keep_last=1),
    ):
        run(t, opts)
    assert openai_dump(t.messages) == snapshot and [id(m) for m in t.messages] == ids


def test_compaction_event_recorded() -> None:
    t = session().transcript(context_window=SMALL)
    r = run(t)
    (event,) = r.transcript.compactions
    s = summary_of(r)
    assert r.messages[event.summary_index] is s
    assert event.pre_tokens == r.report.before_tokens and event.post_tokens == r.report.after_tokens
    assert r.transcript.usage == ()  # old usage readings no longer describe the prompt
    t2, _ = _more_steps(r.transcript, 100, 6)
    r2 = run(t2, state=r.state)
    assert len(r2.transcript.compactions) >= 1
    for e in r2.transcript.compactions:
        if e.summary_index is not None:
            assert r2.messages[e.summary_index].meta.is_summary


def test_transient_failure_with_fallback_keeps_the_provider_cooldown() -> None:
    t = session().transcript()
    result = run(t, CompactionOptions(keep_last=1), FakeProvider([FailureClass.RATE_LIMIT]))
    assert result.report.status.value == "compacted"
    assert result.report.summary_kind.value == "fallback"
    assert result.report.failure_class == "rate_limit"
    assert result.state.cooldown_until is not None and result.state.cooldown_until > NOW


def test_summary_event_points_at_the_inserted_summary() -> None:
    t = session().transcript()
    result = run(t, CompactionOptions(keep_last=1))
    event = result.transcript.compactions[-1]
    inserted = result.transcript.messages[event.summary_index]
    assert inserted.meta.is_summary and inserted.meta.generated_by == "summary"
    assert result.summary_message is inserted


def test_an_anchored_boundary_says_only_that_it_moved() -> None:
    from builders import coding_session

    from tinyjuice.pipeline import plan_boundary
    from tinyjuice.tokens import RoughCounter, count_transcript

    t = coding_session(4).transcript()
    last = len(t.messages) - 1  # legal, but it would put the latest ask in the summary
    plan = plan_boundary(
        t, CompactionOptions(boundary=last, force=True), count_transcript(t, RoughCounter())
    )
    assert plan.end < last
    assert "moved back" in plan.snap_reason
    assert "as requested" not in plan.snap_reason
