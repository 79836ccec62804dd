"""A TranscriptAnalysis reused across compress() calls gives the same results, faster."""

from __future__ import annotations

from pathlib import Path

from tinyjuice.analysis import TranscriptAnalysis
from tinyjuice.formats import load
from tinyjuice.pipeline import compress
from tinyjuice.report import CompactionOptions, Profile
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
    # A boundary already seen: every original message's redaction comes from memory;
    # only the digests this run wrote (new messages) are scanned.
    again = compress(t, runs[0], counter=counter, tokens=tokens, analysis=analysis)
    assert analysis.redacted_fresh - scanned <= again.report.to_dict()["digests"]["count"]


def test_redaction_is_remembered_by_identity_not_id() -> None:
    t = load(DEMO)
    analysis = TranscriptAnalysis()
    first, _ = analysis.redact_messages(list(t.messages))
    copies = [m.__class__(**{f: getattr(m, f) for f in m.__dataclass_fields__}) for m in t.messages]
    again, _ = analysis.redact_messages(copies)
    assert again == first
    assert analysis.redacted_fresh == 2 * len(t.messages)
