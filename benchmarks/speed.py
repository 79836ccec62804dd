"""Speed where users wait (issue 14): whole processes, cold and warm analysis cache.

Every figure is the best of N whole runs of ``python -m tjui.cli …`` (interpreter start
included), the variants of one comparison interleaved so a busy machine skews them alike:

- ``compress --dry-run`` on the largest Claude Code transcript: counting everything
  exactly with no cache (what it did before the cache and ``--exact`` existed), cold
  (an empty cache: counts only what decides the cut), warm (the same command again),
  and warm with other options (exact counts from the cache, the plan recomputed);
- ``inspect --json`` on the same file, cold (empty cache) and warm;
- the inspector's preview at the largest size, in process: the first ``compress`` and
  one after a boundary move, each with the session's ``TranscriptAnalysis``; each repeat
  in a fresh interpreter (nothing of an earlier preview remembered), the best of each
  kept;
- ``tjui --help``; ``tjui inspect --json`` on the smallest file against the bare floor
  (one interpreter: ``orjson.loads`` per line and tiktoken over every string).
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import RunContext, target_row
from benchmarks.gen import ensure

TITLE = "Speed"

HELP_LIMIT_S = 0.150
INSPECT_FLOOR_RATIO = 1.2
WARM_INSPECT_RATIO = 0.2
WARM_DRY_RUN_RATIO = 0.5
PREVIEW_FIRST_S = 3.0
PREVIEW_MOVE_S = 1.0

#: The floor a 1k ``inspect`` is compared with: read, parse, count; nothing else.
_FLOOR = """
import sys, orjson, tiktoken
enc = tiktoken.get_encoding(sys.argv[2])
def strings(v, out):
    if isinstance(v, str): out.append(v)
    elif isinstance(v, dict):
        for x in v.values(): strings(x, out)
    elif isinstance(v, list):
        for x in v: strings(x, out)
texts = []
for line in open(sys.argv[1], 'rb').read().splitlines():
    if line.strip(): strings(orjson.loads(line), texts)
print(sum(len(enc.encode_ordinary(t)) for t in texts))
"""


def _time(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return seconds


def _env(cache: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TJUI_NO_CACHE", None)
    if cache is None:
        env["TJUI_NO_CACHE"] = "1"
    else:
        env["TJUI_CACHE_DIR"] = str(cache)
    return env


def _tjui(*args: str) -> list[str]:
    return [sys.executable, "-m", "tjui.cli", *args]


Argv = list[str] | Callable[[int], list[str]]


def _interleaved(
    variants: dict[str, tuple[Argv, Path | None, bool]], repeats: int
) -> dict[str, float]:
    """Best time of each variant; ``(argv, cache dir, cold)`` — cold empties it first.

    ``argv`` may be a function of the repeat number (other options on every repeat).
    """
    best = dict.fromkeys(variants, float("inf"))
    for i in range(repeats):
        for name, (argv, cache, cold) in variants.items():
            if cache is not None and cold:
                shutil.rmtree(cache, ignore_errors=True)
            args = argv(i) if callable(argv) else argv
            best[name] = min(best[name], _time(args, _env(cache)))
    return {k: round(v, 3) for k, v in best.items()}


def _whole_process(path: Path, work: Path, repeats: int) -> dict[str, Any]:
    f = str(path)
    cold, warm = work / "cache-cold", work / "cache-warm"
    shutil.rmtree(warm, ignore_errors=True)
    # Fill the warm cache: an exact count, a dry run and an inspect.
    for args in (("compress", f, "--dry-run", "--exact"), ("compress", f, "--dry-run")):
        _time(_tjui(*args), _env(warm))
    _time(_tjui("inspect", f, "--json"), _env(warm))
    dry = _interleaved(
        {
            "all_exact_no_cache": (_tjui("compress", f, "--dry-run", "--exact"), None, False),
            "cold": (_tjui("compress", f, "--dry-run"), cold, True),
            "warm": (_tjui("compress", f, "--dry-run"), warm, False),
            # Options not run before on every repeat: no stored plan, stored counts.
            "warm_other_options": (
                lambda i: _tjui("compress", f, "--dry-run", "--keep-last", str(7 + i)),
                warm,
                False,
            ),
        },
        repeats,
    )
    inspect = _interleaved(
        {
            "cold": (_tjui("inspect", f, "--json"), cold, True),
            "warm": (_tjui("inspect", f, "--json"), warm, False),
        },
        repeats,
    )
    return {"file": path.name, "bytes": path.stat().st_size, "dry_run": dry, "inspect": inspect}


def _preview(path: Path, repeats: int) -> dict[str, Any]:
    """:func:`_preview_once` in a fresh interpreter per repeat (``spawn``): a first
    preview must not find the memories an earlier one left. The best of each figure."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    runs: list[dict[str, Any]] = []
    ctx = multiprocessing.get_context("spawn")
    for _ in range(repeats):
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
            runs.append(pool.submit(_preview_once, path).result())
    return {
        "messages": runs[0]["messages"],
        "repeats": repeats,
        "first_s": min(r["first_s"] for r in runs),
        "after_move_s": min(r["after_move_s"] for r in runs),
        "runs": runs,
    }


def _preview_once(path: Path) -> dict[str, Any]:
    """One preview: the session built (not timed), the first ``compress`` and the one
    after a boundary move (timed)."""
    from tinyjuice.formats import load
    from tinyjuice.pipeline import compress
    from tinyjuice.tokens import count_transcript, default_counter
    from tjui.session import InspectorSession

    t = load(path)
    counter = default_counter()
    session = InspectorSession.build(t, count_transcript(t, counter), counter)
    gc.collect()
    t0 = time.perf_counter()
    compress(t, session.compaction_options(), **_preview_kwargs(session))
    first = time.perf_counter() - t0
    session.step_exchange(-1)
    t0 = time.perf_counter()
    compress(t, session.compaction_options(), **_preview_kwargs(session))
    moved = time.perf_counter() - t0
    return {
        "messages": len(t.messages),
        "pid": os.getpid(),
        "first_s": round(first, 3),
        "after_move_s": round(moved, 3),
    }


def _preview_kwargs(session: Any) -> dict[str, Any]:
    # Exactly what the preview screen passes (tjui/screens/preview.py).
    return {
        "tokens": session.tokens,
        "counter": session.counter,
        "index": session.index,
        "analysis": session.analysis,
    }


def _startup(small: Path, work: Path, repeats: int) -> dict[str, Any]:
    from tinyjuice.tokens import default_counter

    encoding = default_counter().name
    cache = work / "cache-small"
    times = _interleaved(
        {
            "help": (_tjui("--help"), None, False),
            "inspect_cold": (_tjui("inspect", str(small), "--json"), cache, True),
            "floor": ([sys.executable, "-c", _FLOOR, str(small), encoding], None, False),
        },
        repeats,
    )
    return {"file": small.name, "encoding": encoding, **times}


def run(ctx: RunContext) -> dict[str, Any]:
    sizes = sorted(ctx.sizes)
    files = {g.messages: g.path for g in ensure(ctx.work_dir, sizes, ["claude-code"], log=ctx.log)}
    big, small = files[sizes[-1]], files[sizes[0]]
    work = ctx.work_dir / "speed"
    work.mkdir(parents=True, exist_ok=True)
    repeats = 1 if ctx.quick else 3
    ctx.log(f"speed: whole processes on {big.name}")
    whole = _whole_process(big, work, repeats)
    ctx.log(f"speed: preview on {big.name}")
    preview = _preview(big, repeats)
    ctx.log("speed: start-up")
    # Runs of a third of a second: more of them, so the best is not a busy moment.
    startup = _startup(small, work, 2 if ctx.quick else 9)
    return {
        "whole_process": whole,
        "preview": preview,
        "startup": startup,
        "targets": _targets(whole, preview, startup),
    }


def _targets(whole: dict[str, Any], preview: dict[str, Any], startup: dict[str, Any]) -> list[Any]:
    dry, ins = whole["dry_run"], whole["inspect"]
    n = preview["messages"]
    floor_ratio = startup["inspect_cold"] / startup["floor"]
    return [
        target_row(
            "speed.dry_run",
            f"compress --dry-run, whole process ({whole['file']}): cold vs warm",
            f"cold {dry['cold']:.2f} s (all exact, no cache: {dry['all_exact_no_cache']:.2f} s);"
            f" warm {dry['warm']:.2f} s; warm, other options {dry['warm_other_options']:.2f} s",
            f"warm ≤ {WARM_DRY_RUN_RATIO:g}× cold (Hermes not measured here)",
            dry["warm"] / dry["cold"],
            WARM_DRY_RUN_RATIO,
            at_most=True,
        ),
        target_row(
            "speed.inspect_warm",
            f"inspect --json, whole process ({whole['file']}): warm vs cold cache",
            f"{ins['warm']:.2f} s vs {ins['cold']:.2f} s = {ins['warm'] / ins['cold']:.2f}×",
            f"≤ {WARM_INSPECT_RATIO:g}×",
            ins["warm"] / ins["cold"],
            WARM_INSPECT_RATIO,
            at_most=True,
        ),
        target_row(
            "speed.preview_first",
            f"Preview at {n:,} msgs: first compress (tokens counted)",
            f"{preview['first_s']:.2f} s",
            f"≤ {PREVIEW_FIRST_S:g} s",
            preview["first_s"],
            PREVIEW_FIRST_S,
            at_most=True,
        ),
        target_row(
            "speed.preview_move",
            f"Preview at {n:,} msgs: after a boundary move",
            f"{preview['after_move_s']:.2f} s",
            f"≤ {PREVIEW_MOVE_S:g} s",
            preview["after_move_s"],
            PREVIEW_MOVE_S,
            at_most=True,
        ),
        target_row(
            "speed.help",
            "tjui --help, whole process",
            f"{startup['help'] * 1000:.0f} ms",
            f"≤ {HELP_LIMIT_S * 1000:.0f} ms",
            startup["help"],
            HELP_LIMIT_S,
            at_most=True,
        ),
        target_row(
            "speed.inspect_floor",
            f"inspect --json ({startup['file']}, cold cache) vs the orjson+tiktoken floor",
            f"{startup['inspect_cold']:.2f} s vs {startup['floor']:.2f} s = {floor_ratio:.2f}×",
            f"≤ {INSPECT_FLOOR_RATIO:g}×",
            floor_ratio,
            INSPECT_FLOOR_RATIO,
            at_most=True,
        ),
    ]
