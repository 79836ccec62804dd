"""Issue #19: the fallback summary and the LLM prompt carry the artifact trail; what a
budget leaves out goes to an appendix archived with the commit, named by id."""

from __future__ import annotations

from pathlib import Path

import orjson

from tinyjuice.facts import file_actions
from tinyjuice.formats import dumps
from tinyjuice.model import Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.pipeline import compress
from tinyjuice.probes import ProbeKind, answer_from_summary, make_probes
from tinyjuice.report import CompactionOptions
from tinyjuice.store import Archive, commit, load_source
from tinyjuice.summary import SummaryRequest, build_summary_prompt, fallback_summary
from tinyjuice.tokens import RoughCounter


def _session(files: int) -> list[Message]:
    out = [Message(Role.USER, (TextPart("Tidy up the handlers."),))]
    for k in range(files):
        name = "Edit" if k % 3 == 0 else "Read"
        args = {"file_path": f"src/handlers/h_{k:03d}.py"}
        out.append(
            Message(
                Role.ASSISTANT,
                (),
                tool_calls=(ToolCall(f"c{k}", name, orjson.dumps(args).decode()),),
            )
        )
        out.append(Message(Role.TOOL, (TextPart("ok"),), tool_call_id=f"c{k}", tool_name=name))
    out.append(Message(Role.ASSISTANT, (TextPart("Done with the handlers."),)))
    return out


def test_fallback_trail_names_every_touched_file_with_its_action() -> None:
    mid = _session(12)
    fb = fallback_summary(mid, budget_tokens=4000, counter=RoughCounter())
    for k in range(12):
        action = "edited" if k % 3 == 0 else "read"
        assert f"- src/handlers/h_{k:03d}.py — {action}" in fb.text
    assert not fb.appendix and fb.appendix_id is None
    probes = [p for p in make_probes(mid) if p.kind is ProbeKind.ARTIFACT]
    assert answer_from_summary(probes, fb.text).overall == 1.0


def test_a_tight_budget_puts_the_rest_of_the_trail_in_the_appendix() -> None:
    mid = _session(120)
    fb = fallback_summary(mid, budget_tokens=600, counter=RoughCounter())
    assert fb.tokens <= 600 and fb.omitted.get("artifacts")
    assert f"appendix sha256:{fb.appendix_id}" in fb.text
    trail = [a.line() for a in file_actions(mid)]
    # Every entry is in the summary or in the appendix: nothing silently lost.
    for line in trail:
        assert f"- {line}\n" in fb.text + "\n" or f"- {line}\n" in fb.appendix, line
    import hashlib

    assert hashlib.sha256(fb.appendix.encode()).hexdigest().startswith(fb.appendix_id)


def test_the_llm_prompt_carries_the_trail() -> None:
    mid = tuple(_session(5))
    prompt = build_summary_prompt(SummaryRequest(messages=mid))[1]["content"]
    assert "Artifact trail" in prompt
    assert "- src/handlers/h_000.py — edited" in prompt
    assert "- src/handlers/h_001.py — read" in prompt


def test_commit_archives_the_appendix_under_the_id_the_summary_names(tmp_path: Path) -> None:
    msgs = [*_session(150), Message(Role.USER, (TextPart("Now the tests."),))]
    path = tmp_path / "s.json"
    path.write_bytes(dumps(Transcript(format="openai", messages=tuple(msgs)), "openai"))
    source = load_source(path)
    result = compress(
        source.transcript,
        CompactionOptions(keep_last=1, force=True, context_window=8_000),
        counter=RoughCounter(),
    )
    assert result.appendix and result.report.summary_appendix
    ident = result.report.summary_appendix
    assert ident in result.summary_message.text  # type: ignore[union-attr]
    assert result.report.to_dict()["summary"]["appendix"] == ident
    commit(result, source)
    archive = Archive()
    assert archive.blob(archive.find_blob(ident)).decode() == result.appendix


def test_our_fallback_keeps_the_rules_of_the_compressed_turns(tmp_path: Path) -> None:
    # A CLAUDE.md re-read in the middle: our own compaction carries its rules, and the
    # review finds none lost (ours is checked like the agent's own).
    from dataclasses import replace as dc_replace

    from tinyjuice.model import MessageMeta
    from tinyjuice.review import review_summary

    rules = Message(
        Role.USER,
        (TextPart("<system-reminder>\nContents of /p/CLAUDE.md:\n- Never push to main.\n"),),
    )
    rules = dc_replace(rules, meta=MessageMeta(is_injected=True, injected_kind="system_reminder"))
    mid = [*_session(3), rules, *_session(3)[1:]]
    fb = fallback_summary(mid, budget_tokens=2000, counter=RoughCounter())
    assert "- [claude_md] Never push to main." in fb.summary.constraints_preferences
    review = review_summary(mid, fb.text, counter=RoughCounter())
    assert review.rules.ok is True
    # Without that section the same check flags it.
    stripped = fb.text.replace("Never push to main.", "")
    assert review_summary(mid, stripped, counter=RoughCounter()).rules.ok is False


def test_no_appendix_when_nothing_archives_it() -> None:
    mid = _session(120)
    fb = fallback_summary(mid, budget_tokens=600, counter=RoughCounter(), appendix=False)
    assert fb.omitted.get("artifacts") and "Left out to fit the budget" in fb.text
    assert fb.appendix == "" and fb.appendix_id is None and "appendix" not in fb.text
