"""``compress()``: the whole conversation-compaction pipeline, step by step.

threshold check → deterministic tool-output prune → protected head → token-budget
tail → tool-group alignment → latest user / assistant anchoring → middle
summarisation → handoff summary insertion (or iterative merge) → tool-pair
sanitizer → historical media reduction → accounting.

Pure and deterministic: no network (summary providers are passed in), no clock
unless ``now`` is omitted, no I/O. Head and tail messages are returned as the same
objects (byte-identical); only the middle is replaced. Token figures reuse the
caller's per-message counts, so only generated messages are counted again.

:func:`plan_boundary` is the cheap part — where the boundary falls, why it snapped,
and zone totals from prefix sums — for interactive use on every boundary move.
"""

from __future__ import annotations

import itertools
import operator
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from tinyjuice._gc import gc_paused
from tinyjuice.boundary import (
    AS_REQUESTED,
    BoundaryIndex,
    anchor_tail_start,
    protected_head_end,
    rejoin,
    sanitize_tool_pairs,
    select_tail_by_budget,
    split_for_partial_compaction,
)
from tinyjuice.budget import (
    STRIKE_LIMIT,
    Budget,
    PromptTokens,
    SummaryKind,
    compute_budget,
    record_compaction,
    record_failure,
    record_reading,
    should_compress,
    summary_token_budget,
    tail_token_budget,
)
from tinyjuice.cache_hints import cache_hints, stable_prefix_cache_key
from tinyjuice.digest import DigestRecord, ToolKind, digest_tool_results, tool_kind
from tinyjuice.lease import CompactionLease
from tinyjuice.media import FlatMediaReducer
from tinyjuice.model import CompactionEvent, Message, Role, TextPart, Transcript, Trigger
from tinyjuice.model_limits import resolve_context_window
from tinyjuice.options import LOW_SAVINGS_RATIO, CompactionOptions, CompactionState, Profile
from tinyjuice.policies import PolicyName, agent_threshold, pick_policy, threshold_budget
from tinyjuice.redact import (
    redact_message,
    redact_messages,
    redact_text,
    texts_without_secrets,
    without_source_fields,
)
from tinyjuice.report import (
    DEFAULT_CONTEXT_WINDOW,
    CompactionReport,
    CompactionResult,
    PersistenceRecommendation,
    Status,
    StepSaving,
)
from tinyjuice.rules import (
    RulesConfig,
    apply_rules,
    error_lines,
    rules_tail_start,
    tool_output_text,
)
from tinyjuice.summary import (
    FailureClass,
    FailureOutcome,
    StructuredSummary,
    SummaryError,
    SummaryProvider,
    SummaryRequest,
    failure_outcome,
    fallback_summary,
    is_summary_message,
    render_summary_message,
    resolve_previous_summary,
    summary_body,
)
from tinyjuice.text import join_pieces, pieces_matching
from tinyjuice.tokens import (
    CountKind,
    RoughCounter,
    TokenCounter,
    TranscriptTokens,
    count_transcript,
    counted_kind,
    default_counter,
    message_tokens,
)

if TYPE_CHECKING:
    from tinyjuice.analysis import TranscriptAnalysis
    from tinyjuice.decisive import DecisivePlan

__all__ = ["BoundaryPlan", "compress", "plan_boundary", "prompt_now"]

#: Automatic compaction needs more than head + this many messages (Hermes).
_MIN_MIDDLE = 4


@dataclass(frozen=True, slots=True)
class BoundaryPlan:
    """Where a compaction would cut, why, and the zone totals. No mutation, no text."""

    start: int
    end: int
    requested: int | None
    snap_reason: str
    no_op: bool
    reason: str
    head_end: int
    total_messages: int
    head_tokens: int
    middle_tokens: int
    tail_tokens: int
    static_tokens: int
    #: Estimated prompt after compaction (hermes: head + tail + summary target; rules:
    #: the prompt as it is, an upper bound — what the rules remove shows only once they run).
    projected_tokens: int
    summary_budget: int
    budget: Budget
    context_window: int
    context_window_source: str
    compaction_count: int
    #: How to read ``projected_tokens``: "estimate" or "upper_bound".
    projection: str = "estimate"

    @property
    def head_messages(self) -> int:
        return self.start

    @property
    def middle_messages(self) -> int:
        return max(0, self.end - self.start)

    @property
    def tail_messages(self) -> int:
        return self.total_messages - self.end

    @property
    def total_tokens(self) -> int:
        return self.static_tokens + self.head_tokens + self.middle_tokens + self.tail_tokens


def _window(transcript: Transcript, options: CompactionOptions) -> tuple[int, str, int | None]:
    """(window, where it came from, the model's max output tokens from the table)."""
    window, source, model_max_out = resolve_context_window(
        transcript.context_window, transcript.model, options.context_window
    )
    if window is None:
        return DEFAULT_CONTEXT_WINDOW, "default", model_max_out
    return window, source or "default", model_max_out


def _budget(
    options: CompactionOptions,
    window: int,
    rules: RulesConfig,
    transcript: Transcript,
    model_max_out: int | None = None,
) -> Budget:
    """The threshold the run judges by: the same policy ``explain`` and the inspector use.

    ``options.policy`` when given; else the rules profile's own trigger, or the
    transcript's agent's policy (Hermes' rule with the options' knobs for Hermes).
    """
    if options.policy is None:
        if options.profile is Profile.RULES:
            return _hermes_budget(options, window, rules)
        if pick_policy(transcript)[0].name is PolicyName.HERMES:
            return _hermes_budget(options, window, rules)
    max_out = options.max_output_tokens or model_max_out
    _, threshold, _ = agent_threshold(transcript, window, max_out, options.policy)
    return threshold_budget(threshold)


def _hermes_budget(options: CompactionOptions, window: int, rules: RulesConfig) -> Budget:
    if options.profile is Profile.RULES:
        return compute_budget(
            window,
            max_output_tokens=options.max_output_tokens,
            threshold_ratio=rules.trigger_threshold,
            floor=0,
            raise_ratio_small_windows=False,
        )
    return compute_budget(
        window,
        max_output_tokens=options.max_output_tokens,
        threshold_ratio=options.threshold_ratio,
        floor=options.threshold_floor,
        raise_ratio_small_windows=options.raise_ratio_small_windows,
    )


def _leading_system(messages: Sequence[Message]) -> int:
    i = 0
    while i < len(messages) and messages[i].role in (Role.SYSTEM, Role.DEVELOPER):
        i += 1
    return i


def plan_boundary(
    transcript: Transcript,
    options: CompactionOptions | None = None,
    tokens: TranscriptTokens | None = None,
    *,
    index: BoundaryIndex | None = None,
    state: CompactionState | None = None,
    counter: TokenCounter | None = None,
) -> BoundaryPlan:
    """Where compaction would cut for ``options`` (keep_last, an explicit boundary, or budget).

    Pass ``index`` (a :class:`BoundaryIndex` built once) and ``tokens`` to make this
    cheap enough to call on every boundary move of an interactive UI.
    """
    opts = options or CompactionOptions()
    msgs = transcript.messages
    n = len(msgs)
    if tokens is None:
        tokens = count_transcript(transcript, counter or default_counter())
    idx = index or BoundaryIndex(msgs)
    rules = RulesConfig.from_mapping(opts.rules) if opts.rules else RulesConfig()
    window, window_source, model_max_out = _window(transcript, opts)
    budget = _budget(opts, window, rules, transcript, model_max_out)
    count = max(state.compaction_count if state else 0, len(transcript.compactions))
    if count == 0 and idx.has_summary():
        # A summary in the messages means an earlier compaction (e.g. a resumed session):
        # the opening turns already live in it, so the head decays like after a first run.
        count = 1
    reasons: list[str] = []
    if opts.profile is Profile.RULES:
        head_end = idx.align_start_forward(_leading_system(msgs))
    else:
        head_end = protected_head_end(
            msgs,
            protect_first_n=opts.protect_first_n,
            compaction_count=count,
            decay=opts.decay_head_after_first_compaction,
            protect_system=opts.protect_system,
            prepared=idx,
        )
    start = idx.align_start_forward(head_end)
    end, requested, no_op_reason = _tail_start(
        transcript, opts, tokens, idx, budget, rules, head_end, reasons
    )
    end = _anchor_tail(transcript, opts, idx, start, end, reasons)
    if not no_op_reason:
        tail_start = end
        end, no_op_reason = _too_short(opts, n, start, end)
        if tail_start <= start and _rule6_tail(opts):
            asks = sum(1 for m in msgs if m.is_real_user)
            no_op_reason = _rule6_reason(rules.protect_last_n_turns, asks, tail_start)
    head_tok = tokens.range(0, start)
    mid_tok = tokens.range(start, end)
    tail_tok = tokens.range(end, n)
    static = tokens.system_prompt + tokens.tools
    summary_budget = summary_token_budget(window, mid_tok)
    if opts.profile is Profile.RULES:
        projected = static + head_tok + tail_tok + mid_tok  # refined by compress()
    else:
        projected = static + head_tok + tail_tok + (min(summary_budget, mid_tok) if mid_tok else 0)
    return BoundaryPlan(
        start=start,
        end=max(end, start),
        requested=requested,
        snap_reason="; ".join(r for r in reasons if r),
        no_op=bool(no_op_reason),
        reason=no_op_reason,
        head_end=head_end,
        total_messages=n,
        head_tokens=head_tok,
        middle_tokens=mid_tok if end > start else 0,
        tail_tokens=tail_tok,
        static_tokens=static,
        projected_tokens=projected,
        summary_budget=summary_budget,
        budget=budget,
        context_window=window,
        context_window_source=window_source,
        compaction_count=count,
        projection="upper_bound" if opts.profile is Profile.RULES else "estimate",
    )


def _tail_start(
    transcript: Transcript,
    opts: CompactionOptions,
    tokens: TranscriptTokens,
    idx: BoundaryIndex,
    budget: Budget,
    rules: RulesConfig,
    head_end: int,
    reasons: list[str],
) -> tuple[int, int | None, str]:
    """``(end, requested, no-op reason)``: where the verbatim tail starts, by keep_last, an
    explicit boundary, the rules' protected turns or the tail budget; why, in ``reasons``."""
    msgs = transcript.messages
    if opts.keep_last is not None:
        split = split_for_partial_compaction(
            msgs, opts.keep_last, protect_system=opts.protect_system, prepared=idx
        )
        if split.no_op:
            return split.tail_start, split.tail_start, split.reason  # the no-op says why
        reasons.append(
            f"keeping the last {split.exchanges_kept} of {split.exchanges_total} user "
            f"exchanges verbatim (from message {split.tail_start})"
        )
        return split.tail_start, split.tail_start, ""
    if opts.boundary is not None:
        snap = idx.snap(opts.boundary, "nearest")
        reasons.append(snap.reason)
        return snap.index, opts.boundary, ""
    if opts.profile is Profile.RULES:
        end = idx.align_end_backward(rules_tail_start(msgs, rules.protect_last_n_turns))
        reasons.append(f"the last {rules.protect_last_n_turns} user turns are protected (rule 6)")
        return end, None, ""
    tail_budget = opts.tail_token_budget or tail_token_budget(budget, opts.tail_target_ratio)
    end = select_tail_by_budget(
        msgs,
        tokens.per_message,
        head_end,
        tail_budget,
        opts.tail_floor,
        opts.soft_ceiling_ratio,
        force_middle=opts.force,
        prepared=idx,
    )
    reasons.append(f"tail holds ~{tail_budget:,} tokens (at least {opts.tail_floor} messages)")
    return end, None, ""


def _anchor_tail(
    transcript: Transcript,
    opts: CompactionOptions,
    idx: BoundaryIndex,
    start: int,
    end: int,
    reasons: list[str],
) -> int:
    """``end`` moved back so the latest user ask and reply stay verbatim (when asked to)."""
    if not (opts.anchor_latest_user or opts.anchor_latest_assistant):
        return end
    anchored = anchor_tail_start(
        transcript.messages,
        end,
        anchor_user=opts.anchor_latest_user,
        anchor_assistant=opts.anchor_latest_assistant,
        head_end=start,
        prepared=idx,
    )
    if anchored == end:
        return end
    if reasons and reasons[-1] == AS_REQUESTED:
        reasons.pop()  # it was, but anchoring moved it: say only that
    reasons.append(
        f"moved back from {end} to {anchored} to keep the latest user ask and reply verbatim"
    )
    return anchored


def _rule6_tail(opts: CompactionOptions) -> bool:
    """Whether the tail is the rules profile's protected last user turns (rule 6)."""
    return opts.profile is Profile.RULES and opts.keep_last is None and opts.boundary is None


def _rule6_reason(turns: int, asks: int, tail_start: int) -> str:
    """Why the rules profile has nothing to compress when rule 6 protects it all: an
    agent's long run on one ask is one user turn, so a session of fewer asks than the
    protected turns is all tail."""
    if asks < turns:
        reach = f"this session has {asks} (all of it is protected)"
    else:
        reach = f"they reach back to message {tail_start}"
    return (
        f"nothing to compress: the rules profile keeps the last {turns} user turns "
        f"verbatim (rule 6), and {reach}; a keep-last count or an explicit boundary "
        "sets the tail instead"
    )


def _too_short(opts: CompactionOptions, n: int, start: int, end: int) -> tuple[int, str]:
    """``(end, no-op reason)`` when the middle is empty or too short to compress."""
    if end <= start:
        if opts.manual:
            where = f"the boundary ({end}) is inside the protected head (messages before {start})"
        elif start == 0:
            where = "the kept tail holds the whole session"
        else:
            where = (
                f"the kept tail (from message {end}) leaves nothing between it and the "
                f"protected head (messages before {start})"
            )
        return max(end, start), f"nothing to compress: {where}"
    if not opts.manual and not opts.force and (n <= start + _MIN_MIDDLE or end - start < 1):
        return end, f"too short to compress: {n} messages, head {start} + {_MIN_MIDDLE} needed"
    return end, ""


# --------------------------------------------------------------------------- compress


@dataclass(slots=True)
class _Run:
    """Mutable scratch state of one compress() call (never escapes it)."""

    transcript: Transcript
    options: CompactionOptions
    tokens: TranscriptTokens
    counter: TokenCounter
    plan: BoundaryPlan
    prompt: PromptTokens
    state: CompactionState
    warnings: list[str] = field(default_factory=list)
    #: The boundary index compress() built itself, or the caller's when it was built over
    #: this transcript's messages (None: neither).
    own_index: BoundaryIndex | None = None
    #: Redaction, remembered across runs when the caller passed a TranscriptAnalysis.
    redact_many: Callable[[Sequence[Message]], tuple[list[Message], int]] = redact_messages
    #: The fallback's text redaction (None: a fresh one), shared through the analysis.
    redact_text: Callable[[str], str] | None = None
    #: Per-message results remembered across runs (None: none passed).
    analysis: TranscriptAnalysis | None = None
    #: The estimated part of ``tokens`` (chars/4 for the messages between the exact head
    #: and tail, tinyjuice.decisive); 0 when every message was counted exactly.
    estimated: int = 0
    #: The boundary index the run plans with.
    index: BoundaryIndex | None = None
    #: The kind of each zone's figure when the middle is estimated (DecisivePlan.kinds).
    counts: Mapping[str, str] = field(default_factory=dict)


def _prompt_tokens(transcript: Transcript, tokens: TranscriptTokens) -> PromptTokens:
    """The prompt size: measured usage when it is the latest reading, else the count."""
    return prompt_now(transcript, tokens.total, counted_kind(transcript.messages, tokens.kind))


def prompt_now(transcript: Transcript, total: int, kind: CountKind) -> PromptTokens:
    """The prompt size :func:`compress` decides on: the transcript's measured usage when
    it is the latest reading (within the last three messages), else ``total`` counted
    as ``kind``."""
    if transcript.usage:
        last = transcript.usage[-1]
        at = last.message_index
        if at is None or at >= len(transcript.messages) - 3:
            return PromptTokens(last.prompt_tokens, CountKind.MEASURED)
    return PromptTokens(total, kind)


@dataclass(frozen=True, slots=True)
class _SummaryInfo:
    """How the summary came about, for the report (defaults: no summary)."""

    kind: SummaryKind = SummaryKind.NONE
    confidence: str | None = None
    provider: str | None = None
    tokens: int = 0
    omitted: Mapping[str, int] = field(default_factory=dict)
    appendix_id: str | None = None
    dropped: bool = False
    failure_class: str | None = None
    retry_class: str | None = None


_NO_SUMMARY = _SummaryInfo()


@dataclass(frozen=True, slots=True)
class _Changes:
    """What a compaction that went through changed, for the report."""

    after_messages: int
    after_tokens: int
    steps: tuple[StepSaving, ...]
    digests: tuple[Mapping[str, Any], ...]
    rules_applied: Mapping[str, int]
    redactions: int
    media_replaced: int
    sanitizer: Mapping[str, int]
    cache_cold_tokens: int
    cache_hints: tuple[Mapping[str, Any], ...]
    persistence: PersistenceRecommendation
    preview: Mapping[str, Any] | None
    compaction_count: int


def _report(
    run: _Run,
    status: Status,
    reason: str,
    *,
    summary: _SummaryInfo | None = None,
    changes: _Changes | None = None,
    recoverable: str,
) -> CompactionReport:
    """The report: the run's figures, the summary's, then what changed (None: nothing)."""
    t, plan = run.transcript, run.plan
    s = summary or _NO_SUMMARY
    report = CompactionReport(
        status=status,
        reason=reason,
        profile=run.options.profile,
        before_messages=len(t.messages),
        before_tokens=run.tokens.total,
        after_messages=len(t.messages),
        after_tokens=run.tokens.total,
        prompt_tokens=run.prompt.value,
        prompt_tokens_kind=run.prompt.kind.value,
        tokens_kind=counted_kind(t.messages, run.tokens.kind).value,
        counter=run.tokens.counter,
        context_window=plan.context_window,
        context_window_source=plan.context_window_source,
        effective_window=plan.budget.effective_window,
        threshold_tokens=plan.budget.threshold_tokens,
        threshold_rule=plan.budget.rule.value,
        boundary_start=plan.start,
        boundary_end=plan.end,
        boundary_requested=plan.requested,
        snap_reason=plan.snap_reason,
        head_messages=plan.head_messages,
        middle_messages=plan.middle_messages,
        tail_messages=plan.tail_messages,
        head_tokens=plan.head_tokens,
        middle_tokens=plan.middle_tokens,
        tail_tokens=plan.tail_tokens,
        compaction_count=plan.compaction_count,
        cache_key=stable_prefix_cache_key(t.system_text, t.tools),
        warnings=tuple(run.warnings),
        summary_kind=s.kind,
        summary_confidence=s.confidence,
        summary_tokens=s.tokens,
        summary_provider=s.provider,
        summary_omitted=s.omitted,
        summary_appendix=s.appendix_id,
        dropped=s.dropped,
        failure_class=s.failure_class,
        retry_class=s.retry_class,
        recoverable=recoverable,
        counts=run.counts,
    )
    if changes is None:
        return report
    c = changes
    return replace(
        report,
        after_messages=c.after_messages,
        after_tokens=c.after_tokens,
        steps=c.steps,
        digests=c.digests,
        rules_applied=c.rules_applied,
        redactions=c.redactions,
        media_replaced=c.media_replaced,
        sanitizer=c.sanitizer,
        cache_cold_tokens=c.cache_cold_tokens,
        cache_hints=c.cache_hints,
        persistence=c.persistence,
        preview=c.preview,
        compaction_count=c.compaction_count,
    )


def _unchanged(
    run: _Run, status: Status, reason: str, summary: _SummaryInfo | None = None
) -> CompactionResult:
    report = _report(run, status, reason, summary=summary, recoverable="nothing was changed")
    return CompactionResult(transcript=run.transcript, report=report, state=run.state)


def _strike_if_automatic(run: _Run) -> None:
    """An automatic compaction that fired but changed nothing counts a strike (Hermes),
    so a host calling compress() every turn does not loop on a no-op."""
    if run.options.manual or run.options.force:
        return
    strikes = run.state.strikes + 1
    run.state = replace(
        run.state,
        strikes=strikes,
        auto_blocked=run.state.auto_blocked or strikes >= STRIKE_LIMIT,
        awaiting_reading=False,
    )


def _redact_before_digest(
    messages: Sequence[Message],
    opts: CompactionOptions,
    redact_many: Callable[[Sequence[Message]], tuple[list[Message], int]] = redact_messages,
) -> tuple[list[Message], int, set[int]]:
    """Redact what a digest can carry verbatim, before digesting.

    Texts, tool arguments (they feed digest lines and may be clipped by argument
    shrinking) and search outputs (their evidence lines are quoted) are redacted now.
    Other large tool outputs are reduced to metadata by the digest, so they are redacted
    afterwards only if they survive — the same guarantee, without scanning megabytes of
    output that is about to be dropped. Returns the messages, the number changed, and
    the ids of the messages already redacted.
    """
    names: dict[str, str] | None = None  # call id → tool name, built when first needed
    kinds: dict[str | None, ToolKind] = {}  # tool_kind by name, for this call
    min_chars, tool_role, search = opts.digest_min_chars, Role.TOOL, ToolKind.SEARCH
    now: list[int] = []
    for i, m in enumerate(messages):
        if m.role is not tool_role:
            now.append(i)
            continue
        parts = m.parts
        text = parts[0].text if len(parts) == 1 and type(parts[0]) is TextPart else m.text
        if len(text) < min_chars:
            now.append(i)
            continue
        name = m.tool_name
        if not name:
            if names is None:
                names = {c.id: c.name for x in messages for c in x.tool_calls}
            name = names.get(m.tool_call_id or "")
        kind = kinds.get(name)
        if kind is None:
            kind = kinds[name] = tool_kind(name)
        if kind is search:
            now.append(i)
        # the rest is digested next, and redacted afterwards if it survives
    redacted, changed = redact_many([messages[i] for i in now])
    out = list(messages)
    for i, r in zip(now, redacted, strict=True):
        out[i] = r
    done = {id(r) for r in redacted}
    return out, changed, done


def _remap_events(
    old: Transcript, new_messages: Sequence[Message], event: CompactionEvent
) -> tuple[CompactionEvent, ...]:
    """Keep past events whose summary message survived, at its new index; add ``event``."""
    position = {id(m): i for i, m in enumerate(new_messages)}
    kept: list[CompactionEvent] = []
    for e in old.compactions:
        anchor = e.summary_index if e.summary_index is not None else e.message_index
        if 0 <= anchor < len(old.messages) and id(old.messages[anchor]) in position:
            new_at = position[id(old.messages[anchor])]
            shift = new_at - anchor
            kept.append(
                replace(
                    e,
                    message_index=e.message_index + shift,
                    summary_index=None if e.summary_index is None else new_at,
                )
            )
    return (*kept, event)


#: A digest line of a failed call: a non-zero exit code, or an error status.
_FAILED_DIGEST = re.compile(r"\bexit -?[1-9]\d*\b|\berror\b", re.IGNORECASE)


def _failed_digest(text: str) -> bool:
    if text.isascii():
        # ASCII text can only match the case-insensitive pattern through these words.
        low = text.lower()
        if "exit " not in low and "error" not in low:
            return False
    return _FAILED_DIGEST.search(text) is not None


#: :data:`_FAILED_DIGEST` for lower-cased ASCII text: the same matches, entered at their
#: "e" (searched for at C speed; a leading ``\b`` is tried at every position), with the
#: word boundary before it checked backwards.
_FAILED_DIGEST_LOWER = re.compile(r"e(?<!\we)(?:xit -?[1-9]\d*|rror)\b")


def _failed_digests(texts: Sequence[str]) -> list[bool]:
    """``[_failed_digest(t) for t in texts]``, the ASCII texts lower-cased and searched
    joined by line breaks (no match can hold one) in one scan: a digest is a line or
    two, and a long middle has tens of thousands."""
    out = [False] * len(texts)
    at: list[int] = []
    for k, text in enumerate(texts):
        if text.isascii():
            at.append(k)
        else:
            out[k] = _failed_digest(text)
    joined, starts = join_pieces([texts[k].lower() for k in at], "\n")
    for j in pieces_matching(_FAILED_DIGEST_LOWER, joined, starts):
        out[at[j]] = True
    return out


def _with_error_lines(
    pruned: Sequence[Message],
    originals: Sequence[Message],
    memo: dict[int, tuple[Message, Message, Message]] | None = None,
) -> list[Message]:
    """``pruned`` with the error lines of each failed, digested tool result appended.

    A digest keeps the command and exit code but not the error text; the fallback summary
    lists error snippets, so it gets them back from the original output (redacted here). Only
    failed calls (error flag, or a non-zero exit in the digest) are scanned again.
    ``memo`` (``id(original) → (original, digest, result)``) remembers each result.
    """
    if len(pruned) != len(originals):
        raise ValueError("pruned and originals differ in length")
    out = list(pruned)
    digests: list[int] = []
    # Only the messages the prune replaced (found in C: most are unchanged).
    for i in itertools.compress(range(len(out)), map(operator.is_not, pruned, originals)):
        p, o = pruned[i], originals[i]
        hit = memo.get(id(o)) if memo is not None else None
        if hit is not None and hit[0] is o and hit[1] is p:
            out[i] = hit[2]
        elif p.role is Role.TOOL and p.meta.generated_by == "digest":
            digests.append(i)
        elif memo is not None:
            memo[id(o)] = (o, p, p)
    exits = _failed_digests([pruned[i].text for i in digests])
    failed: list[int] = []
    for i, exited in zip(digests, exits, strict=True):
        if exited or originals[i].meta.is_error:
            failed.append(i)
        elif memo is not None:
            memo[id(originals[i])] = (originals[i], pruned[i], pruned[i])
    # The originals may not have been redacted (they were digested): redact them before
    # their lines are picked and clipped, so no clip cuts a key in half. One joined scan
    # finds the outputs redaction leaves as they are.
    outputs = [tool_output_text(originals[i].text) for i in failed]
    clean = texts_without_secrets(outputs)
    for i, output in zip(failed, outputs, strict=True):
        p = digest = pruned[i]
        redacted = output if output in clean else redact_text(output)
        errors = [redact_text(e) for e in error_lines(redacted)]
        if errors:
            text = p.text + "\n" + "\n".join(errors)
            rest = tuple(x for x in p.parts if not isinstance(x, TextPart))
            p = replace(p, parts=(TextPart(text), *rest))
        if memo is not None:
            memo[id(originals[i])] = (originals[i], digest, p)
        out[i] = p
    return out


#: Sections of a carried-over summary dropped first when the update runs over budget.
_CARRY_DROP_ORDER = (
    "active_state",
    "notes",
    "historical_task_snapshot",
    "critical_context",
    "completed_actions",
    "resolved_questions",
    "in_progress",
    "remaining_work",
    "key_decisions",
    "blockers",
    "constraints_preferences",
    "goal",
    "relevant_files",
    "pending_asks",
)
_CARRIED = "Carried over from the previous summary:"


def _merge_previous(
    new: StructuredSummary, previous: str, budget_tokens: int, counter: TokenCounter
) -> str:
    """A fallback summary that updates ``previous`` instead of nesting or losing it.

    Section by section: the new lines first, then the previous summary's lines not
    already there. Over ``budget_tokens``, carried lines go first (least important
    sections first); the new part already fits the budget on its own.
    """
    old = StructuredSummary.parse(previous)
    names = [f.name for f in fields(StructuredSummary)]
    fresh = {n: getattr(new, n).strip() for n in names}
    carried: dict[str, list[str]] = {}
    for n in names:
        seen = set(fresh[n].splitlines())
        carried[n] = [
            line for line in getattr(old, n).splitlines() if line.strip() and line not in seen
        ]

    def render() -> str:
        values = {}
        for n in names:
            block = [fresh[n]] if fresh[n] else []
            if carried[n]:
                block += [_CARRIED, *carried[n]]
            values[n] = "\n".join(block)
        return StructuredSummary(**values).render()

    text = render()
    tokens = counter.count(text)
    while tokens > budget_tokens and any(carried.values()):
        excess = tokens - budget_tokens
        for n in _CARRY_DROP_ORDER:
            while excess > 0 and carried[n]:
                excess -= counter.count(carried[n].pop()) + 1
            if excess <= 0:
                break
        text = render()
        tokens = counter.count(text)
    return text


#: The summary text, how it came about, and the fallback's appendix (None: none).
_Summary = tuple[str, _SummaryInfo, str | None]


def _previous_summary(run: _Run) -> str | None:
    """The summary an iterative update builds on (None: a summary kept in the head, or none)."""
    msgs: Sequence[Message] = run.transcript.messages
    if run.own_index is not None and not run.own_index.has_summary():
        msgs = ()  # no message is a summary: only the state can hold a previous one
    if any(is_summary_message(m) for m in msgs[: run.plan.start]):
        # A summary kept verbatim in the head is not merged again into the new one.
        return None
    return resolve_previous_summary(
        msgs[: run.plan.end],
        state_summary=run.state.previous_summary,
        state_lineage_id=run.state.lineage_id,
        lineage_id=run.options.lineage_id,
    )


def _summarise(
    run: _Run,
    middle: Sequence[Message],
    originals: Sequence[Message],
    middle_tokens: int,
    provider: SummaryProvider | None,
    now: float,
) -> _Summary | CompactionResult:
    """Produce the summary text, or an aborted result that preserves everything.

    The summary budget follows Hermes (max(2,000, min(20% of the middle, min(5% of the
    window, 10,000)))) over the middle *after* pruning, so it never outgrows what it
    replaces because digests already shrank it.
    """
    opts = run.options
    prev = _previous_summary(run)
    request_msgs = tuple(m for m in middle if not is_summary_message(m)) if prev else tuple(middle)
    window = run.plan.context_window
    if run.estimated and not _budget_clamped(window, middle_tokens):
        # The budget turns on the middle's size: count it exactly.
        middle_tokens = sum(message_tokens(m, run.counter) for m in middle)
    budget_tokens = summary_token_budget(window, middle_tokens)
    request = SummaryRequest(
        messages=request_msgs,
        previous_summary=prev,
        focus_topic=opts.focus_topic,
        token_budget=budget_tokens,
        lineage_id=opts.lineage_id,
    )
    failure: FailureClass | None = None
    if provider is not None:
        asked = _ask_provider(run, provider, request, now)
        if not isinstance(asked, FailureClass):
            return asked
        failure = asked
    else:
        outcome = _outcome(opts, FailureClass.NO_PROVIDER)
        if not outcome.drop_allowed:
            return _unchanged(
                run,
                Status.ABORTED,
                "no summary provider, and the deterministic fallback is not accepted "
                "(enable fallback and accept lossy summaries); nothing was changed",
                _SummaryInfo(failure_class=FailureClass.NO_PROVIDER.value, retry_class="none"),
            )
    return _fallback(run, middle, originals, prev, budget_tokens, failure)


def _outcome(
    opts: CompactionOptions, failure: FailureClass, retried: bool = False
) -> FailureOutcome:
    return failure_outcome(
        failure,
        abort_on_summary_failure=opts.abort_on_summary_failure,
        fallback_enabled=opts.fallback_enabled,
        accept_lossy=opts.accept_lossy_fallback,
        retried=retried,
    )


def _ask_provider(
    run: _Run, provider: SummaryProvider, request: SummaryRequest, now: float
) -> _Summary | CompactionResult | FailureClass:
    """The provider's summary; on failure the class when the fallback may stand in, or
    an aborted result (the failure is recorded in the state and the warnings)."""
    try:
        body = summary_body(provider.summarize(request))
        return body, _SummaryInfo(SummaryKind.LLM, "model", provider.name), None
    except SummaryError as exc:
        failure = exc.failure_class
        outcome = _outcome(run.options, failure)
        if outcome.retry_with_main_model:
            retry = getattr(provider, "with_main_model", None)
            if callable(retry):
                try:
                    body = summary_body(retry().summarize(request))
                    confidence = "model (retried on the main model)"
                    return body, _SummaryInfo(SummaryKind.LLM, confidence, provider.name), None
                except SummaryError as exc2:
                    failure = exc2.failure_class
            outcome = _outcome(run.options, failure, retried=True)
        run.state = record_failure(run.state, failure.value, now, outcome.cooldown_seconds)
        run.warnings.append(f"summary provider failed ({failure.value}): {exc.message}")
        if outcome.abort_preserve or not outcome.use_fallback:
            return _unchanged(
                run,
                Status.ABORTED,
                f"summary failed ({failure.value}); {outcome.reason}; nothing was changed",
                _SummaryInfo(
                    failure_class=failure.value,
                    retry_class="cooldown" if outcome.cooldown_seconds else "none",
                ),
            )
        return failure


def _error_memo(run: _Run) -> dict[int, tuple[Message, Message, Message]] | None:
    return None if run.analysis is None else run.analysis.error_lines


def _fallback(
    run: _Run,
    middle: Sequence[Message],
    originals: Sequence[Message],
    prev: str | None,
    budget_tokens: int,
    failure: FailureClass | None,
) -> _Summary:
    """The deterministic fallback summary (merged into ``prev`` when there is one)."""
    if prev:
        source = _with_error_lines(
            [m for m, o in zip(middle, originals, strict=True) if not is_summary_message(o)],
            [o for o in originals if not is_summary_message(o)],
            _error_memo(run),
        )
    else:
        source = _with_error_lines(middle, originals, _error_memo(run))
    fb = fallback_summary(
        source,
        budget_tokens=budget_tokens,
        counter=run.counter,
        focus=run.options.focus_topic,
        redactor=run.redact_text,
    )
    text = fb.text
    if prev:
        text = _merge_previous(fb.summary, prev, budget_tokens, run.counter)
    info = _SummaryInfo(
        kind=SummaryKind.FALLBACK,
        confidence=fb.confidence,
        omitted=dict(fb.omitted),
        dropped=True,
        appendix_id=fb.appendix_id if fb.appendix else None,
        failure_class=None if failure is None else failure.value,
        retry_class=None if failure is None else "fallback",
    )
    return text, info, fb.appendix or None


def compress(
    transcript: Transcript,
    options: CompactionOptions | None = None,
    provider: SummaryProvider | None = None,
    state: CompactionState | None = None,
    *,
    counter: TokenCounter | None = None,
    tokens: TranscriptTokens | None = None,
    lease: CompactionLease | None = None,
    now: float | None = None,
    index: BoundaryIndex | None = None,
    analysis: TranscriptAnalysis | None = None,
) -> CompactionResult:
    """Compact ``transcript``; returns the new transcript, a report and the new state.

    ``analysis`` (one :class:`~tinyjuice.analysis.TranscriptAnalysis` per transcript,
    passed to every call on it) remembers per-message work between calls.

    The input is never modified. Auth and network summary failures, a held lease, a
    no-op boundary, a result that would not be smaller and an unmet threshold all
    return the original messages with an explicit status.

    State threading: a measured prompt (the transcript's latest usage) is recorded as a
    reading first (still over the threshold right after a compaction is a strike; below
    it lifts every block), and an automatic run that fires but changes nothing is a
    strike, so calling this every turn with the returned state cannot loop.
    """
    # Compaction builds tens of thousands of messages and no cycles: see gc_paused. Not
    # while a provider may spend seconds on the network (the process-wide switch would
    # keep every other thread from being collected meanwhile).
    with gc_paused() if provider is None else nullcontext():
        opts = options or CompactionOptions()
        counter = counter or default_counter()
        now = time.time() if now is None else now
        st = state or CompactionState(lineage_id=opts.lineage_id)
        run, plan = _start_run(transcript, opts, counter, provider, st, tokens, index, analysis)

        if (
            opts.profile is Profile.RULES
            and opts.rules
            and not RulesConfig.from_mapping(opts.rules).enabled
        ):
            return _unchanged(
                run, Status.NOOP, "rule-based compaction is disabled (compaction.enabled: false)"
            )
        if run.prompt.kind is CountKind.MEASURED:
            # A provider reading is the anti-thrash signal: still over the threshold right
            # after a compaction is a strike; any reading below it lifts every block.
            run.state = st = record_reading(st, run.prompt, plan.budget)
        if not opts.manual:
            decision = should_compress(run.prompt, plan.budget, st, force=opts.force, now=now)
            if not decision.fire:
                status = {
                    "below_threshold": Status.BELOW_THRESHOLD,
                    "cooldown": Status.COOLDOWN,
                }.get(decision.code.value, Status.BACKED_OFF)
                return _unchanged(run, status, decision.reason)
        if plan.no_op:
            _strike_if_automatic(run)
            return _unchanged(run, Status.NOOP, plan.reason)

        key = transcript.session_id or transcript.path or "transcript"
        held = None
        if lease is not None:
            held = lease.try_acquire(key)
            if not held.acquired:
                return _unchanged(
                    run,
                    Status.LEASE_BUSY,
                    f"compaction already in flight (held by {held.holder}); nothing was changed",
                )
        try:
            return _compress(run, provider, now)
        finally:
            if lease is not None and held is not None and held.lease_id:
                lease.release(held.lease_id)


def _start_run(
    transcript: Transcript,
    opts: CompactionOptions,
    counter: TokenCounter,
    provider: SummaryProvider | None,
    st: CompactionState,
    tokens: TranscriptTokens | None,
    index: BoundaryIndex | None,
    analysis: TranscriptAnalysis | None,
) -> tuple[_Run, BoundaryPlan]:
    """The run and its first plan: counts exact where they decide (all of them when
    given or when estimating is not allowed), the caller's memos wired in. When the
    threshold needs exact counts the run is recounted; the first plan is returned as
    the threshold check and the no-op test have always read it."""
    own_index = BoundaryIndex(transcript.messages) if index is None else None
    idx = index if index is not None else own_index
    assert idx is not None
    estimated = 0
    counts: Mapping[str, str] = {}
    if tokens is None and _may_estimate(opts, counter, provider):
        decisive = _plan_decisive(transcript, opts, counter, idx, st)
        tokens, plan = decisive.tokens, decisive.plan
        if not decisive.middle_exact:
            estimated = tokens.range(decisive.exact_head, decisive.exact_tail)
            counts = _zone_kinds(transcript, decisive, counter)
    else:
        tokens = tokens or count_transcript(transcript, counter)
        if len(tokens.per_message) != len(transcript.messages):
            raise ValueError("tokens were counted for a different transcript")
        plan = plan_boundary(transcript, opts, tokens, index=idx, state=st, counter=counter)
    run = _Run(transcript, opts, tokens, counter, plan, _prompt_tokens(transcript, tokens), st)
    run.own_index = (
        index if index is not None and index.built_over(transcript.messages) else own_index
    )
    run.index = idx
    run.estimated, run.counts = estimated, counts
    if analysis is not None:
        run.redact_many = analysis.redact_messages
        run.redact_text = analysis.redact_text
        run.analysis = analysis
    if estimated and not _threshold_decided(run):
        run = _counted_exactly(run, idx)
    return run, plan


def _may_estimate(
    opts: CompactionOptions, counter: TokenCounter, provider: SummaryProvider | None
) -> bool:
    """Whether compress() may estimate the middle it is about to replace: the Hermes
    profile with the deterministic fallback (a provider's summary may be any size, so
    whether the result is smaller could turn on the middle), an exact counter, and no
    ``exact_counts``."""
    return (
        not opts.exact_counts
        and provider is None
        and opts.profile is Profile.HERMES
        and counter.kind is CountKind.EXACT
    )


def _plan_decisive(
    transcript: Transcript,
    opts: CompactionOptions,
    counter: TokenCounter,
    index: BoundaryIndex,
    state: CompactionState,
) -> DecisivePlan:
    from tinyjuice.decisive import plan_counting_what_decides

    return plan_counting_what_decides(transcript, opts, counter, index=index, state=state)


def _zone_kinds(
    transcript: Transcript, decisive: DecisivePlan, counter: TokenCounter
) -> dict[str, str]:
    """``decisive.kinds``, with a zone holding an image an estimate (see counted_kind)."""
    kinds = decisive.kinds(counter)
    plan, msgs = decisive.plan, transcript.messages
    for zone, span in (("head", msgs[: plan.start]), ("tail", msgs[plan.end :])):
        kinds[zone] = counted_kind(span, CountKind(kinds[zone])).value
    return kinds


def _estimate_bounds(run: _Run) -> tuple[int, int]:
    """The least and most the prompt's counted total can be, exactly counted."""
    from tinyjuice.decisive import slack_bounds

    return slack_bounds(run.tokens.total - run.estimated, run.estimated)


def _threshold_decided(run: _Run) -> bool:
    """Whether the threshold check comes out the same whatever the estimated middle's
    exact size (a measured prompt, or a forced or manual run, does not read it)."""
    opts = run.options
    if run.prompt.kind is CountKind.MEASURED or opts.force or opts.manual:
        return True
    low, high = _estimate_bounds(run)
    threshold = run.plan.budget.threshold_tokens
    return low >= threshold or high < threshold


def _counted_exactly(run: _Run, index: BoundaryIndex) -> _Run:
    """``run`` started again with every message counted exactly (a decision turned on
    the estimated middle). Only the start of a run: the state and options it holds."""
    t, opts = run.transcript, run.options
    tokens = count_transcript(t, run.counter)
    plan = plan_boundary(t, opts, tokens, index=index, state=run.state, counter=run.counter)
    exact = _Run(t, opts, tokens, run.counter, plan, _prompt_tokens(t, tokens), run.state)
    exact.own_index, exact.index = run.own_index, index
    exact.redact_many, exact.redact_text = run.redact_many, run.redact_text
    exact.analysis = run.analysis
    return exact


#: Estimates for the messages of an estimated middle (tinyjuice.decisive's counter).
_ROUGH = RoughCounter()


def _rough_cost(m: Message) -> int:
    return message_tokens(m, _ROUGH)


def _budget_clamped(window: int, middle_tokens: int) -> bool:
    from tinyjuice.decisive import budget_clamped

    return budget_clamped(window, middle_tokens)


@dataclass(slots=True)
class _Work:
    """The messages handed from step to step, and what the steps did on the way.

    Until a step joins it with the head and the tail into ``messages``, ``middle`` is the
    span being compacted (``middle_tokens`` its total); every later step works on
    ``messages``. Each step records what it saved in ``steps``.
    """

    head: list[Message]
    middle: list[Message]
    tail: list[Message]
    middle_tokens: int
    #: The transcript's own token counts, by message id: only new messages are counted.
    old_tokens: dict[int, int]
    counter: TokenCounter
    messages: list[Message] = field(default_factory=list)
    steps: list[StepSaving] = field(default_factory=list)
    redactions: int = 0
    redacted_ids: set[int] = field(default_factory=set)
    #: The middle without its source fields (redacting, the Hermes profile: see
    #: _step_redact), each counted as its original; empty: the transcript's own messages.
    bare: list[Message] = field(default_factory=list)
    #: The middle as it was before the prune (the fallback reads error lines from it).
    unpruned: list[Message] = field(default_factory=list)
    digests: tuple[DigestRecord, ...] = ()
    #: How ``middle_tokens`` was counted after the prune (StepSaving.kind).
    middle_kind: str = CountKind.EXACT.value
    rules_applied: Mapping[str, int] = field(default_factory=dict)
    compacted_middle: list[Message] = field(default_factory=list)
    summary: _SummaryInfo = _NO_SUMMARY
    summary_message: Message | None = None
    appendix: str | None = None
    sanitizer: dict[str, int] = field(default_factory=dict)
    media_replaced: int = 0
    #: Counts of messages this pipeline wrote, remembered across runs (see analysis).
    analysis: TranscriptAnalysis | None = None

    def cost(self, m: Message) -> int:
        n = self.old_tokens.get(id(m))
        if n is not None:
            return n
        if self.analysis is not None:
            return self.analysis.message_tokens(m, self.counter)
        return message_tokens(m, self.counter)

    def costs(self, ms: Sequence[Message]) -> list[int]:
        """``[self.cost(m) for m in ms]``, in one loop through the analysis."""
        if self.analysis is None:
            return [self.cost(m) for m in ms]
        return self.analysis.tokens_of(ms, self.counter, self.old_tokens)


#: A pipeline step: reads and replaces the work's messages, records what it saved, and
#: returns a result only to stop the run with the messages unchanged (a failed summary).
_Step = Callable[[_Run, _Work, SummaryProvider | None, float], CompactionResult | None]


def _step_rules(
    run: _Run, w: _Work, provider: SummaryProvider | None, now: float
) -> CompactionResult | None:
    """The rules profile: each rule rewrites the middle in place (no summary)."""
    opts, plan = run.options, run.plan
    cfg = RulesConfig.from_mapping(opts.rules) if opts.rules else RulesConfig()
    # Rule 5: user messages are never touched; everything else in the middle is
    # redacted before the rules read it (so no clip can cut a key in half), and the
    # generated text once more after.
    res = apply_rules(run.transcript.messages, plan.start, plan.end, cfg, redact=opts.redact)
    w.rules_applied = res.applied
    w.redactions = res.redacted
    new_middle = list(res.messages[plan.start : len(res.messages) - len(w.tail)])
    if opts.redact:
        fixed = []
        for m in new_middle:
            if m.meta.generated_by and m.role is not Role.USER:
                r = redact_message(m)
                w.redactions += r != m
                m = r
            fixed.append(m)
        new_middle = fixed
    w.steps.append(
        StepSaving(
            "rules",
            plan.middle_tokens - sum(w.cost(m) for m in new_middle),
            ", ".join(f"{k} ×{v}" for k, v in sorted(w.rules_applied.items())) or "no rule fired",
            _step_kind(run, run.transcript.messages[plan.start : plan.end]),
        )
    )
    w.messages = [*w.head, *new_middle, *w.tail]
    w.compacted_middle = new_middle
    return None


def _step_redact(
    run: _Run, w: _Work, provider: SummaryProvider | None, now: float
) -> CompactionResult | None:
    """Redact what a digest can carry verbatim (the rest after the prune, if it survives).

    The middle is summarised away, so no writer writes its messages: their source
    records are dropped, not scanned, and what leaves through the result (the summary,
    ``compacted_middle``) is their redacted text (docs/compaction.md, "What redaction
    covers")."""
    if run.options.redact:
        w.bare = (
            without_source_fields(w.middle)
            if run.analysis is None
            else run.analysis.without_source_fields(w.middle)
        )
        w.middle, w.redactions, w.redacted_ids = _redact_before_digest(
            w.bare, run.options, run.redact_many
        )
    return None


def _step_prune(
    run: _Run, w: _Work, provider: SummaryProvider | None, now: float
) -> CompactionResult | None:
    """Digest or de-duplicate large tool outputs of the middle."""
    opts, plan, msgs = run.options, run.plan, run.transcript.messages
    start, end = plan.start, plan.end
    # Digest over the whole list (only the middle is kept): indices are the
    # transcript's own, and a duplicate points at the newest copy even in the tail.
    dres = digest_tool_results(
        [*w.head, *w.middle, *w.tail],
        protect_from=end,
        min_chars=opts.digest_min_chars,
        dedup=opts.dedup,
        shrink_args_over=opts.shrink_args_over,
        shrink_args_to=opts.shrink_args_to,
        memo=None if run.analysis is None else run.analysis.digests,
        outcomes=None if run.analysis is None else run.analysis.digest_outcomes,
    )
    w.digests = tuple(r for r in dres.records if start <= r.index < end)
    pruned = list(dres.messages[start:end])
    if opts.redact:
        # Everything that leaves the pipeline is redacted: digest lines, and any
        # large output that was not digested after all.
        # The positions whose message is not in redacted_ids, found at C speed.
        done = map(w.redacted_ids.__contains__, map(id, pruned))
        todo = list(itertools.compress(range(len(pruned)), map(operator.not_, done)))
        if run.analysis is not None:
            cleaned, n = run.analysis.redact_derived(
                [msgs[start + i] for i in todo], [pruned[i] for i in todo]
            )
        else:
            cleaned, n = run.redact_many([pruned[i] for i in todo])
        w.redactions += n
        for i, r in zip(todo, cleaned, strict=True):
            pruned[i] = r
    pruned_tokens, estimated = _pruned_tokens(run, w, pruned)
    w.middle_kind = CountKind.ESTIMATED.value if estimated else _step_kind(run, msgs[start:end])
    w.steps.append(
        StepSaving(
            "prune",
            plan.middle_tokens - pruned_tokens,
            f"{len(w.digests)} tool outputs digested or de-duplicated",
            w.middle_kind,
        )
    )
    w.unpruned, w.middle, w.middle_tokens = w.middle, pruned, pruned_tokens
    w.compacted_middle = pruned
    return None


def _pruned_tokens(run: _Run, w: _Work, pruned: Sequence[Message]) -> tuple[int, bool]:
    """The middle's total after the prune, and whether it is an estimate: the replaced
    messages are estimated like the middle when it is, and also when no count of theirs
    within :data:`~tinyjuice.decisive.ESTIMATE_SLACK` of the estimate could change the
    summary budget (the only decision that reads the total, see _summarise), unless
    ``exact_counts``. Else they are counted exactly."""
    plan, msgs = run.plan, run.transcript.messages
    start, end = plan.start, plan.end
    replaced = list(
        itertools.compress(
            range(len(pruned)), map(operator.is_not, pruned, w.bare or msgs[start:end])
        )
    )
    per_message = run.tokens.per_message
    kept = plan.middle_tokens - sum(per_message[start + i] for i in replaced)
    if run.estimated:
        return kept + sum(_rough_cost(pruned[i]) for i in replaced), True
    if replaced and not run.options.exact_counts and run.counter.kind is CountKind.EXACT:
        rough = sum(_rough_cost(pruned[i]) for i in replaced)
        if _budget_decided(run.plan.context_window, kept, rough):
            return kept + rough, True
    return kept + sum(w.costs([pruned[i] for i in replaced])), False


def _budget_decided(window: int, exact: int, estimated: int) -> bool:
    """Whether the summary budget of a middle of ``exact`` tokens plus ``estimated``
    estimated ones is the same whatever their exact count (within ESTIMATE_SLACK of the
    estimate): the budget only grows with the middle, so its two ends decide."""
    from tinyjuice.decisive import slack_bounds

    least, most = slack_bounds(exact, estimated)
    return summary_token_budget(window, least) == summary_token_budget(window, most)


def _step_kind(run: _Run, messages: Sequence[Message]) -> str:
    """How a step's figure over ``messages`` was counted: as the counts it reads (the
    transcript's, then the counter's for messages a step wrote), estimated when either
    is, and when one of ``messages`` holds an image (a flat estimate, see counted_kind)."""
    kind = run.tokens.kind if run.counter.kind is CountKind.EXACT else run.counter.kind
    return counted_kind(messages, kind).value


def _step_summary(
    run: _Run, w: _Work, provider: SummaryProvider | None, now: float
) -> CompactionResult | None:
    """Replace the middle with one handoff summary message."""
    made = _summarise(run, w.middle, w.unpruned, w.middle_tokens, provider, now)
    if isinstance(made, CompactionResult):
        return made
    text, info, w.appendix = made
    msg = render_summary_message(
        text, kind=info.kind, role=Role.USER, lineage_id=run.options.lineage_id
    )
    summary_tokens = message_tokens(msg, run.counter)
    w.summary = replace(info, tokens=summary_tokens)
    w.summary_message = msg
    w.steps.append(
        StepSaving(
            "summary",
            w.middle_tokens - summary_tokens,
            f"{len(w.middle)} messages → one {info.kind.value} summary",
            w.middle_kind,
        )
    )
    w.messages = rejoin(w.head, [msg], w.tail)
    return None


def _step_sanitize(
    run: _Run, w: _Work, provider: SummaryProvider | None, now: float
) -> CompactionResult | None:
    """Fix orphan tool calls and results left at the seams."""
    unsanitized = w.messages
    before = sum(w.cost(m) for m in unsanitized)
    # The final tool group may still be waiting for its results (the call in flight):
    # it is part of the verbatim tail and must survive.
    san = sanitize_tool_pairs(
        unsanitized, orphan_calls=run.options.orphan_calls, keep_in_flight=True
    )
    w.messages = list(san.messages)
    after = sum(w.cost(m) for m in w.messages)
    if san.removed_results or san.stripped_calls or san.bridged_calls:
        w.steps.append(
            StepSaving(
                "sanitize",
                before - after,
                "orphan tool pairs fixed",
                _step_kind(run, unsanitized),
            )
        )
    w.sanitizer = {
        "removed_results": san.removed_results,
        "stripped_calls": san.stripped_calls,
        "bridged_calls": san.bridged_calls,
        "dropped_messages": san.dropped_messages,
    }
    return None


def _step_media(
    run: _Run, w: _Work, provider: SummaryProvider | None, now: float
) -> CompactionResult | None:
    """Replace older images before the tail with a short note."""
    if not run.options.reduce_media:
        return None
    combined = w.messages
    tail_ids = {id(m) for m in w.tail}
    first_tail = next((i for i, m in enumerate(combined) if id(m) in tail_ids), len(combined))
    reduced, _ = FlatMediaReducer().replace_historical_media(combined)
    if run.options.profile is Profile.RULES:
        # Rule 5: user messages are never touched, not even their old images.
        reduced = [c if c.role is Role.USER else r for r, c in zip(reduced, combined, strict=True)]
    merged = [*reduced[:first_tail], *combined[first_tail:]]
    w.media_replaced = sum(1 for a, b in zip(merged, combined, strict=True) if a is not b)
    if w.media_replaced:
        saved = sum(w.cost(m) for m in combined) - sum(w.cost(m) for m in merged)
        w.steps.append(
            StepSaving(
                "media",
                saved,
                f"{w.media_replaced} messages' older images replaced",
                _step_kind(run, combined),
            )
        )
    w.messages = merged
    return None


#: The two profiles as step lists, run in order.
_PROFILE_STEPS: dict[Profile, tuple[_Step, ...]] = {
    Profile.RULES: (_step_rules, _step_sanitize, _step_media),
    Profile.HERMES: (_step_redact, _step_prune, _step_summary, _step_sanitize, _step_media),
}


def _compress(run: _Run, provider: SummaryProvider | None, now: float) -> CompactionResult:
    msgs, plan = run.transcript.messages, run.plan
    w = _Work(
        head=list(msgs[: plan.start]),
        middle=list(msgs[plan.start : plan.end]),
        tail=list(msgs[plan.end :]),
        middle_tokens=plan.middle_tokens,
        old_tokens=(
            run.analysis.tokens_by_id(msgs, run.tokens.per_message)
            if run.analysis is not None
            else {id(m): n for m, n in zip(msgs, run.tokens.per_message, strict=True)}
        ),
        counter=run.counter,
        analysis=run.analysis,
    )
    for step in _PROFILE_STEPS[run.options.profile]:
        stopped = step(run, w, provider, now)
        if stopped is not None:
            return stopped
    if run.estimated and run.index is not None:
        after = run.tokens.system_prompt + run.tokens.tools + sum(w.cost(m) for m in w.messages)
        if after >= _estimate_bounds(run)[0] * (1 - LOW_SAVINGS_RATIO):
            # Whether the result is smaller, or saved the share the low-savings back-off
            # reads in the state, turns on the estimated middle: run again, counted
            # exactly (no provider was asked, see _may_estimate).
            return _compress(_counted_exactly(run, run.index), provider, now)
    return _finish(run, w)


def _finish(run: _Run, w: _Work) -> CompactionResult:
    """Account for the steps' result: unchanged when it is not smaller, else the result."""
    per_new = [w.cost(m) for m in w.messages]
    after_tokens = run.tokens.system_prompt + run.tokens.tools + sum(per_new)
    if after_tokens >= run.tokens.total:
        # Never replace history with something as big or bigger (a tiny middle under a
        # long summary): compressing again must be a no-op or strictly smaller.
        _strike_if_automatic(run)
        return _unchanged(
            run,
            Status.NOOP,
            f"compaction would not reduce the prompt ({run.tokens.total:,} → "
            f"{after_tokens:,} tokens); nothing was changed",
        )
    if after_tokens >= run.plan.budget.threshold_tokens:
        static = run.tokens.system_prompt + run.tokens.tools
        run.warnings.append(
            f"still over the threshold after compaction ({after_tokens:,} >= "
            f"{run.plan.budget.threshold_tokens:,} tokens; failed to fit): the system prompt "
            f"and tool schemas alone take {static:,}"
        )
    msgs = run.transcript.messages
    combined = w.messages
    first_change = next(
        (i for i, m in enumerate(combined) if i >= len(msgs) or m is not msgs[i]), len(combined)
    )
    cold = sum(
        n
        for m, n in zip(combined[first_change:], per_new[first_change:], strict=True)
        if id(m) in w.old_tokens
    )
    return _compacted(run, w, after_tokens, cold)


def _compacted(run: _Run, w: _Work, after_tokens: int, cold: int) -> CompactionResult:
    """The result of a compaction that went through: transcript, state and report."""
    t, opts, plan, combined = run.transcript, run.options, run.plan, w.messages
    summary_msg = w.summary_message
    summary_at = plan.start
    if summary_msg is not None:
        # rejoin may re-role the summary (to avoid a same-role seam): find it by its tag,
        # and report the message that is actually in the transcript.
        summary_at = next(
            (
                i
                for i in range(plan.start, len(combined))
                if combined[i].meta.generated_by == "summary"
            ),
            plan.start,
        )
        summary_msg = combined[summary_at]
    event = CompactionEvent(
        message_index=summary_at,
        trigger=Trigger.MANUAL if opts.manual or opts.force else Trigger.AUTO,
        pre_tokens=run.tokens.total,
        post_tokens=after_tokens,
        summary_index=summary_at if summary_msg is not None else None,
        extra={
            "generated_by": "tinyjuice",
            "profile": opts.profile.value,
            # pre_tokens counts the replaced middle with an estimate (tinyjuice.decisive)
            **({"pre_tokens_kind": CountKind.ESTIMATED.value} if run.estimated else {}),
        },
        # In place: the head before the summary is still sent (see tinyjuice.model).
        resets_context=False,
    )
    new_transcript = replace(
        t, messages=tuple(combined), compactions=_remap_events(t, combined, event), usage=()
    )
    report = _report(
        run,
        Status.COMPACTED,
        f"compressed messages {plan.start}–{plan.end - 1} ({plan.middle_messages} messages)",
        summary=w.summary,
        changes=_changes(run, w, new_transcript, after_tokens, cold, summary_msg),
        recoverable="the original is unchanged in memory; archive it before replacing the source",
    )
    return CompactionResult(
        transcript=new_transcript,
        report=report,
        state=_state_after(run, w, after_tokens, summary_msg),
        compacted_middle=tuple(w.compacted_middle),
        summary_message=summary_msg,
        appendix=w.appendix,
    )


def _state_after(
    run: _Run, w: _Work, after_tokens: int, summary_msg: Message | None
) -> CompactionState:
    new_state = record_compaction(
        run.state,
        tokens_before=run.tokens.total,
        tokens_after=after_tokens,
        threshold=run.plan.budget.threshold_tokens,
        summary_kind=w.summary.kind,
        lineage_id=run.options.lineage_id,
        summary=summary_msg.text if summary_msg is not None else None,
    )
    if w.summary.failure_class and run.state.cooldown_until is not None:
        # The provider failed and the fallback stood in: the compaction succeeded, but
        # the provider's cooldown must still hold for the next attempt.
        new_state = replace(
            new_state,
            cooldown_until=run.state.cooldown_until,
            cooldown_reason=run.state.cooldown_reason,
        )
    return new_state


def _changes(
    run: _Run,
    w: _Work,
    new_transcript: Transcript,
    after_tokens: int,
    cold: int,
    summary_msg: Message | None,
) -> _Changes:
    opts = run.options
    preview = None
    if opts.include_preview:
        preview = {
            "summary": summary_msg.text if summary_msg is not None else None,
            "digests": [{"index": d.index, "tool": d.tool_name, "kind": d.kind} for d in w.digests],
        }
    return _Changes(
        after_messages=len(w.messages),
        after_tokens=after_tokens,
        steps=tuple(w.steps),
        digests=tuple(
            {
                "index": d.index,
                "call_id": d.call_id,
                "tool": d.tool_name,
                "kind": d.kind,
                "chars_before": d.chars_before,
                "chars_after": d.chars_after,
            }
            for d in w.digests
        ),
        rules_applied=dict(w.rules_applied),
        redactions=w.redactions,
        media_replaced=w.media_replaced,
        sanitizer=w.sanitizer,
        cache_cold_tokens=cold,
        cache_hints=tuple(
            {
                "provider": h.provider,
                "message_index": h.message_index,
                "ttl": str(h.ttl),
                "placement": str(h.placement),
            }
            for h in cache_hints(new_transcript).hints
        ),
        persistence=(
            PersistenceRecommendation.CHILD_CONTINUATION
            if opts.prefer_child_continuation
            else PersistenceRecommendation.IN_PLACE_ARCHIVE
        ),
        preview=preview,
        compaction_count=run.plan.compaction_count + 1,
    )
