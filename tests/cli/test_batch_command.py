"""`tjui batch`: datasets and directories, identical output for any worker count, bad lines,
metrics, progress, refusing unsafe writes, and Ctrl-C leaving a valid partial output."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from benchmarks.trajectories import trajectory_line
from tinyjuice.formats import load, load_bytes
from tinyjuice.tokens import count_transcript
from tjui.commands.batch import EXIT_INTERRUPTED, batch

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(batch, list(args))
    return result.exit_code, result.stdout, result.stderr


def dataset(path: Path, n: int, extra: dict[int, bytes] | None = None) -> Path:
    with path.open("wb") as fh:
        for i in range(n):
            if extra and i in extra:
                fh.write(extra[i])
            fh.write(trajectory_line(i))
    return path


def aggregate(out: str) -> dict:
    data = json.loads(out)
    for key in ("duration_s", "wall_s", "trajectories_per_s", "workers", "output"):
        data.pop(key, None)
    return data


def test_dataset_with_bad_and_blank_lines(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 30, {4: b"{broken\n", 8: b"\n"})
    out, metrics = tmp_path / "out.jsonl", tmp_path / "metrics.jsonl"
    code, stdout, stderr = run(
        str(src),
        "--target-tokens",
        "2500",
        "-o",
        str(out),
        "--workers",
        "1",
        "--json",
        "--metrics",
        str(metrics),
    )
    assert code == 0, stderr
    report = json.loads(stdout)
    status = {r["line"]: r["status"] for r in map(json.loads, metrics.read_text().splitlines())}
    lines_in = src.read_bytes().splitlines(keepends=True)
    lines_out = out.read_bytes().splitlines(keepends=True)
    assert len(lines_out) == len(lines_in) == 32
    assert lines_out[4] == b"{broken\n" and lines_out[9] == b"\n"
    assert f"{src}, line 5:" in stderr and "written through unchanged" in stderr
    assert report["bad_inputs"] == 1 and report["bad"][0]["line"] == 5
    assert report["trajectories"] == 30
    assert report["compressed"] + report["skipped_under_target"] + report["still_over_limit"] == 30
    assert report["compressed"] > 0 and report["skipped_under_target"] > 0
    assert report["tokens_saved"] == report["tokens_before"] - report["tokens_after"] > 0
    assert report["counter"] and report["summary"] == "fallback"
    assert status[5] == "bad_input" and 10 not in status  # the blank line is no trajectory
    for n, (a, b) in enumerate(zip(lines_in, lines_out, strict=True), start=1):
        if status.get(n) == "compressed":
            t = load_bytes(b.rstrip(b"\n"), "x", "sharegpt")
            assert count_transcript(t).total <= 2500
            assert orjson.loads(b)["id"] == orjson.loads(a)["id"]
        elif status.get(n) == "skipped_under_target":
            assert a == b


def test_one_and_two_workers_write_identical_bytes(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 60, {10: b"[1, 2]\n"})
    outputs = []
    reports = []
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}.jsonl"
        code, stdout, stderr = run(
            str(src), "--target-tokens", "2000", "-o", str(out), "--workers", workers, "--json"
        )
        assert code == 0, stderr
        outputs.append(out.read_bytes())
        reports.append(aggregate(stdout))
    assert outputs[0] == outputs[1]
    assert reports[0] == reports[1]
    assert reports[0]["compressed"] > 10


def test_rules_profile_and_metrics_file(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 12)
    out, metrics = tmp_path / "out.jsonl", tmp_path / "m" / "metrics.jsonl"
    code, stdout, stderr = run(
        str(src),
        "--target-tokens",
        "2500",
        "-o",
        str(out),
        "--profile",
        "rules",
        "--metrics",
        str(metrics),
        "--workers",
        "1",
        "--json",
    )
    assert code == 0, stderr
    records = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert [r["line"] for r in records] == list(range(1, 13))
    assert {r["status"] for r in records} <= {
        "compressed",
        "skipped_under_target",
        "still_over_limit",
    }
    report = json.loads(stdout)
    assert report["profile"] == "rules" and report["rules_applied"] > 0
    assert sum(r["tokens_saved"] for r in records) == report["tokens_saved"]
    assert all(
        r["skipped_under_target"] == (r["status"] == "skipped_under_target") for r in records
    )


def test_directory_input_is_mirrored(tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "runs").mkdir(parents=True)
    dataset(src / "runs" / "a.jsonl", 5)
    messages = [{"role": "system", "content": "be brief"}]
    for k in range(20):
        messages.append({"role": "user", "content": f"ask {k} " + "word " * 150})
        messages.append({"role": "assistant", "content": f"answer {k} " + "text " * 150})
    messages.append({"role": "user", "content": "final ask"})
    (src / "chat.json").write_bytes(
        orjson.dumps({"messages": messages}, option=orjson.OPT_INDENT_2)
    )
    (src / "notes.txt").write_text("not a transcript\n")
    out = tmp_path / "out"
    code, stdout, stderr = run(
        str(src), "--target-tokens", "2000", "-o", str(out), "--workers", "2", "--json"
    )
    assert code == 0, stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "chat.json",
        "notes.txt",
        "runs/a.jsonl",
    ]
    assert (out / "notes.txt").read_text() == "not a transcript\n"
    chat = load(out / "chat.json")
    assert chat.format == "openai" and count_transcript(chat).total <= 2000
    assert chat.messages[-1].text == "final ask"
    assert len((out / "runs" / "a.jsonl").read_bytes().splitlines()) == 5
    report = json.loads(stdout)
    assert report["bad_inputs"] == 1 and report["trajectories"] == 6


def test_progress_bar_shows_rate_and_eta(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 6)
    code, _, stderr = run(
        str(src), "--target-tokens", "2500", "-o", str(tmp_path / "o.jsonl"), "--progress"
    )
    assert code == 0
    assert "trajectories ·" in stderr and "/s" in stderr and "ETA" in stderr


def test_human_summary_and_no_progress_by_default(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 6)
    out = tmp_path / "o.jsonl"
    code, stdout, stderr = run(str(src), "--target-tokens", "2500", "-o", str(out))
    assert code == 0
    assert "of 6 trajectories" in stdout and f"wrote {out}" in stdout
    assert "ETA" not in stderr  # stderr is not a terminal here


def test_summary_counts_trajectories_rewritten_but_still_over(tmp_path: Path) -> None:
    # At 300 tokens no trajectory fits, yet most are rewritten: not "compressed 0".
    src = dataset(tmp_path / "ds.jsonl", 12)
    out, metrics = tmp_path / "o.jsonl", tmp_path / "m.jsonl"
    args = [str(src), "--target-tokens", "300", "-o", str(out), "--workers", "1"]
    code, stdout, stderr = run(*args, "--json", "--metrics", str(metrics))
    assert code == 0, stderr
    report = json.loads(stdout)
    changed = sum(
        a != b
        for a, b in zip(src.read_bytes().splitlines(), out.read_bytes().splitlines(), strict=True)
    )
    records = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert 0 < changed < 12 and sum(r["compacted"] for r in records) == changed
    assert report["compressed"] == 0 and report["still_over_limit"] == 12
    assert report["compacted"] == report["compacted_still_over_limit"] == changed
    assert report["unchanged_over_limit"] == 12 - changed
    code, stdout, _ = run(*args)
    assert stdout.splitlines()[0] == (
        f"compacted {changed} of 12 trajectories (none fits the target: {changed} still over"
        f" it); 0 already under the target; {12 - changed} over the target and left unchanged"
        " (nothing could be cut)"
    )


def test_empty_file_is_no_trajectory_and_bad_files_are_not_lines(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, stdout, stderr = run(str(empty), "--target-tokens", "300", "-o", str(tmp_path / "e"))
    assert code == 0 and stderr == ""
    assert stdout.splitlines()[0] == "no trajectories"
    assert stdout.splitlines()[1].startswith("tokens 0 → 0; ")  # no "(−0%)"
    assert (tmp_path / "e").read_bytes() == b""
    src = tmp_path / "in"
    src.mkdir()
    (src / "notes.txt").write_text("not a transcript\n")
    dataset(src / "ds.jsonl", 3, {1: b"{broken\n"})
    code, stdout, _ = run(str(src), "--target-tokens", "2500", "-o", str(tmp_path / "out"))
    assert code == 0
    assert "; 1 bad line(s) written through unchanged; 1 bad file(s) written through" in stdout


def test_refuses_to_overwrite_the_input(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 2)
    code, _, stderr = run(str(src), "--target-tokens", "100", "-o", str(src))
    assert code == 2 and "refusing to write over the input" in stderr
    code, _, stderr = run(str(src), "-o", str(tmp_path / "x.jsonl"))
    assert code == 2 and "--target-tokens" in stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_leaves_a_valid_partial_output(tmp_path: Path, workers: str) -> None:
    # Long trajectories under a small target: every line needs compressing (slow enough).
    src = tmp_path / "ds.jsonl"
    with src.open("wb") as fh:
        for _ in range(40):
            for i in (0, 18, 24, 25):
                fh.write(trajectory_line(i))
    out = tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    code = "from tjui.commands.batch import batch; batch(prog_name='tjui batch')"
    argv = [str(src), "--target-tokens", "1500", "-o", str(out), "--workers", workers]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "core")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if partial.exists() and partial.read_bytes().count(b"\n") >= 3:
                break
            if proc.poll() is not None:
                pytest.fail("batch finished before it could be interrupted")
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = stderr.decode()
    assert proc.returncode == EXIT_INTERRUPTED, text
    assert not out.exists() and partial.exists()
    data = partial.read_bytes()
    assert data.endswith(b"\n")
    lines = data.splitlines()
    assert 3 <= len(lines) < 160
    for line in lines:
        assert orjson.loads(line)["conversations"]
    assert f"holds {len(lines):,} complete lines" in text
    assert f"through line {len(lines):,} of {src}" in text
    assert "interrupted after" in text


class _ChatHandler(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions on 127.0.0.1 answering with a fixed summary."""

    calls = 0
    status = 200

    def payload(self) -> dict:
        message = {"role": "assistant", "content": "Model summary of the span."}
        return {
            "id": "x",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        type(self).calls += 1
        body = orjson.dumps(self.payload())
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _RejectingHandler(_ChatHandler):
    """The same endpoint refusing the key (401), as a revoked key gets."""

    calls = 0
    status = 401

    def payload(self) -> dict:
        return {"error": {"message": "Incorrect API key provided: sk-...wxyz"}}


@contextlib.contextmanager
def _provider(handler: type[BaseHTTPRequestHandler], extra: str = "") -> Iterator[None]:
    """A loopback server with ``handler``, configured as provider ``local``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        Path(os.environ["TJUI_CONFIG"]).write_text(
            "[providers.local]\n"
            'kind = "openai"\n'
            f'base_url = "http://127.0.0.1:{server.server_address[1]}/v1"\n'
            'model = "m"\n' + extra
        )
        yield
    finally:
        server.shutdown()
        server.server_close()


def test_configured_provider_summarises_each_trajectory(tmp_path: Path) -> None:
    with _provider(_ChatHandler):
        src = dataset(tmp_path / "ds.jsonl", 10)
        out = tmp_path / "out.jsonl"
        code, stdout, stderr = run(
            str(src), "--target-tokens", "2500", "-o", str(out), "--provider", "local", "--json"
        )
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["summary"] == "provider:local"
    assert report["compressed"] > 0 and report["fallback_summaries"] == 0
    assert report["summary_calls"] == _ChatHandler.calls >= report["compressed"]
    assert out.read_bytes().count(b"Model summary of the span.") >= report["compressed"]


def test_unknown_provider_is_a_usage_error(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 2)
    code, _, stderr = run(
        str(src), "--target-tokens", "100", "-o", str(tmp_path / "o"), "--provider", "nope"
    )
    assert code == 2 and "nope" in stderr
    assert not (tmp_path / "o").exists()


def test_worker_count_is_capped_at_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from tjui.commands.batch import NETWORK_WORKERS_PER_CORE, worker_count

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert worker_count(None, network_bound=False) == (2, None)
    assert worker_count(1, network_bound=False) == (1, None)
    assert worker_count(999, network_bound=False) == (2, 2)
    network_cap = 2 * NETWORK_WORKERS_PER_CORE
    assert worker_count(network_cap, network_bound=True) == (network_cap, None)
    assert worker_count(999, network_bound=True) == (network_cap, network_cap)


def test_too_many_workers_are_capped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    src = dataset(tmp_path / "ds.jsonl", 4)
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(
        str(src), "--target-tokens", "2000", "-o", str(out), "--workers", "999", "--json"
    )
    assert code == 0, err
    assert json.loads(stdout)["workers"] == 1
    assert "tjui: warning: --workers 999 capped at 1 (1 core(s)" in err
    assert out.is_file()


@pytest.mark.parametrize("as_json", [False, True])
def test_a_rejected_key_aborts_the_run_with_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    monkeypatch.setenv("TJUI_TEST_KEY", "sk-test-revoked-0000wxyz")
    with _provider(_RejectingHandler, 'api_key_env = "TJUI_TEST_KEY"\n'):
        src = dataset(tmp_path / "ds.jsonl", 10)
        out = tmp_path / "out.jsonl"
        args = [str(src), "--target-tokens", "2500", "-o", str(out), "--provider", "local"]
        code, stdout, stderr = run(*args, *(["--json"] if as_json else []))
    assert code == 1, stderr
    assert "auth" in stderr and "stopped" in stderr and "tjui config" in stderr
    assert "sk-test-revoked-0000wxyz" not in stdout + stderr
    assert not out.exists()  # the output is not passed off as complete
    if as_json:
        assert json.loads(stdout)["aborted"]


def test_exact_counts_everything_and_writes_the_same(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 30)
    reports, texts = {}, {}
    for flag in ("", "--exact"):
        out = tmp_path / f"out{flag}.jsonl"
        args = [str(src), "--target-tokens", "2500", "-o", str(out), "--workers", "1"]
        code, stdout, stderr = run(*args, *([flag] if flag else []), "--json")
        assert code == 0, stderr
        reports[flag] = json.loads(stdout)
        code, texts[flag], stderr = run(*args, *([flag] if flag else []))
        assert code == 0, stderr
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "out--exact.jsonl").read_bytes()
    default, exact = reports[""], reports["--exact"]
    assert default["tokens_before_kind"] == "estimated" and default["estimated_before"] > 0
    assert exact["tokens_before_kind"] == "exact" and exact["estimated_before"] == 0
    assert default["tokens_after"] == exact["tokens_after"]
    assert default["tokens_after_kind"] == exact["tokens_after_kind"] == "exact"
    assert f"tokens ~{default['tokens_before']:,} → {default['tokens_after']:,} (~−" in texts[""]
    assert f"tokens {exact['tokens_before']:,} → {exact['tokens_after']:,} (−" in texts["--exact"]


def test_a_metrics_file_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    src = dataset(tmp_path / "ds.jsonl", 2)
    (tmp_path / "blocked").write_text("a file, not a directory")
    metrics = tmp_path / "blocked" / "metrics.jsonl"
    out = tmp_path / "out.jsonl"
    code, _, stderr = run(
        str(src), "--target-tokens", "2500", "-o", str(out), "--metrics", str(metrics)
    )
    assert code == 2
    assert f"could not write --metrics {metrics}" in stderr
    assert "Traceback" not in stderr
    assert not out.exists()
