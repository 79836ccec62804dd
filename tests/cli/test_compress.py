"""`tjui compress`: JSON report shape, dry run, writing output, refusing unsafe writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import write_openai_session
from cli_helpers import run

from tinyjuice.formats import load


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return write_openai_session(tmp_path / "session.json", 30, passed_lines=60, pytest_flags=" -q")


def test_json_report_has_required_keys(session: Path) -> None:
    code, out, err = run("compress", str(session), "--keep-last", "2", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["status"] == "compacted"
    for key in ("start", "end", "snap_reason"):
        assert key in report["boundary"]
    assert report["before"]["messages"] == 122
    assert report["after"]["messages"] < report["before"]["messages"]
    assert report["after"]["tokens"] < report["before"]["tokens"]
    assert report["summary"]["kind"] == "fallback"
    assert report["digests"]["count"] > 0
    assert isinstance(report["cache_cold_tokens"], int)
    assert report["output"]["path"] is None


def test_keep_last_keeps_latest_ask_and_writes_output(session: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "compacted.json"
    code, _, err = run("compress", str(session), "--keep-last", "1", "-o", str(out_path))
    assert code == 0, err
    compacted = load(out_path)
    original = load(session)
    assert compacted.messages[-1].text == "Now make the retry logic idempotent."
    assert any(m.meta.is_summary for m in compacted.messages)
    assert len(compacted.messages) < len(original.messages)
    # The input is untouched.
    assert len(json.loads(session.read_text())) == 122


def test_at_index_snaps_and_reports_why(session: Path) -> None:
    # Message 3 is a tool result: cutting before it would split its tool group.
    code, out, err = run("compress", str(session), "--at", "3", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["boundary"]["requested"] == 3
    assert plan["boundary"]["end"] != 3
    assert "tool" in plan["boundary"]["snap_reason"]


def test_dry_run_writes_nothing(session: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "never.json"
    code, out, _ = run(
        "compress", str(session), "--keep-last", "2", "--dry-run", "-o", str(out_path)
    )
    assert code == 0
    assert "Would compress messages" in out
    assert not out_path.exists()


def test_below_threshold_changes_nothing(session: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "out.json"
    code, out, _ = run("compress", str(session), "--json", "-o", str(out_path))
    assert code == 0
    report = json.loads(out)
    assert report["status"] == "below_threshold"
    assert not out_path.exists()


def test_refuses_to_write_over_input(session: Path) -> None:
    code, _, err = run("compress", str(session), "--keep-last", "1", "-o", str(session))
    assert code == 2
    assert "refusing to write over the input" in err


def test_rules_profile_compacts_without_summary(session: Path) -> None:
    code, out, err = run("compress", str(session), "--profile", "rules", "--force", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["status"] == "compacted"
    assert report["summary"]["kind"] == "none"
    assert report["rules_applied"].get("collapse_pair", 0) > 0


def test_keep_last_and_at_are_exclusive(session: Path) -> None:
    code, _, err = run("compress", str(session), "--keep-last", "1", "--at", "5")
    assert code == 2
    assert "either --keep-last or --at" in err


def test_commit_in_place_then_undo_restores_bytes(session: Path) -> None:
    import hashlib

    original = session.read_bytes()
    code, out, err = run(
        "compress", str(session), "--keep-last", "2", "--commit", "--mode", "in-place", "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["status"] == "compacted"
    commit = report["commit"]
    assert commit["committed"] is not False
    changed = session.read_bytes()
    assert changed != original
    assert len(load(session).messages) < 122

    code, out, err = run("history", str(session), "--json")
    assert code == 0, err
    history = json.loads(out)
    assert len(history["commits"]) == 1
    assert history["commits"][0]["before_size"] == len(original)

    code, out, err = run("undo", "--json")
    assert code == 0, err
    assert session.read_bytes() == original
    assert hashlib.sha256(session.read_bytes()).hexdigest() == hashlib.sha256(original).hexdigest()


def test_mode_without_commit_is_refused(session: Path) -> None:
    code, _, err = run("compress", str(session), "--keep-last", "2", "--mode", "child")
    assert code == 2
    assert "--mode needs --commit" in err


def test_commit_in_place_says_only_what_happened(session: Path) -> None:
    code, out, err = run("compress", str(session), "--keep-last", "2", "--commit")
    assert code == 0, err
    assert "nothing written" not in out
    assert "persistence:" not in out
    assert f"in-place → {session.resolve()}" in out or f"in-place → {session}" in out
    assert "undo: tjui undo " in out


def test_commit_export_reports_the_written_path(session: Path, tmp_path: Path) -> None:
    target = tmp_path / "exports" / "exp.json"  # a missing directory is created
    args = ["compress", str(session), "--keep-last", "2", "--commit", "--mode", "export"]
    code, out, err = run(*args, "-o", str(target))
    assert code == 0, err
    assert "nothing written" not in out
    assert "export → " in out and "exp.json" in out
    assert target.is_file()
    target.unlink()
    code, out, err = run(*args, "-o", str(target), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["commit"]["committed"] is True
    assert Path(report["output"]["path"]).resolve() == target.resolve()
    assert report["output"]["format"] == "openai"


def test_plain_report_says_nothing_was_written(session: Path) -> None:
    code, out, err = run("compress", str(session), "--keep-last", "2")
    assert code == 0, err
    assert "nothing written, the input is unchanged" in " ".join(out.split())
    assert "persistence:" not in out


def test_noop_with_output_says_not_written(session: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "out.json"
    code, out, err = run("compress", str(session), "-o", str(out_path))
    assert code == 0
    assert not out_path.exists()
    assert err.startswith("not written: below_threshold: ")
    assert "not created" in err
    assert "below_threshold" in out


def test_output_creates_missing_directories(session: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "a" / "b" / "out.json"
    code, out, err = run("compress", str(session), "--keep-last", "1", "-o", str(out_path))
    assert code == 0, err
    assert load(out_path).messages[-1].text == "Now make the retry logic idempotent."
    assert f"wrote {out_path} (openai)" in " ".join(out.split())


@pytest.mark.parametrize("commit", [[], ["--commit", "--mode", "export"]])
def test_output_naming_a_directory_is_refused(
    session: Path, tmp_path: Path, commit: list[str]
) -> None:
    base = ["compress", str(session), "--keep-last", "1", *commit]
    trailing = f"{tmp_path / 'newdir'}/"
    code, out, err = run(*base, "-o", trailing)
    assert code == 2 and out == ""
    assert err.startswith(f"tjui: error: -o {trailing}: ends with a path separator")
    assert not (tmp_path / "newdir").exists()
    code, _, err = run(*base, "-o", str(tmp_path))
    assert code == 2
    assert f"-o {tmp_path}: is a directory" in err
    assert ".tmp" not in err


def test_converting_warns_what_the_target_format_drops(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "sessions" / "anthropic-messages.json"
    out = tmp_path / "x.jsonl"
    code, _, err = run("compress", str(src), "--keep-last", "2", "--to", "sharegpt", "-o", str(out))
    assert code == 0, err
    assert "tjui: warning: sharegpt output drops 1 image (sharegpt has no media)" in err
    assert out.read_bytes().count(b"\n") == 1  # .jsonl: one compact record
    code, stdout, _ = run(
        "compress", str(src), "--keep-last", "2", "--to", "sharegpt", "-o", str(out), "--json"
    )
    dropped = json.loads(stdout)["output"]["dropped"]
    assert {"kind": "media", "count": 1} in [{k: d[k] for k in ("kind", "count")} for d in dropped]
    # The same format drops nothing, and says nothing.
    code, _, err = run("compress", str(src), "--keep-last", "2", "-o", str(tmp_path / "y.json"))
    assert code == 0 and "drops" not in err


def test_rules_dry_run_says_its_projection_is_an_upper_bound(session: Path) -> None:
    code, out, err = run(
        "compress", str(session), "--keep-last", "3", "--profile", "rules", "--dry-run"
    )
    assert code == 0, err
    assert "at most" in out and "projected ~" not in out
    code, out, _ = run(
        "compress", str(session), "--keep-last", "3", "--profile", "rules", "--dry-run", "--json"
    )
    assert json.loads(out)["projection"] == "upper_bound"
    code, out, _ = run("compress", str(session), "--keep-last", "3", "--dry-run", "--json")
    assert json.loads(out)["projection"] == "estimate"


def test_help_names_every_format_and_to_offers_only_writable_ones() -> None:
    """`tjui --help` names every format it reads; `compress --to` lists (and accepts)
    only the formats it can write, refused as a usage error like any bad choice."""
    from tinyjuice.formats import FORMAT_NAMES, WRITABLE_FORMATS

    code, out, _ = run("--help")
    assert code == 0
    flat = "".join(out.split())  # wrapped lines may break a name at its hyphen
    assert all(name in flat for name in FORMAT_NAMES)
    code, out, _ = run("compress", "--help")
    assert code == 0
    offered = out.split("--to [", 1)[1].split("]", 1)[0]
    assert offered.split("|") == list(WRITABLE_FORMATS)
    demo = Path(__file__).resolve().parents[2] / "sessions" / "demo.json"
    code, out, err = run("compress", "--to", "codex", "-o", "x.jsonl", str(demo))
    assert code == 2
    assert "'codex' is not one of" in out + err
