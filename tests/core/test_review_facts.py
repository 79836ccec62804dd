"""Issue #19: a review a reader can trust — facts weighted by use, probes, rules
survival and the judge, on a real-shaped Claude Code ``/compact``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from cc_compact import CLAUDE_MD_RULE, LISTED_ONLY, SUMMARY, session_rows, write_session
from test_providers import (  # noqa: F401  (fixtures)
    _no_proxies,
    anthropic,
    anthropic_ok,
    openai,
    openai_ok,
    reply,
    server,
)

from tinyjuice.facts import (
    extract_facts,
    file_actions,
    norm_error,
    norm_path,
    tool_error_lines,
)
from tinyjuice.formats import load
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall
from tinyjuice.probes import ProbeKind, answer_from_summary, judge_probes, make_probes
from tinyjuice.review import review_past_compactions, review_summary
from tinyjuice.survival import check_rules, find_rules
from tinyjuice.tokens import RoughCounter


def _review(tmp_path: Path, summary: str = SUMMARY, **kw: object):  # type: ignore[no-untyped-def]
    t = load(write_session(tmp_path / "s.jsonl", summary, **kw))
    (r,) = review_past_compactions(t, counter=RoughCounter())
    return t, r


# ------------------------------------------------------------- the case of the issue


def test_the_issue_case_has_no_false_missing(tmp_path: Path) -> None:
    t, r = _review(tmp_path)
    assert t.messages[r.index].meta.is_summary and t.compactions[0].trigger.value == "manual"
    review = r.review
    texts = {i.text for i in review.items}
    # The ls -la listing and /bin/bash are background, reported apart, never missing.
    background = {text for text, _ in review.background}
    # ("Makefile" has no extension: not read as a path at all.)
    assert set(LISTED_ONLY) - {"Makefile"} <= background and "/bin/bash" in background
    assert not (set(LISTED_ONLY) | {"/bin/bash"}) & texts
    # "Exit code 127" is kept by "(exit code 127)": case does not matter.
    errors = {i.text: i.found for i in review.items if i.category.value == "errors"}
    assert errors["Exit code 127"] is True and errors["Exit code 1"] is True
    assert all(errors.values()), errors
    # The assistant's prose about an error is not an error.
    assert not any("As expected" in e for e in errors)
    assert review.recall["errors"] == 1.0 and review.recall["paths"] == 1.0
    # Only the missing exact command is fair (and a tool name).
    assert {i.text for i in review.missing.get("commands", ())} == {"ls -la"}
    assert review.weighted is not None and review.weighted > 0.9
    data = review.to_dict()
    assert {"recall", "overall", "found", "total", "missing", "checks"} <= set(data)
    assert data["background"][0]["index"] == 4


def test_matching_normalises_case_quotes_paths_spacing_numbers() -> None:
    mid = [
        Message(Role.USER, (TextPart("Fix ./src/App.py please"),)),
        Message(
            Role.ASSISTANT,
            (),
            tool_calls=(
                ToolCall("c1", "Bash", orjson.dumps({"command": "grep -n 'x'  a.py"}).decode()),
            ),
        ),
        Message(
            Role.TOOL,
            (TextPart("Exit code 2\nzsh: PERMISSION DENIED: ./run.sh (1,284 bytes)"),),
            tool_call_id="c1",
            tool_name="Bash",
            meta=MessageMeta(is_error=True),
        ),
    ]
    summary = 'Edited SRC/app.py; ran `grep -n "x" a.py`: EXIT CODE 2, Permission denied: ./run.sh (1284 bytes)'
    review = review_summary(mid, summary, counter=RoughCounter())
    found = {i.text: i.found for i in review.items}
    assert found["./src/App.py"] is True
    assert found["grep -n 'x' a.py"] is True
    assert found["Exit code 2"] is True
    assert found["zsh: PERMISSION DENIED: ./run.sh (1,284 bytes)"] is True
    assert norm_error("/bin/bash: line 1: python: command not found") == "python: command not found"
    assert norm_path("./src/App.py") == norm_path("src/app.py") == "src/app.py"


# ----------------------------------------------------------------------------- facts


def _calls(*specs: tuple[str, dict[str, object]]) -> list[Message]:
    calls = tuple(
        ToolCall(f"c{k}", name, orjson.dumps(args).decode()) for k, (name, args) in enumerate(specs)
    )
    return [Message(Role.ASSISTANT, (), tool_calls=calls)]


def test_file_actions_from_tools_and_shell_commands() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** Update File: src/old.py\n"
        "@@\n-a\n+b\n*** Delete File: src/gone.py\n*** End Patch"
    )
    mid = _calls(
        ("Read", {"file_path": "/w/p/README.md"}),
        ("Write", {"file_path": "/w/p/notes.txt", "content": "x"}),
        ("MultiEdit", {"file_path": "/w/p/app.py", "edits": []}),
        ("str_replace_based_edit_tool", {"command": "view", "path": "/w/p/cfg.toml"}),
        ("str_replace_based_edit_tool", {"command": "str_replace", "path": "/w/p/cfg.toml"}),
        ("apply_patch", {"input": patch}),
        ("Bash", {"command": "cat setup.cfg && sed -i 's/a/b/' conf/x.ini"}),
        ("Bash", {"command": "python3 tools/gen.py > out/gen.json; rm -f old.log"}),
        ("shell", {"command": ["bash", "-lc", "echo hi >> logs/run.log"]}),
    )
    got = {a.path: a.actions for a in file_actions(mid)}
    assert got == {
        "/w/p/README.md": ("read",),
        "/w/p/notes.txt": ("created",),
        "/w/p/app.py": ("edited",),
        "/w/p/cfg.toml": ("read", "edited"),
        "src/new.py": ("created",),
        "src/old.py": ("edited",),
        "src/gone.py": ("deleted",),
        "setup.cfg": ("read",),
        "conf/x.ini": ("edited",),
        "out/gen.json": ("created",),
        "tools/gen.py": ("ran",),
        "old.log": ("deleted",),
        "logs/run.log": ("edited",),
    }


def test_extract_facts_of_the_issue_case(tmp_path: Path) -> None:
    t = load(write_session(tmp_path / "s.jsonl"))
    assert len(session_rows()) > len(t.messages)  # (streamed blocks merge into turns)
    facts = extract_facts(t.messages[:20])
    trail = {a.path: a.actions for a in facts.artifacts}
    assert trail == {
        "scripts/tide_report.py": ("read", "edited", "ran"),
        "/home/rin/work/tidepool/data/tides_2024.csv": ("read",),
        "out/report.txt": ("created",),
    }
    assert [e.text for e in facts.tool_errors][:2] == [
        "Exit code 127",
        "/bin/bash: line 1: python: command not found",
    ]
    assert [c.text for c in facts.constraints] == ["Don't add new dependencies."]
    assert any("python3 instead" in d.text for d in facts.decisions)


# ---------------------------------------------------------------------------- probes

BAD_SUMMARY = "The user wanted a report. Some work happened."


def test_probes_of_each_kind_with_their_evidence(tmp_path: Path) -> None:
    t = load(write_session(tmp_path / "s.jsonl"))
    probes = make_probes(t.messages[:20])
    kinds = {p.kind for p in probes}
    assert kinds == set(ProbeKind)
    recall = [p for p in probes if p.kind is ProbeKind.RECALL]
    assert [p.evidence for p in recall] == [6, 11]
    assert "python scripts/tide_report.py" in recall[0].question
    artifact = {p.expected[0]: p for p in probes if p.kind is ProbeKind.ARTIFACT}
    assert artifact["out/report.txt"].expected == ("out/report.txt", "created")
    assert artifact["out/report.txt"].evidence == 16
    (decision,) = [p for p in probes if p.kind is ProbeKind.DECISION]
    assert decision.evidence == 7 and "python3" in decision.question
    good = answer_from_summary(probes, SUMMARY)
    assert good.scores == {k.value: 1.0 for k in ProbeKind}
    bad = answer_from_summary(probes, BAD_SUMMARY)
    assert bad.overall == 0.0
    assert {p.evidence for p in bad.unanswered} == {p.evidence for p in probes}


def test_artifact_probe_needs_the_action_not_only_the_path() -> None:
    mid = _calls(("Edit", {"file_path": "src/a.py"}))
    (probe,) = make_probes(mid)
    assert answer_from_summary([probe], "- src/a.py (looked at)").overall == 0.0
    assert answer_from_summary([probe], "- src/a.py: modified the parser").overall == 1.0


def test_continuation_probe_follows_the_last_announcement() -> None:
    mid = [
        Message(Role.USER, (TextPart("Speed up the loader."),)),
        Message(Role.ASSISTANT, (TextPart("Profiled it. Next, I'll cache the parsed schema."),)),
    ]
    (probe,) = [p for p in make_probes(mid) if p.kind is ProbeKind.CONTINUATION]
    assert probe.evidence == 1 and "cache" in probe.expected[0]
    assert answer_from_summary([probe], "Next step: cache the parsed schema.").overall == 1.0
    assert answer_from_summary([probe], "Speed up the loader.").overall == 0.0


# ------------------------------------------------------------------------ rules


def test_a_compaction_that_drops_a_claude_md_rule_is_flagged(tmp_path: Path) -> None:
    _, r = _review(tmp_path)
    lost = {c.rule.text: c.rule for c in r.review.rules.lost}
    assert CLAUDE_MD_RULE in lost and lost[CLAUDE_MD_RULE].source == "claude_md"
    assert lost[CLAUDE_MD_RULE].index == 0
    assert r.review.rules.ok is False
    # The user's constraint is kept by the summary.
    user = [c for c in r.review.rules.checks if c.rule.source == "user"]
    assert [c.where for c in user] == ["summary"]


def test_a_compaction_that_keeps_the_rules_is_not_flagged(tmp_path: Path) -> None:
    keeps = SUMMARY + (
        "\n\n10. Project rules (CLAUDE.md):\n   - never commit generated files under "
        "`build/`\n   - Always run make lint before saying a change is done."
    )
    _, r = _review(tmp_path, keeps)
    assert r.review.rules.ok is True and not r.review.rules.lost
    # No rules file in the session: nothing to check, nothing flagged.
    _, none = _review(tmp_path, with_claude_md=False)
    assert all(c.rule.source == "user" for c in none.review.rules.checks)
    assert none.review.rules.ok is True


def test_a_rule_reinjected_after_the_compaction_survived() -> None:
    rules_msg = Message(
        Role.USER,
        (
            TextPart(
                f"<system-reminder>\nContents of /p/CLAUDE.md:\n- {CLAUDE_MD_RULE}\n</system-reminder>"
            ),
        ),
    )
    from dataclasses import replace

    rules_msg = replace(
        rules_msg, meta=MessageMeta(is_injected=True, injected_kind="system_reminder")
    )
    rules = find_rules([rules_msg])
    assert [r.text for r in rules] == [CLAUDE_MD_RULE]
    assert check_rules(rules, "nothing about it").ok is False
    assert check_rules(rules, "nothing about it", kept=[rules_msg]).checks[0].where == "kept"


# ------------------------------------------------------------------------ judge


def _probes(tmp_path: Path):  # type: ignore[no-untyped-def]
    t = load(write_session(tmp_path / "s.jsonl"))
    return make_probes(t.messages[:20])


def test_judge_answers_are_graded_against_the_evidence(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    probes = _probes(tmp_path)
    answers = ["unknown"] * len(probes)
    recall0 = next(k for k, p in enumerate(probes) if p.kind is ProbeKind.RECALL)
    answers[recall0] = "It failed with exit code 127: python: command not found."
    art = next(k for k, p in enumerate(probes) if p.expected[0] == "out/report.txt")
    answers[art] = "out/report.txt was created by the script's output redirect."
    server.push(openai_ok(orjson.dumps(answers).decode()))
    report = judge_probes(probes, SUMMARY, openai(server))
    assert report.judge == "local" and report.judge_error is None
    answered = [p for p in report.probes if p.answered]
    assert {p.evidence for p in answered} == {probes[recall0].evidence, probes[art].evidence}
    assert report.probes[recall0].answer.startswith("It failed")
    sent = server.requests[0].json()
    assert "<summary>" in sent["messages"][1]["content"]
    assert probes[0].question in sent["messages"][1]["content"]


def test_judge_numbered_lines_and_anthropic(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    probes = _probes(tmp_path)
    lines = "\n".join(f"{k + 1}. unknown" for k in range(len(probes)))
    server.push(anthropic_ok(lines))
    report = judge_probes(probes, SUMMARY, anthropic(server))
    assert report.overall == 0.0 and len(report.unanswered) == len(probes)


def test_judge_failure_falls_back_to_the_summary(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    probes = _probes(tmp_path)
    server.push(reply(500, {"error": {"message": "boom"}}))
    report = judge_probes(probes, SUMMARY, openai(server))
    assert report.judge_error is not None and "server" in report.judge_error
    assert report.overall == 1.0  # answered from the summary instead


@pytest.mark.parametrize("summary", [SUMMARY, BAD_SUMMARY])
def test_review_json_keeps_its_keys_and_adds_probes_and_rules(tmp_path: Path, summary: str) -> None:
    _, r = _review(tmp_path, summary)
    data = r.to_dict()
    for key in ("index", "span", "trigger", "recall", "overall", "missing", "checks"):
        assert key in data
    assert set(data["probes"]["scores"]) <= {k.value for k in ProbeKind}
    assert data["rules"]["total"] >= 1
    for p in data["probes"]["unanswered"]:
        assert 0 <= p["evidence"] < r.index


def test_explain_flags_a_compaction_that_lost_a_rule(tmp_path: Path) -> None:
    from tinyjuice.explain import EventFlag, explain

    t = load(write_session(tmp_path / "lost.jsonl"))
    (event,) = explain(t).events
    assert EventFlag.RULES_LOST in event.flags
    assert (CLAUDE_MD_RULE, 0) in event.rules_lost
    assert any("lost 2 rule(s)" in r for r in event.reasons())
    assert event.to_dict()["rules_lost"][0] == {"text": CLAUDE_MD_RULE, "index": 0}
    keeps = (
        SUMMARY
        + f"\n\nRules: {CLAUDE_MD_RULE} Always run make lint before saying a change is done."
    )
    (kept,) = explain(load(write_session(tmp_path / "kept.jsonl", keeps))).events
    assert EventFlag.RULES_LOST not in kept.flags and kept.rules_lost == ()


def test_swe_agent_observations_still_count_injected_context_does_not() -> None:
    from dataclasses import replace

    obs = Message(
        Role.USER, (TextPart("Traceback (most recent call last):\nKeyError: 'x' in src/app.py"),)
    )
    obs = replace(obs, meta=MessageMeta(is_injected=True, injected_kind="observation"))
    ctx = replace(obs, meta=MessageMeta(is_injected=True, injected_kind="environment"))
    texts = {i.text for i in review_summary([obs], "", counter=RoughCounter()).items}
    assert "src/app.py" in texts
    assert "KeyError: 'x' in src/app.py" in texts  # an error the environment returned
    assert review_summary([ctx], "", counter=RoughCounter()).items == ()


def test_judge_sees_and_returns_only_redacted_text(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    secret = "sk-" + "proj-" + "Zq9" * 14
    probes = _probes(tmp_path)
    answers = [f"the key was {secret}"] + ["unknown"] * (len(probes) - 1)
    server.push(openai_ok(orjson.dumps(answers).decode()))
    report = judge_probes(probes, SUMMARY + f"\nOPENAI_API_KEY={secret}", openai(server))
    assert secret not in server.requests[0].body.decode()
    assert secret not in orjson.dumps(report.to_dict()).decode()
    assert "[REDACTED:" in (report.probes[0].answer or "")


def test_quoted_pipes_and_sed_n_are_reads_not_errors() -> None:
    from tinyjuice.facts import _segments, listing_results

    assert _segments("rg -n 'a|b' src/x.py && cat y.py | head -2") == [
        "rg -n 'a|b' src/x.py",
        "cat y.py",
        "head -2",
    ]
    mid = _calls(
        ("Bash", {"command": "rg -n 'class Refund|failed' src/app/refunds.py"}),
        ("Bash", {"command": "sed -n '1,70p' src/app/refunds.py"}),
    )
    mid += [
        Message(Role.TOOL, (TextPart("22: status  # pending | failed"),), tool_call_id="c0"),
        Message(Role.TOOL, (TextPart("raise RefundError('failed')"),), tool_call_id="c1"),
    ]
    assert listing_results(mid) == {1, 2}
    assert {a.path: a.actions for a in file_actions(mid)} == {"src/app/refunds.py": ("read",)}
    assert extract_facts(mid).tool_errors == ()
    review = review_summary(mid, "", counter=RoughCounter())
    assert review.total("errors") == 0


def test_tool_error_lines_put_the_head_first_once_or_always() -> None:
    text = "running step 1\nError: build failed\nValueError: bad tray size\n"
    both = ["Error: build failed", "ValueError: bad tray size"]
    assert tool_error_lines(text, False) == both
    assert tool_error_lines(text, False, head_first=True) == both  # no head unless flagged
    flagged = "Error: build failed\nrunning step 2\nValueError: bad tray size\n"
    assert tool_error_lines(flagged, True) == both  # the head is an error line: kept once
    assert tool_error_lines(flagged, True, head_first=True) == ["Error: build failed", *both]
    assert tool_error_lines("", True) == []
