"""tinyjuice against Hermes' own compaction (issue 14), on the same OpenAI transcript.

Hermes runs in its own virtual environment, never the project's: create it with
``python -m venv benchmarks/_work/hermes-venv && benchmarks/_work/hermes-venv/bin/pip
install hermes-agent`` (``--work`` moves it with the rest). Without it the section
records ``skipped`` and fails its targets. Hermes' summary model is stubbed to fail, so
its ``ContextCompressor.compress`` takes its own no-model fallback; tjui's summary is
the deterministic fallback. Variants are interleaved; best of N whole processes.

- whole process: ``tjui compress --dry-run`` with an empty analysis cache and a warm
  one, and a full ``tjui compress -o`` (empty cache), against a Python process that
  reads the file and runs Hermes' ``ContextCompressor.compress(force=True)``;
- in process: ``tinyjuice.pipeline.compress`` with a fresh counter (counting included)
  against ``ContextCompressor.compress`` on the same messages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

from benchmarks import RunContext, target_row
from benchmarks.gen import ensure
from benchmarks.speed import _env, _interleaved, _time, _tjui

TITLE = "Hermes"

COLD_RATIO = 1.5
WARM_RATIO = 0.5
IN_PROCESS_SPEEDUP = 1.3
#: The deterministic pipeline in process, counting included, at 100k messages (issue 14).
IN_PROCESS_LIMIT_S = 2.5

_HERMES = """
import json, logging, sys, time
logging.disable(logging.CRITICAL)
import agent.context_compressor as cc
def _fail(*args, **kwargs):
    raise RuntimeError("summary model unavailable (stubbed for the benchmark)")
cc.call_llm = _fail
data = json.load(open(sys.argv[1], encoding="utf-8"))
msgs = data["messages"] if isinstance(data, dict) else data
c = cc.ContextCompressor(model="gpt-4o", config_context_length=200_000, quiet_mode=True)
t0 = time.perf_counter()
out = c.compress(msgs, force=True)
print(json.dumps({"in": len(msgs), "out": len(out), "seconds": time.perf_counter() - t0}))
"""

_OURS = """
import json, sys, time
from tinyjuice.formats import load
from tinyjuice.pipeline import compress
from tinyjuice.options import CompactionOptions
from tinyjuice.tokens import TiktokenCounter, default_counter
t = load(sys.argv[1])
shared = default_counter()
counter = TiktokenCounter(shared._enc, shared.name) if isinstance(shared, TiktokenCounter) else shared
t0 = time.perf_counter()
r = compress(t, CompactionOptions(force=True, context_window=200_000), counter=counter)
seconds = time.perf_counter() - t0
print(json.dumps({"in": len(t.messages), "out": len(r.transcript.messages), "seconds": seconds}))
"""


def _in_process(argv: list[str], repeats: int) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for _ in range(repeats):
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        if not best or figures["seconds"] < best["seconds"]:
            best = figures
    return best


def run(ctx: RunContext) -> dict[str, Any]:
    venv_python = ctx.work_dir / "hermes-venv" / "bin" / "python"
    if not venv_python.exists():
        ctx.log(f"hermes: no {venv_python}; skipped")
        return {"skipped": f"no {venv_python}", "targets": _targets(None)}
    n = max(ctx.sizes)
    path = next(iter(ensure(ctx.work_dir, [n], ["openai"], log=ctx.log))).path
    work = ctx.work_dir / "hermes"
    work.mkdir(parents=True, exist_ok=True)
    script = work / "hermes_compress.py"
    script.write_text(_HERMES)
    f = str(path)
    cold, warm = work / "cache-cold", work / "cache-warm"
    shutil.rmtree(warm, ignore_errors=True)
    _time(_tjui("compress", f, "--dry-run"), _env(warm))
    repeats = 1 if ctx.quick else 2
    ctx.log(f"hermes: whole processes on {path.name}")
    whole = _interleaved(
        {
            "hermes": ([str(venv_python), str(script), f], None, False),
            "dry_run_cold": (_tjui("compress", f, "--dry-run"), cold, True),
            "dry_run_warm": (_tjui("compress", f, "--dry-run"), warm, False),
            "compress_cold": (
                _tjui("compress", f, "--force", "-o", str(work / "out.json")),
                cold,
                True,
            ),
        },
        repeats,
    )
    ctx.log("hermes: in process")
    in_process = {
        "hermes": _in_process([str(venv_python), str(script), f], repeats),
        "tinyjuice": _in_process([sys.executable, "-c", _OURS, f], repeats),
    }
    result = {"file": path.name, "messages": n, "whole_process": whole, "in_process": in_process}
    return {**result, "targets": _targets(result)}


def _targets(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    if result is None:
        note = "not measured: no Hermes venv"
        return [
            target_row(
                "hermes.cold", "compress --dry-run vs Hermes", note, "", None, 0, at_most=True
            )
        ]
    w, ip = result["whole_process"], result["in_process"]
    h = w["hermes"]
    speedup = ip["hermes"]["seconds"] / ip["tinyjuice"]["seconds"]
    label = f"{result['messages']:,} msgs, {result['file']}"
    return [
        target_row(
            "hermes.cold",
            f"compress --dry-run whole process, empty cache, vs Hermes' whole compaction ({label})",
            f"{w['dry_run_cold']:.2f} s vs {h:.2f} s = {w['dry_run_cold'] / h:.2f}×"
            f" (full compress -o: {w['compress_cold']:.2f} s)",
            f"≤ {COLD_RATIO:g}×",
            w["dry_run_cold"] / h,
            COLD_RATIO,
            at_most=True,
        ),
        target_row(
            "hermes.warm",
            f"compress --dry-run whole process, warm cache, vs Hermes ({label})",
            f"{w['dry_run_warm']:.2f} s vs {h:.2f} s = {w['dry_run_warm'] / h:.2f}×",
            f"≤ {WARM_RATIO:g}×",
            w["dry_run_warm"] / h,
            WARM_RATIO,
            at_most=True,
        ),
        target_row(
            "hermes.in_process",
            f"Pipeline in process, counting included, vs ContextCompressor ({label})",
            f"{ip['tinyjuice']['seconds']:.2f} s ({ip['tinyjuice']['out']} msgs out) vs"
            f" {ip['hermes']['seconds']:.2f} s ({ip['hermes']['out']} msgs out) = {speedup:.2f}×",
            f"≥ {IN_PROCESS_SPEEDUP:g}× faster",
            speedup,
            IN_PROCESS_SPEEDUP,
            at_most=False,
        ),
        target_row(
            "hermes.in_process_time",
            f"Pipeline in process, counting included ({label})",
            f"{ip['tinyjuice']['seconds']:.2f} s",
            f"≤ {IN_PROCESS_LIMIT_S:g} s",
            ip["tinyjuice"]["seconds"],
            IN_PROCESS_LIMIT_S,
            at_most=True,
        ),
    ]
