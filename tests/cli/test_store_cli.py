"""`tjui history`, `tjui undo`, and `compress --commit --mode` as the lead wires it."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tinyjuice.formats import load
from tinyjuice.store import Archive, SqliteLease
from tjui.commands.store import (
    EXIT_BUSY,
    EXIT_REFUSED,
    EXIT_STALE,
    commit_from_cli,
    commit_options,
    echo_commit,
    history_cmd,
    load_for_commit,
    recover_cmd,
    undo_cmd,
)


@click.command("compress")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--keep-last", type=int, default=2)
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None)
@click.option("--to", "to_format", default=None)
@commit_options
@click.option("--json", "as_json", is_flag=True)
@click.option("--agent-writes", is_flag=True, hidden=True)
def compress_like(
    file: Path,
    keep_last: int,
    output: Path | None,
    to_format: str | None,
    do_commit: bool,
    commit_mode: str | None,
    as_json: bool,
    agent_writes: bool,
) -> None:
    """The wiring the lead adds to `tjui compress` (see the report)."""
    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import compress
    from tinyjuice.tokens import RoughCounter

    if commit_mode is not None and not do_commit:
        raise click.UsageError("--mode needs --commit")
    loaded = load_for_commit(file)
    if agent_writes:  # test hook: an agent appends a turn between load and commit
        file.write_bytes(file.read_bytes().replace(b"]}", b',{"role":"user","content":"hi"}]}'))
    result = compress(
        loaded.transcript,
        CompactionOptions(keep_last=keep_last, force=True),
        counter=RoughCounter(),
    )
    report = result.report.to_dict()
    if do_commit:
        report["commit"] = commit_from_cli(
            result, loaded, mode=commit_mode, output=output, to_format=to_format
        )
    if as_json:
        click.echo(json.dumps(report))
    elif do_commit:
        echo_commit(report["commit"])


def invoke(command: click.Command, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args))
    return result.exit_code, result.stdout, result.stderr


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def session(tmp_path: Path) -> Path:
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(10):
        messages.append({"role": "user", "content": f"Step {i}: fix src/app/module_{i}.py"})
        messages.append({"role": "assistant", "content": f"Looked at module {i}. " * 40})
        messages.append({"role": "user", "content": f"Test output {i}: " + "PASSED " * 200})
        messages.append({"role": "assistant", "content": f"Module {i} passes."})
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"messages": messages}, separators=(",", ":")))
    return path


def test_commit_history_undo_round_trip(session: Path) -> None:
    original = sha(session)
    code, out, err = invoke(compress_like, str(session), "--commit", "--json")
    assert code == 0, err
    data = json.loads(out)["commit"]
    assert data["committed"] is True and data["mode"] == "in-place"
    assert data["source_sha256"] == original and data["after_sha256"] == sha(session)
    assert data["undo_command"] == f"tjui undo {data['id']}"
    assert len(load(session).messages) < 41

    code, out, err = invoke(history_cmd, str(session), "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert listed["archive"] == str(Archive().path)
    assert [c["id"] for c in listed["commits"]] == [data["id"]]
    assert listed["commits"][0]["state"] == "done"

    code, out, _ = invoke(history_cmd, str(session))
    assert code == 0 and data["id"] in out and "in-place" in out and "done" in out

    code, out, err = invoke(undo_cmd, data["id"], "--json")
    assert code == 0, err
    assert json.loads(out)["state"] == "undone"
    assert sha(session) == original

    code, _, err = invoke(undo_cmd, data["id"])
    assert code == EXIT_REFUSED and "already undone" in err


def test_text_output_names_the_commit_and_the_undo(session: Path) -> None:
    code, out, err = invoke(compress_like, str(session), "--commit")
    assert code == 0, err
    (record,) = Archive().commits()
    assert f"committed {record.id}" in out and f"tjui undo {record.id}" in out
    code, out, err = invoke(undo_cmd)  # the newest commit by default
    assert code == 0, err
    assert f"undone {record.id}" in out and "verified" in out


def test_child_and_export_modes(session: Path, tmp_path: Path) -> None:
    original = sha(session)
    code, out, err = invoke(compress_like, str(session), "--commit", "--mode", "child", "--json")
    assert code == 0, err
    child = Path(json.loads(out)["commit"]["target_path"])
    assert child.exists() and sha(session) == original

    out_path = tmp_path / "export.json"
    code, out, err = invoke(compress_like, str(session), "--commit", "--mode", "export",
                            "-o", str(out_path), "--to", "anthropic", "--json")  # fmt: skip
    assert code == 0, err
    assert load(out_path).format == "anthropic" and sha(session) == original

    code, _, err = invoke(compress_like, str(session), "--commit", "--mode", "export")
    assert code == EXIT_REFUSED and "-o PATH" in err


def test_undo_refused_when_the_file_changed_unless_forced(session: Path) -> None:
    original = sha(session)
    code, out, err = invoke(compress_like, str(session), "--commit", "--json")
    assert code == 0, err
    commit_id = json.loads(out)["commit"]["id"]
    session.write_bytes(session.read_bytes() + b"\n")
    code, _, err = invoke(undo_cmd, commit_id)
    assert code == EXIT_REFUSED and "--force" in err
    agent_state = session.read_bytes()
    code, out, err = invoke(undo_cmd, commit_id, "--force")
    assert code == 0, err
    assert "archived" in out and sha(session) == original
    # What the forced undo replaced (the agent's newer state) can be written back out.
    short = re.search(r"tjui recover (\w+) -o FILE", out)
    assert short, out
    back = session.parent / "agent-state.json"
    code, out, err = invoke(recover_cmd, short.group(1), "-o", str(back))
    assert code == 0, err
    assert back.read_bytes() == agent_state and "verified" in out
    # Never over an existing file without --force; a bad or unknown digest is one line.
    code, _, err = invoke(recover_cmd, short.group(1), "-o", str(back))
    assert code == EXIT_REFUSED and "--force" in err
    code, _, err = invoke(recover_cmd, "zz", "-o", str(session.parent / "x"))
    assert code == EXIT_REFUSED and "at least 8 hex characters" in err
    code, _, err = invoke(recover_cmd, commit_id, "-o", str(session.parent / "x"))
    assert code == EXIT_REFUSED and f"is a commit id, not a sha256: `tjui undo {commit_id}`" in err
    code, _, err = invoke(recover_cmd, "0" * 12, "-o", str(session.parent / "x"))
    assert code == EXIT_REFUSED and "no copy" in err
    assert len(err.strip().splitlines()) == 1


def test_a_held_lease_exits_busy_and_changes_nothing(session: Path) -> None:
    original = sha(session)
    other = SqliteLease(Archive(), holder="tjui:another-host:1:beef")
    assert other.try_acquire(f"file:{session.resolve()}").acquired
    code, _, err = invoke(compress_like, str(session), "--commit")
    assert code == EXIT_BUSY
    assert "compaction already in flight" in err and "tjui:another-host" in err
    assert sha(session) == original


def test_a_stale_source_exits_and_keeps_the_agents_turn(session: Path) -> None:
    code, _, err = invoke(compress_like, str(session), "--commit", "--agent-writes")
    assert code == EXIT_STALE
    assert "changed since it was loaded" in err and "reload" in err
    assert load(session).messages[-1].text == "hi"


def test_history_when_empty_and_mode_without_commit(session: Path) -> None:
    code, out, _ = invoke(history_cmd)
    assert code == 0 and "no commits" in out
    code, _, err = invoke(compress_like, str(session), "--mode", "child")
    assert code == 2 and "--mode needs --commit" in err
    code, _, err = invoke(undo_cmd)
    assert code == EXIT_REFUSED and "nothing to undo" in err


def test_history_without_an_archive_creates_nothing(tmp_path: Path) -> None:
    import os

    home = Path(os.environ["TJUI_HOME"])
    assert not home.exists()
    code, out, err = invoke(history_cmd)
    assert code == 0, err
    assert out.startswith("no commits yet")
    code, out, err = invoke(history_cmd, str(tmp_path / "x.json"), "--json")
    assert code == 0, err
    assert json.loads(out) == {"archive": str(home / "archive.db"), "commits": []}
    assert not home.exists()


def test_undoing_a_state_db_child_says_it_removed_the_session_not_the_file(
    tmp_path: Path,
) -> None:
    from tjui.cli import main

    db = tmp_path / "state.db"
    db.write_bytes((Path(__file__).resolve().parents[2] / "sessions/hermes-state.db").read_bytes())
    code, out, err = invoke(
        main, "compress", str(db), "--session", "20250915_141022_7be0d2", "--keep-last", "2",
        "--force", "--commit", "--mode", "child", "--json",
    )  # fmt: skip
    assert code == 0, err
    commit = json.loads(out)["commit"]
    code, out, err = invoke(undo_cmd, commit["id"])
    assert code == 0, err
    assert f"removed session {commit['target_session']} from {db.resolve()}" in out
    assert db.exists()
