"""`tjui explain FILE [--policy P] [--context-window N] [--json]`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tinyjuice.tokens import CountKind, default_counter
from tjui.commands.explain import explain_cmd

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
MANIFEST = json.loads((SESSIONS / "manifest.json").read_text())["files"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(explain_cmd, list(args))
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str) -> dict:
    code, out, err = run(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_json_claude_code_sample() -> None:
    got = run_json(str(SESSIONS / "claude-code.jsonl"))
    assert got["policy"] == "claude-code"
    assert got["window"] == 200_000
    assert got["threshold_tokens"] == 167_000
    assert got["rule"] == "buffer"
    want = MANIFEST["claude-code.jsonl"]["compactions"]
    assert [(e["index"], e["trigger"], e["pre_tokens"]) for e in got["events"]] == [
        (c["index"], c["trigger"], c["pre_tokens"]) for c in want
    ]
    for e in got["events"]:
        assert e["threshold_tokens"] == 167_000
        assert e["rule"] == "buffer"
        assert isinstance(e["post_tokens"], int) and e["post_tokens"] < e["pre_tokens"]
        # The only flag: the first summary lost the user's "Keep the public method
        # signatures of PaymentsClient." (tinyjuice.survival).
        assert e["flags"] == (["rules_lost"] if e["index"] == want[0]["index"] else [])
    lost = got["events"][0]["rules_lost"]
    assert [r["text"] for r in lost] == ["Keep the public method signatures of PaymentsClient."]
    current = got["current"]
    assert current["would_fire"] is False
    assert current["headroom_tokens"] == 167_000 - current["tokens"]
    assert got["would_fire_at"] == [want[0]["index"]]
    kinds = {p["kind"] for p in got["series"]["points"]}
    assert kinds == {"measured"}


def test_json_policy_and_window_override() -> None:
    got = run_json(
        str(SESSIONS / "codex-rollout.jsonl"),
        "--policy",
        "hermes:raise=false",
        "--context-window",
        "100000",
    )
    assert got["policy"] == "hermes"
    assert got["policy_source"] == "given"
    assert got["window"] == 100_000 and got["window_source"] == "override"
    # 50% of 100K is 50,000, under the 64,000 floor.
    assert got["threshold_tokens"] == 64_000 and got["rule"] == "floor"
    (event,) = got["events"]
    assert event["pre_tokens"] == 67_977
    # The summary kept none of AGENTS.md's rules (Codex re-sends none in the file).
    assert event["flags"] == ["rules_lost"]


def test_json_codex_default_policy_flags_the_early_compaction() -> None:
    got = run_json(str(SESSIONS / "codex-rollout.jsonl"))
    assert got["policy"] == "codex"
    assert got["threshold_tokens"] == 244_800 and got["rule"] == "limit"
    assert got["events"][0]["flags"] == ["far_below_threshold", "rules_lost"]


def test_text_output() -> None:
    code, out, err = run(str(SESSIONS / "claude-code.jsonl"))
    assert code == 0, err
    for needle in ("claude-code", "167,000", "buffer", "Compactions", "auto", "manual", "Now:"):
        assert needle in out
    assert "would have fired at message 43" in out


def test_text_output_without_compactions() -> None:
    code, out, _ = run(str(SESSIONS / "openai-chat.json"), "--policy", "rules")
    assert code == 0
    assert "No compactions recorded" in out
    assert "would not have fired" in out


def test_session_option_selects_the_state_db_session() -> None:
    db = str(SESSIONS / "hermes-state.db")
    newest = run_json(db)
    parent_id = MANIFEST["hermes-state.db"]["sessions"][0]["id"]
    parent = run_json(db, "--session", parent_id)
    assert len(newest["events"]) == 1
    assert parent["events"] == []
    assert parent["series"]["points"] != newest["series"]["points"]


def test_format_and_lenient_options(tmp_path: Path) -> None:
    src = (SESSIONS / "claude-code.jsonl").read_text().splitlines()
    bad = tmp_path / "session.jsonl"
    bad.write_text("\n".join([*src[:5], "{not json", *src[5:]]) + "\n")
    code, _, err = run(str(bad), "--format", "claude-code")
    assert code == 2 and err.startswith("tjui: error: ")
    got = run_json(str(bad), "--format", "claude-code", "--lenient")
    assert got["threshold_tokens"] == 167_000
    assert len(got["events"]) == 2


def test_bad_file_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": "hi"},')
    code, out, err = run(str(bad))
    assert code == 2
    assert out == ""
    assert err.startswith("tjui: error: ") and "bad.json" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_policy_is_one_clear_line() -> None:
    code, out, err = run(str(SESSIONS / "demo.json"), "--policy", "sometimes")
    assert code == 2 and out == ""
    assert "unknown policy 'sometimes'" in err and "claude-code" in err
    assert len(err.strip().splitlines()) == 1


def test_policy_that_does_not_fit_the_window_is_one_clear_line() -> None:
    code, _, err = run(
        str(SESSIONS / "demo.json"),
        "--policy",
        "claude-code:buffer=50k",
        "--context-window",
        "40000",
    )
    assert code == 2
    assert "buffer" in err and "40,000" in err
    assert len(err.strip().splitlines()) == 1


def _now_kind(out: str) -> str:
    match = re.search(r"Now: [\d,]+ tokens \((\w+)\)", out)
    assert match, out
    return match.group(1)


@pytest.mark.skipif(default_counter().kind is not CountKind.EXACT, reason="no tokenizer loads here")
def test_counted_figures_are_exact_with_a_tokenizer() -> None:
    # A Hermes gateway log with no provider usage and no images: every figure is a
    # tokenizer count.
    got = run_json(str(SESSIONS / "hermes-gateway.jsonl"))
    assert got["current"]["kind"] == "exact"
    assert {p["kind"] for p in got["series"]["points"]} == {"exact"}
    assert {e["post_source"] for e in got["events"]} <= {"exact", "recorded", "unknown"}
    code, out, _ = run(str(SESSIONS / "hermes-gateway.jsonl"))
    assert code == 0
    assert _now_kind(out) == "exact"
    assert f"(0 measured, {got['points']:,} exact;" in out
    assert "estimated" not in out


def test_counts_holding_an_image_are_estimated_as_in_the_inspector() -> None:
    # demo.json has two images, counted with a flat estimate: from the first one on,
    # counts are estimates — the label the inspector's header and bar give the total.
    got = run_json(str(SESSIONS / "demo.json"))
    assert got["current"]["kind"] == "estimated"
    kinds = {p["kind"] for p in got["series"]["points"]}
    assert kinds == {"exact", "estimated"}
    code, out, _ = run(str(SESSIONS / "demo.json"))
    assert code == 0 and _now_kind(out) == "estimated"


def test_counted_figures_are_estimated_with_the_rough_counter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TJUI_TOKENIZER", "rough")
    got = run_json(str(SESSIONS / "demo.json"))
    assert got["series"]["counter"] == "rough"
    assert got["current"]["kind"] == "estimated"
    code, out, _ = run(str(SESSIONS / "demo.json"))
    assert code == 0
    assert _now_kind(out) == "estimated"
    assert f"(0 measured, {got['points']:,} estimated;" in out


def test_measured_figures_keep_their_kind_in_text_and_json() -> None:
    path = str(SESSIONS / "claude-code.jsonl")
    got = run_json(path)
    code, out, _ = run(path)
    assert code == 0
    # The last turn was measured and messages came after it: measured + counted.
    assert _now_kind(out) == got["current"]["kind"] == "estimated"
    assert f"({got['measured_points']:,} measured;" in out


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("custom:ratio=5", "ratio must be a fraction in (0, 1]"),
        ("custom:reserve=-5k", "reserve must not be negative, got '-5k'"),
        ("hermes:floor=-1", "floor must not be negative"),
        ("claude-code:buffer=300k", "claude-code buffer (300,000)"),
    ],
)
def test_bad_policy_values_blame_the_option_not_the_file(spec: str, needle: str) -> None:
    code, out, err = run(str(SESSIONS / "demo.json"), "--policy", spec)
    assert code == 2 and out == ""
    assert err.startswith(f"tjui: error: --policy {spec}: ")
    assert needle in err
    assert "demo.json" not in err
    assert len(err.strip().splitlines()) == 1
