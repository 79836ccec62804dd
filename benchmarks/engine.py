"""Engine benchmarks: the full deterministic pipeline, and boundary recomputation.

- ``compress`` with the fallback summary on 10k and 100k messages (keep the last 5
  exchanges), tokens counted beforehand as the inspector already has them — target
  ≤ 1 s at 100k.
- Recomputing head/middle/tail totals for a new boundary (``plan_boundary`` over a
  prebuilt ``BoundaryIndex`` and the prefix sums) at 100k — target ≤ 5 ms.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from dataclasses import replace
from typing import Any

from benchmarks import RunContext, target_row
from benchmarks.gen import ensure

TITLE = "Engine"

PIPELINE_LIMIT_S = 1.0
BOUNDARY_LIMIT_MS = 5.0


def _best(fn: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(ctx: RunContext) -> dict[str, Any]:
    from tinyjuice.boundary import BoundaryIndex
    from tinyjuice.formats import load
    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import compress, plan_boundary
    from tinyjuice.tokens import count_transcript, default_counter

    # The sizes are 10k and 100k; smaller runs (smoke tests) use what they are given.
    sizes = sorted(n for n in ctx.sizes if n >= 10_000) or [max(ctx.sizes)]
    files = {g.messages: g for g in ensure(ctx.work_dir, sizes, ["openai"], log=ctx.log)}
    counter = default_counter()
    pipeline: dict[str, Any] = {}
    targets: list[dict[str, Any]] = []
    largest = max(files)
    boundary: dict[str, Any] = {}
    for n in sorted(files):
        ctx.log(f"engine: pipeline on {n:,} messages")
        t = load(files[n].path)
        tokens = count_transcript(t, counter)
        options = CompactionOptions(keep_last=5)
        result = compress(t, options, tokens=tokens, counter=counter)
        seconds = _best(
            lambda t=t, tokens=tokens, options=options: compress(
                t, options, tokens=tokens, counter=counter
            ),
            1 if ctx.quick else 3,
        )
        index_s = _best(lambda t=t: BoundaryIndex(t.messages), 1 if ctx.quick else 3)
        pipeline[str(n)] = {
            "seconds": round(seconds, 4),
            "status": result.report.status.value,
            "before_tokens": result.report.before_tokens,
            "after_tokens": result.report.after_tokens,
            "digests": len(result.report.digests),
            "boundary_index_seconds": round(index_s, 4),
        }
        if n == largest:
            idx = BoundaryIndex(t.messages)
            base = CompactionOptions(force=True)
            rng = random.Random(7)
            points = [rng.randrange(0, len(t.messages)) for _ in range(200)]
            times = []
            for p in points:
                t0 = time.perf_counter()
                plan_boundary(t, replace(base, boundary=p), tokens, index=idx, counter=counter)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            boundary = {
                "messages": n,
                "moves": len(points),
                "mean_ms": round(statistics.fmean(times), 3),
                "p95_ms": round(times[int(len(times) * 0.95) - 1], 3),
                "max_ms": round(times[-1], 3),
            }
        del t, tokens, result
        gc.collect()

    if str(largest) in pipeline:
        s = pipeline[str(largest)]["seconds"]
        targets.append(
            target_row(
                "engine.pipeline",
                f"Full pipeline, fallback summary ({largest:,} msgs, tokens pre-counted)",
                f"{s:.2f} s ({pipeline[str(largest)]['digests']:,} digests, "
                f"{pipeline[str(largest)]['before_tokens']:,} → {pipeline[str(largest)]['after_tokens']:,} tokens)",
                f"≤ {PIPELINE_LIMIT_S:g} s at 100k",
                s,
                PIPELINE_LIMIT_S,
                at_most=True,
            )
        )
    if boundary:
        targets.append(
            target_row(
                "engine.boundary",
                f"Head/middle/tail totals for a new boundary ({boundary['messages']:,} msgs)",
                f"mean {boundary['mean_ms']:.3f} ms, p95 {boundary['p95_ms']:.3f} ms over {boundary['moves']} moves",
                f"≤ {BOUNDARY_LIMIT_MS:g} ms",
                boundary["p95_ms"],
                BOUNDARY_LIMIT_MS,
                at_most=True,
            )
        )
    return {"pipeline": pipeline, "boundary": boundary, "counter": counter.name, "targets": targets}
