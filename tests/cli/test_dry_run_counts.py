"""`compress --dry-run` counts exactly what decides; --exact counts everything."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.gen import conversation, render
from tinyjuice.tokens import default_counter
from tjui.cli import main


def run(*args: str) -> dict:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_dry_run_labels_the_estimated_middle(tmp_path: Path) -> None:
    if default_counter().name == "rough":
        pytest.skip("no tokenizer")
    path = tmp_path / "gen.json"
    path.write_bytes(render(conversation(1500), "openai"))
    args = ("compress", str(path), "--dry-run", "--json", "--force", "--context-window", "64000")
    quick = run(*args)
    assert quick["counts"] == {
        "head": "exact",
        "middle": "estimated",
        "tail": "exact",
        "total": "estimated",
    }
    exact = run(*args, "--exact")
    assert set(exact["counts"].values()) == {"exact"}
    assert quick["boundary"] == exact["boundary"]
    for zone in ("head", "tail"):
        assert quick["zones"][zone] == exact["zones"][zone]
    assert quick["summary_budget"] == exact["summary_budget"]
    # --exact stored the file's exact counts: now a plain dry run uses them.
    again = run(*args[:-2], "--context-window", "64001")
    assert set(again["counts"].values()) == {"exact"}


def test_step_figures_carry_their_kind(tmp_path: Path) -> None:
    """The estimated middle's prune and summary figures are labelled estimated, in the
    JSON and with a "~" in the table; --exact counts them and labels them exact. (The
    images are left out: a figure reading one is an estimate however it is counted.)"""
    if default_counter().name == "rough":
        pytest.skip("no tokenizer")
    path = tmp_path / "gen.json"
    conv = conversation(1500)
    conv = replace(conv, messages=tuple(replace(m, image=None) for m in conv.messages))
    path.write_bytes(render(conv, "openai"))
    args = ("compress", str(path), "--force", "--context-window", "200000")
    quick = run(*args, "--json")
    assert {s["step"]: s["kind"] for s in quick["steps"]} == {
        "prune": "estimated",
        "summary": "estimated",
    }
    exact = run(*args, "--json", "--exact")
    assert {s["kind"] for s in exact["steps"]} == {"exact"}
    table = CliRunner().invoke(main, list(args)).stdout
    prune = next(line for line in table.splitlines() if line.strip().startswith("prune"))
    assert f"~{quick['steps'][0]['tokens_saved']:,}" in prune
    table = CliRunner().invoke(main, [*args, "--exact"]).stdout
    prune = next(line for line in table.splitlines() if line.strip().startswith("prune"))
    assert "~" not in prune and f"{exact['steps'][0]['tokens_saved']:,}" in prune


def run_env(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_dry_run_says_compress_would_not_cut_below_the_threshold(tmp_path: Path) -> None:
    """`compress --dry-run` says what `compress` would decide before cutting (a session
    below its threshold is left alone, for the same reason), then where the boundary
    falls; `--force` and a chosen boundary go ahead."""
    from builders import write_openai_session

    session = write_openai_session(tmp_path / "small.json", 6, passed_lines=5)
    env = {"TJUI_NO_CACHE": "1"}
    code, out, err = run_env(env, "compress", "--dry-run", "--json", str(session))
    assert code == 0, err
    decision = json.loads(out)["decision"]
    assert decision["fires"] is False
    assert decision["code"] == "below_threshold"
    assert "is below threshold" in decision["reason"]
    code, out, _ = run_env(env, "compress", "--dry-run", str(session))
    assert out.startswith("Would not compress now: prompt ")
    assert "(--force compacts anyway)" in out
    # The real run says the same.
    code, _, err = run_env(env, "compress", str(session), "-o", str(tmp_path / "o.json"))
    assert code == 0 and "below_threshold" in err
    forced = json.loads(run_env(env, "compress", "--dry-run", "--json", "--force", str(session))[1])
    assert forced["decision"]["fires"] is True
    chosen = json.loads(
        run_env(env, "compress", "--dry-run", "--json", "--keep-last", "1", str(session))[1]
    )
    assert chosen["decision"] is None


def test_a_no_op_dry_run_gives_its_reason_once() -> None:
    sample = Path(__file__).resolve().parents[2] / "sessions" / "claude-code.jsonl"
    code, out, err = run_env(
        {"TJUI_NO_CACHE": "1"}, "compress", "--keep-last", "2", "--dry-run", str(sample)
    )
    assert code == 0, err
    assert out.lower().count("leaves nothing to compress") == 1
