"""The failure policy after a summary provider failed (:func:`failure_outcome`).

Auth and network failures abort and preserve every message; nothing is dropped without a
summary unless the caller both enabled the fallback and accepted lossy compaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from tinyjuice.summary.contract import FailureClass


@dataclass(frozen=True, slots=True)
class FailureOutcome:
    """What to do after a summary failure. Exactly one of ``retry_with_main_model``,
    ``drop_allowed`` and ``abort_preserve`` is true.

    - ``retry_with_main_model``: try once more with the main model, then ask again with
      ``retried=True``.
    - ``drop_allowed``: replace the middle with the deterministic fallback summary.
    - ``abort_preserve``: stop; return every original message unchanged.

    ``use_fallback`` says a fallback summary may be built (for a preview, or to insert when
    ``drop_allowed``); ``cooldown_seconds`` is how long automatic compaction should wait.
    """

    failure_class: FailureClass
    abort_preserve: bool
    retry_with_main_model: bool
    cooldown_seconds: int
    use_fallback: bool
    drop_allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class _Rule:
    cooldown: int
    retry_main: bool
    fallback_ok: bool
    what: str


_RULES: dict[FailureClass, _Rule] = {
    FailureClass.NO_PROVIDER: _Rule(600, False, True, "no summary provider is configured"),
    FailureClass.AUTH: _Rule(
        600, False, False, "the summary provider rejected the credentials (auth/permission)"
    ),
    FailureClass.NETWORK: _Rule(60, False, False, "the summary provider could not be reached"),
    FailureClass.MODEL_NOT_FOUND: _Rule(60, True, True, "the summary model was not found"),
    FailureClass.TIMEOUT: _Rule(30, True, True, "the summary request timed out"),
    FailureClass.RATE_LIMIT: _Rule(60, False, True, "the summary provider is rate limiting"),
    FailureClass.SERVER: _Rule(30, False, True, "the summary provider had a server error"),
    FailureClass.MALFORMED: _Rule(30, True, True, "the summary response was malformed"),
    FailureClass.STREAM_CLOSED: _Rule(30, True, True, "the summary stream closed early"),
    FailureClass.EMPTY: _Rule(30, True, True, "the summary came back empty"),
    FailureClass.TRUNCATED: _Rule(30, True, True, "the summary came back truncated"),
    FailureClass.OTHER: _Rule(30, False, True, "the summary failed"),
}


def failure_outcome(
    failure_class: FailureClass,
    *,
    abort_on_summary_failure: bool = False,
    fallback_enabled: bool = True,
    accept_lossy: bool = False,
    retried: bool = False,
) -> FailureOutcome:
    """The policy decision for one summary failure (Hermes defaults, POLICIES.md).

    - AUTH and NETWORK: abort and preserve every message; no fallback, whatever the flags
      (auth waits 600 s because it needs the user; network 60 s).
    - NO_PROVIDER: 600 s cooldown; the deterministic fallback may be used.
    - MODEL_NOT_FOUND, TIMEOUT, MALFORMED, STREAM_CLOSED, EMPTY, TRUNCATED: retry once with
      the main model (``retried=False``); after that a 30–60 s cooldown and the fallback.
      An empty or truncated summary is never inserted.
    - RATE_LIMIT, SERVER, OTHER: a transient cooldown and the fallback.

    The middle is only dropped (replaced by the fallback) when ``fallback_enabled`` and
    ``accept_lossy`` are both true and ``abort_on_summary_failure`` is false; otherwise the
    outcome aborts and preserves the original messages.
    """
    cls = FailureClass(failure_class)
    rule = _RULES[cls]
    if rule.retry_main and not retried:
        return FailureOutcome(
            failure_class=cls,
            abort_preserve=False,
            retry_with_main_model=True,
            cooldown_seconds=0,
            use_fallback=False,
            drop_allowed=False,
            reason=f"{rule.what}; retrying once with the main model",
        )
    use_fallback = rule.fallback_ok and fallback_enabled and not abort_on_summary_failure
    drop = use_fallback and accept_lossy
    if drop:
        reason = f"{rule.what}; inserting the deterministic fallback summary (lossy)"
    elif not rule.fallback_ok:
        reason = f"{rule.what}; compaction aborted, all messages preserved"
    elif abort_on_summary_failure:
        reason = f"{rule.what}; abort_on_summary_failure is set, all messages preserved"
    elif not fallback_enabled:
        reason = f"{rule.what}; the fallback summary is disabled, all messages preserved"
    else:
        reason = (
            f"{rule.what}; lossy fallback not accepted, all messages preserved "
            "(a fallback summary can be previewed)"
        )
    return FailureOutcome(
        failure_class=cls,
        abort_preserve=not drop,
        retry_with_main_model=False,
        cooldown_seconds=rule.cooldown,
        use_fallback=use_fallback,
        drop_allowed=drop,
        reason=reason,
    )
