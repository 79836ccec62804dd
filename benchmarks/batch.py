"""Batch benchmarks: ``tjui batch`` throughput on a 10,000-trajectory ShareGPT dataset.

Measured with the function ``tjui batch`` runs (:func:`tinyjuice.dataset.run_batch`),
writing the output file as the command does, without the progress bar:

- **1 vs 2 workers** at a 3,000-token target (about a third of the trajectories need
  compression): target 2 workers ≥ 1.7× one worker; the two outputs must be
  byte-identical and the aggregates equal.
- **Trajectories that need no compression** (target above every trajectory), one
  worker, against the *bare token-counting floor*: in one process, load every
  trajectory of the same file with the streaming loader
  (:func:`tinyjuice.formats.sharegpt.iter_trajectories`) and count it exactly
  (:func:`tinyjuice.tokens.count_transcript`) with the same counter — no compression,
  no output. Target: batch within 1.2× of the floor (issue 14).
- **One worker at the compression target** against the same floor: the whole run,
  summaries and output included. Target: within 1.2× of the floor (issue 14).
- **The same run with a summary that costs nothing** (a one-line body in place of the
  deterministic fallback summary; the region is still redacted, counted and written):
  not a target but its reference, the part of the ratio above that no summary can
  remove. The gap between the two runs is what the fallback summary itself costs.

The counter's text cache is emptied before every timed run (forked workers inherit an
empty one), so no run profits from an earlier one. Runs alternate and the best of
``repeats`` (5) is kept, which damps noise from other work on the machine.
"""

from __future__ import annotations

import gc
import hashlib
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks import RunContext, target_row
from benchmarks.trajectories import ensure_dataset

TITLE = "Batch"

#: The issue's dataset size, and the target that makes about a third need compression.
FULL_TRAJECTORIES = 10_000
TARGET_TOKENS = 3_000
SPEEDUP_MIN = 1.7
FLOOR_RATIO_MAX = 1.2
#: The same bound for one worker at the 3,000-token target (compression included).
TARGET_FLOOR_RATIO_MAX = 1.2
#: A target no trajectory reaches: nothing needs compression.
NO_COMPRESSION_TARGET = 10**12


def _clear_counter() -> None:
    from tinyjuice.tokens import default_counter

    clear = getattr(default_counter(), "clear_cache", None)
    if callable(clear):
        clear()


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its finished (reaped) child processes."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _timed(fn: Callable[[], Any]) -> tuple[float, Any, tuple[float, float]]:
    """(wall seconds, result, (CPU seconds here, CPU seconds in worker processes))."""
    _clear_counter()
    gc.collect()
    c0 = _cpu()
    t0 = time.perf_counter()
    value = fn()
    wall = time.perf_counter() - t0
    c1 = _cpu()
    return wall, value, (c1[0] - c0[0], c1[1] - c0[1])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def floor_pass(path: Path) -> tuple[int, int]:
    """The floor: stream-load and exactly count every trajectory. (trajectories, tokens)."""
    from tinyjuice.formats.sharegpt import iter_trajectories
    from tinyjuice.tokens import count_transcript, default_counter

    counter = default_counter()
    n = tokens = 0
    for t in iter_trajectories(path):
        tokens += count_transcript(t, counter).total
        n += 1
    return n, tokens


def batch_pass(path: Path, out: Path, target: int, workers: int) -> Any:
    from tinyjuice.dataset import plan_jobs, run_batch
    from tinyjuice.fit import BatchOptions

    jobs = plan_jobs([path], out)
    return run_batch(jobs, BatchOptions(target_tokens=target), workers=workers)


@contextmanager
def summary_at_no_cost() -> Iterator[None]:
    """Within the body, the batch's fallback summary is a fixed one-line body (the
    message it becomes is still wrapped, redacted, counted and written): what the batch
    costs apart from building the summary. A measuring instrument, never a product path;
    the real summary is back when the body ends, whatever happens in it."""
    import tinyjuice.fit as fit

    real = fit.fallback_summary

    def free(middle: Any, **_: Any) -> Any:
        return SimpleNamespace(text=f"{len(middle)} earlier messages were removed.")

    fit.fallback_summary = free  # type: ignore[assignment]
    try:
        yield
    finally:
        fit.fallback_summary = real


def _free_summary_pass(path: Path, out: Path) -> Any:
    with summary_at_no_cost():
        return batch_pass(path, out, TARGET_TOKENS, 1)


def run(ctx: RunContext) -> dict[str, Any]:
    n = FULL_TRAJECTORIES if max(ctx.sizes) >= FULL_TRAJECTORIES else max(ctx.sizes)
    # Five rounds: on a shared host the best of three still caught busy moments.
    repeats = 1 if ctx.quick else 5
    work = ctx.work_dir / "batch"
    ctx.log(f"batch: dataset of {n:,} trajectories")
    data = ensure_dataset(work, n)
    out1, out2, out_skip, out_free = (work / f"out-{k}.jsonl" for k in ("w1", "w2", "skip", "free"))

    best: dict[str, float] = {}
    cpu: dict[str, tuple[float, float]] = {}
    runs: dict[str, Any] = {}

    def keep(name: str, seconds: float, result: Any, used: tuple[float, float]) -> None:
        if seconds < best.get(name, float("inf")):
            best[name], cpu[name] = seconds, used
        runs[name] = result

    for r in range(repeats):
        ctx.log(f"batch: round {r + 1}/{repeats}: floor")
        keep("floor", *_timed(lambda: floor_pass(data.path)))
        ctx.log(f"batch: round {r + 1}/{repeats}: no compression needed, 1 worker")
        keep("skip", *_timed(lambda: batch_pass(data.path, out_skip, NO_COMPRESSION_TARGET, 1)))
        ctx.log(f"batch: round {r + 1}/{repeats}: target {TARGET_TOKENS:,}, 1 worker")
        keep("one", *_timed(lambda: batch_pass(data.path, out1, TARGET_TOKENS, 1)))
        ctx.log(f"batch: round {r + 1}/{repeats}: target {TARGET_TOKENS:,}, free summary")
        keep("free", *_timed(lambda: _free_summary_pass(data.path, out_free)))
        ctx.log(f"batch: round {r + 1}/{repeats}: target {TARGET_TOKENS:,}, 2 workers")
        keep("two", *_timed(lambda: batch_pass(data.path, out2, TARGET_TOKENS, 2)))
    floor_s, skip_s, one_s, two_s = best["floor"], best["skip"], best["one"], best["two"]
    count, floor_tokens = runs["floor"]

    one, two, skip, free = runs["one"], runs["two"], runs["skip"], runs["free"]
    identical = _sha256(out1) == _sha256(out2)
    same_figures = one.summary.to_dict(timings=False) == two.summary.to_dict(timings=False)
    skip_unchanged = _sha256(out_skip) == _sha256(data.path)
    for p in (out1, out2, out_skip, out_free):
        p.unlink(missing_ok=True)
    speedup = one_s / two_s if two_s > 0 else None
    floor_ratio = skip_s / floor_s if floor_s > 0 else None
    target_ratio = one_s / floor_s if floor_s > 0 else None
    free_ratio = best["free"] / floor_s if floor_s > 0 else None

    def cpu_ratio(name: str) -> str:
        # The same ratio in CPU seconds of this process: on a busy machine wall time
        # also counts the waits for a core.
        floor_cpu = cpu["floor"][0]
        return f"{cpu[name][0] / floor_cpu:.2f}×" if floor_cpu > 0 else "n/a"

    agg = one.summary

    def figures(name: str, result: Any | None = None) -> dict[str, Any]:
        seconds = best[name]
        here, workers = cpu[name]
        out: dict[str, Any] = {
            "seconds": round(seconds, 3),
            "trajectories_per_s": round(n / seconds, 1),
            # CPU spent by the run itself; wall time above it means the CPU was shared.
            "cpu_s": round(here, 3),
            "worker_cpu_s": round(workers, 3),
        }
        if result is not None:
            out.update(result.summary.to_dict(timings=False))
        return out

    return {
        "title": TITLE,
        "trajectories": n,
        "dataset_bytes": data.bytes,
        "tokens": floor_tokens,
        "counted": count,
        "target_tokens": TARGET_TOKENS,
        "repeats": repeats,
        "floor": figures("floor"),
        "no_compression_1_worker": figures("skip", skip),
        "workers_1": figures("one", one),
        "workers_2": figures("two", two),
        "workers_1_free_summary": figures("free", free),
        "speedup_2_workers": None if speedup is None else round(speedup, 3),
        "no_compression_vs_floor": None if floor_ratio is None else round(floor_ratio, 3),
        "workers_1_vs_floor": None if target_ratio is None else round(target_ratio, 3),
        "free_summary_vs_floor": None if free_ratio is None else round(free_ratio, 3),
        "outputs_identical": identical,
        "aggregates_equal": same_figures,
        "no_compression_output_unchanged": skip_unchanged,
        "targets": [
            target_row(
                "batch.workers",
                f"tjui batch, {n:,} ShareGPT trajectories, target {TARGET_TOKENS:,} "
                f"({agg.compressed:,} compressed): 2 workers vs 1",
                f"{speedup:.2f}× ({one_s:.1f} s → {two_s:.1f} s); outputs "
                + ("identical" if identical and same_figures else "DIFFER"),
                f"≥ {SPEEDUP_MIN}×, identical output",
                round(speedup, 3) if speedup is not None and identical and same_figures else None,
                SPEEDUP_MIN,
                at_most=False,
            ),
            target_row(
                "batch.floor",
                f"tjui batch, 1 worker, {n:,} trajectories needing no compression, vs the "
                "bare floor (stream-load + exact count, one process)",
                f"{floor_ratio:.2f}× ({floor_s:.1f} s floor → {skip_s:.1f} s; CPU "
                f"{cpu_ratio('skip')})",
                f"≤ {FLOOR_RATIO_MAX}×",
                None if floor_ratio is None else round(floor_ratio, 3),
                FLOOR_RATIO_MAX,
                at_most=True,
            ),
            target_row(
                "batch.floor_target",
                f"tjui batch, 1 worker, {n:,} trajectories at target {TARGET_TOKENS:,} "
                f"({agg.compressed:,} compressed, {agg.fallback_summaries:,} fallback "
                "summaries), vs the same bare floor",
                f"{target_ratio:.2f}× ({floor_s:.1f} s floor → {one_s:.1f} s; CPU "
                f"{cpu_ratio('one')}); with a summary that costs nothing "
                f"{free_ratio:.2f}× (CPU {cpu_ratio('free')})",
                f"≤ {TARGET_FLOOR_RATIO_MAX}×",
                None if target_ratio is None else round(target_ratio, 3),
                TARGET_FLOOR_RATIO_MAX,
                at_most=True,
            ),
        ],
    }
