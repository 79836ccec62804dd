"""The handoff summary inside ``compress``: marking, redaction, iterative updates,
the fallback.

Which acceptance line each test covers: docs/acceptance.md.
"""

from __future__ import annotations

from builders import (
    Conv,
    FakeProvider,
    fake_secrets,
)
from pipeline_helpers import (
    SMALL,
    assert_no_secrets,
    assert_unchanged,
    more_steps,
    run,
    secret_session,
    session,
    summary_of,
)

from tinyjuice.options import CompactionOptions, CompactionState
from tinyjuice.report import Status
from tinyjuice.summary import (
    END_MARKER,
    HANDOFF_PREFIX,
    strip_tinyjuice_metadata,
)

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
    t2, _ = more_steps(r1.transcript, 100, 6)
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
    t2, _ = more_steps(r1.transcript, 100, 6)
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
    c, s = secret_session()
    r = run(c.transcript(context_window=SMALL), CompactionOptions(protect_first_n=0, force=True))
    assert r.report.summary_kind.value == "fallback"
    assert_no_secrets(summary_of(r).text, s)


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
