"""Foundation benchmarks: load time, exact token counting, peak memory.

What the issue asks, measured on this machine in one run:

- **load**: ``tinyjuice.formats.load(path)`` per format and size, best of N, against a
  bare ``orjson.loads`` of the same file (per line for JSONL), both in one fresh
  subprocess per file; target ≤ 4×.
- **tokens**: ``count_transcript`` with a fresh ``TiktokenCounter`` (cold) against bare
  ``encode_ordinary`` over exactly the texts tinyjuice counts, each in a fresh
  subprocess; target ≥ 0.8× the bare throughput. A second count with the same counter
  (warm) must be ≥ 10× faster than the cold one.
- **rss**: peak RSS while loading the largest transcript, in a fresh subprocess, above
  the RSS after imports; target ≤ 8× the file size.

The measurements that need a fresh interpreter run this module as a worker:
``python -m benchmarks.foundation load|tokens-bare|tokens-ours|rss ...``; it prints one JSON
object on its last line.
"""

from __future__ import annotations

import gc
import importlib
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks import REPO_ROOT, RunContext, now_iso, target_row
from benchmarks.gen import FORMATS, Generated, ensure, is_jsonl

__all__ = [
    "COLD_TARGET",
    "LOAD_TARGET",
    "RSS_TARGET",
    "TITLE",
    "WARM_TARGET",
    "run",
]

TITLE = "Foundation: loading, exact token counting, memory"

#: load time / bare orjson.loads, at most.
LOAD_TARGET = 4.0
#: cold count throughput / bare encode_ordinary throughput, at least.
COLD_TARGET = 0.8
#: cold count time / second (warm) count time, at least.
WARM_TARGET = 10.0
#: peak RSS while loading / file size, at most.
RSS_TARGET = 8.0

_WORKER_TIMEOUT_S = 900


# ------------------------------------------------------------------------------ helpers


def _repeats(n: int, quick: bool) -> int:
    """Samples per timing: a 1k-message load takes a few milliseconds, where one
    scheduler hiccup moves the ratio by a whole point, so small sizes take many more."""
    if quick:
        return 3 if n <= 10_000 else 1
    return 40 if n <= 1_000 else 10 if n <= 10_000 else 3


def _size_label(n: int) -> str:
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def _mb(n: float) -> float:
    return round(n / 1e6, 2)


def _error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 400 else text[:397] + "..."


def _best_of(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` calls, in seconds; results are freed outside the clock."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - t0
        del value
        best = min(best, elapsed)
    return best


def bare_parse(path: Path) -> object:
    """The baseline: read the file and ``orjson.loads`` it (each line, for JSONL)."""
    data = path.read_bytes()
    if is_jsonl(path):
        return [orjson.loads(line) for line in data.splitlines() if line]
    return orjson.loads(data)


def _preimport_formats() -> None:
    """Import every format module that exists, so no timing includes an import."""
    from tinyjuice.formats import _MODULES

    for module in _MODULES.values():
        try:
            importlib.import_module(module)
        except Exception:  # a reader still being written: load() will report it
            continue


def _resolve_mode(path: Path, fmt: str) -> tuple[str | None, Any, str | None]:
    """Load once to check the file: ("auto" | "explicit" | None, transcript or error, note).

    ``auto`` (detection, as ``tjui <file>`` runs) is preferred; when detection fails or
    picks another format, the explicit ``format=`` load is timed instead and the
    detection problem is kept as a note.
    """
    from tinyjuice.formats import load

    note: str | None = None
    try:
        transcript = load(path)
        if transcript.format == fmt:
            return "auto", transcript, None
        note = f"detected as {transcript.format!r}"
    except Exception as exc:
        note = _error(exc)
    try:
        return "explicit", load(path, fmt), note
    except Exception as exc:
        return None, _error(exc), note


def _loader(path: Path, fmt: str, mode: str) -> Callable[[], object]:
    from tinyjuice.formats import load

    if mode == "auto":
        return lambda: load(path)
    return lambda: load(path, fmt)


# --------------------------------------------------------------------------------- load


def _worker_load(path: Path, fmt: str, repeats: int) -> dict[str, Any]:
    """Best-of timings of the bare parse and of ``load``, in this fresh interpreter.

    A fresh interpreter per file keeps the heap (and so the cyclic GC's work) the same
    from run to run: in one long-lived process, whatever else is alive changes how often
    and how long full collections run during a big load. GC stays enabled, as it is for
    a user; ``load_nogc_s`` (the same load with GC paused) is kept as a diagnostic.
    """
    _preimport_formats()
    entry: dict[str, Any] = {"repeats": repeats}
    entry["orjson_s"] = _best_of(lambda: bare_parse(path), repeats)
    gc.collect()
    t0 = time.perf_counter()
    mode, first, note = _resolve_mode(path, fmt)
    first_s = time.perf_counter() - t0
    if note is not None:
        entry["detect_error"] = note
    if mode is None:
        entry["error"] = first
        return entry
    entry["mode"] = mode
    entry["messages_loaded"] = len(first.messages)
    entry["warnings"] = len(first.warnings)
    del first
    loader = _loader(path, fmt, mode)
    load_s = _best_of(loader, max(1, repeats - 1))
    if mode == "auto":  # the checking load was a clean, timed sample too
        load_s = min(load_s, first_s)
    entry["load_s"] = load_s
    entry["ratio"] = load_s / entry["orjson_s"]
    entry["pass"] = entry["ratio"] <= LOAD_TARGET
    gc.disable()
    try:
        entry["load_nogc_s"] = _best_of(loader, max(1, repeats // 2))
    finally:
        gc.enable()
    return entry


def _measure_load(item: Generated, quick: bool) -> dict[str, Any]:
    repeats = _repeats(item.messages, quick)
    entry: dict[str, Any] = {"messages": item.messages, "file_bytes": item.bytes}
    entry.update(_run_worker("load", str(item.path), item.format, str(repeats)))
    return entry


def _load_rows(load: dict[str, dict[str, Any]], sizes: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    labels = " / ".join(_size_label(n) for n in sizes)
    for fmt, per_size in load.items():
        entries = [per_size[str(n)] for n in sizes if str(n) in per_size]
        errors = [e["error"] for e in entries if "error" in e]
        measurement = f"Load {fmt} ({labels} msgs) vs orjson.loads"
        if errors or not entries:
            figure = "error: " + (errors[0] if errors else "not measured")
            rows.append(
                target_row(
                    f"load.{fmt}",
                    measurement,
                    figure,
                    f"≤ {LOAD_TARGET:g}×",
                    None,
                    LOAD_TARGET,
                    at_most=True,
                )
            )
            continue
        ratios = " / ".join(f"{e['ratio']:.1f}×" for e in entries)
        big = entries[-1]
        figure = f"{ratios}; {big['load_s']:.2f} s for {_size_label(big['messages'])} ({_mb(big['file_bytes']):.1f} MB)"
        worst = max(e["ratio"] for e in entries)
        rows.append(
            target_row(
                f"load.{fmt}",
                measurement,
                figure,
                f"≤ {LOAD_TARGET:g}×",
                worst,
                LOAD_TARGET,
                at_most=True,
            )
        )
    return rows


# ------------------------------------------------------------------------------ workers


def _counter_parts() -> tuple[Any, str]:
    """The encoding behind ``default_counter()``; fails when no exact tokenizer loads."""
    from tinyjuice.tokens import TiktokenCounter, default_counter

    counter = default_counter()
    if not isinstance(counter, TiktokenCounter):
        raise RuntimeError("no exact tokenizer available (default_counter() is the rough one)")
    return counter._enc, counter.name


def _counted_texts(transcript: Any) -> list[str]:
    """Exactly the texts ``count_transcript`` hands to the counter."""
    from tinyjuice.tokens import _message_texts, tool_schema_text

    texts = [t for m in transcript.messages for t in _message_texts(m)]
    texts.append(transcript.system_prompt or "")
    texts.append(tool_schema_text(transcript.tools) if transcript.tools else "")
    return texts


def _worker_tokens_bare(path: Path, fmt: str) -> dict[str, Any]:
    from tinyjuice.formats import load

    enc, name = _counter_parts()
    texts = [t for t in _counted_texts(load(path, fmt)) if t]
    enc.encode_ordinary("warm the encoder up")
    gc.collect()
    t0 = time.perf_counter()
    tokens = sum(len(enc.encode_ordinary(t)) for t in texts)
    elapsed = time.perf_counter() - t0
    unique = {t: None for t in texts}
    return {
        "encoding": name,
        "texts": len(texts),
        "unique_texts": len(unique),
        "chars": sum(len(t) for t in texts),
        "unique_chars": sum(len(t) for t in unique),
        "tokens": tokens,
        "seconds": elapsed,
    }


def _worker_tokens_ours(path: Path, fmt: str, warm_repeats: int) -> dict[str, Any]:
    from tinyjuice.formats import load
    from tinyjuice.tokens import TiktokenCounter, count_transcript

    enc, name = _counter_parts()
    transcript = load(path, fmt)
    counter = TiktokenCounter(enc, name)  # fresh: empty cache
    enc.encode_ordinary("warm the encoder up")
    gc.collect()
    t0 = time.perf_counter()
    cold = count_transcript(transcript, counter)
    cold_s = time.perf_counter() - t0
    warm_s = float("inf")
    warm_total = None
    for _ in range(warm_repeats):
        t0 = time.perf_counter()
        warm = count_transcript(transcript, counter)
        warm_s = min(warm_s, time.perf_counter() - t0)
        warm_total = warm.total
    text_tokens = sum(counter.count(t) for t in _counted_texts(transcript))
    return {
        "encoding": name,
        "messages": len(transcript.messages),
        "total": cold.total,
        "warm_total": warm_total,
        "text_tokens": text_tokens,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "threads": max(1, min(8, os.cpu_count() or 1)),
    }


def _proc_status_bytes(key: str) -> int | None:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM) in bytes; None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS, where Linux allows it."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _peak_rss() -> tuple[int, str]:
    """This process's peak RSS in bytes, and where it came from.

    ``VmHWM`` belongs to the process image, so it starts fresh at ``exec``; Linux's
    ``ru_maxrss`` is inherited from the parent across fork + exec and would report the
    harness's own peak, so it is only the fallback (macOS reports bytes, Linux KiB).
    """
    hwm = _proc_status_bytes("VmHWM")
    if hwm is not None:
        return hwm, "VmHWM"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (peak if sys.platform == "darwin" else peak * 1024), "ru_maxrss"


def _worker_rss(path: Path, fmt: str, mode: str) -> dict[str, Any]:
    import tinyjuice.formats  # noqa: F401  (imports are part of the baseline)

    _preimport_formats()
    load = _loader(path, fmt, mode)
    gc.collect()
    reset = _reset_peak()
    now = _proc_status_bytes("VmRSS")
    baseline = now if now is not None else _peak_rss()[0]
    transcript = load()
    peak, source = _peak_rss()
    retained = _proc_status_bytes("VmRSS")
    return {
        "messages": len(transcript.messages),  # type: ignore[attr-defined]
        "baseline_bytes": baseline,
        "peak_bytes": peak - baseline,
        "retained_bytes": None if retained is None else retained - baseline,
        "peak_source": source,
        "peak_reset": reset,
    }


def _worker_main(argv: Sequence[str]) -> int:
    kind, path_s, fmt, *rest = argv
    path = Path(path_s)
    result: dict[str, Any]
    if kind == "load":
        result = _worker_load(path, fmt, int(rest[0]))
    elif kind == "tokens-bare":
        result = _worker_tokens_bare(path, fmt)
    elif kind == "tokens-ours":
        result = _worker_tokens_ours(path, fmt, int(rest[0]))
    elif kind == "rss":
        result = _worker_rss(path, fmt, rest[0])
    else:
        print(f"unknown worker {kind!r}", file=sys.stderr)
        return 2
    sys.stdout.write(orjson.dumps(result).decode() + "\n")
    return 0


def _run_worker(*args: str) -> dict[str, Any]:
    """Run a worker in a fresh interpreter; its result, or ``{"error": ...}``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "benchmarks.foundation", *args]
    try:
        proc = subprocess.run(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=_WORKER_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"worker {args[0]} timed out after {_WORKER_TIMEOUT_S} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return {"error": f"worker {args[0]} failed: {tail[0][:400]}"}
    result: dict[str, Any] = orjson.loads(lines[-1])
    return result


# ------------------------------------------------------------------------------- tokens


def _measure_tokens(item: Generated, quick: bool) -> dict[str, Any]:
    runs = 1 if quick else 2
    path, fmt = str(item.path), item.format
    bare: dict[str, Any] | None = None
    ours: dict[str, Any] | None = None
    for _ in range(runs):  # each sample is a fresh interpreter: nothing cached
        b = _run_worker("tokens-bare", path, fmt)
        if "error" in b:
            return {"format": fmt, "messages": item.messages, "error": b["error"]}
        if bare is None or b["seconds"] < bare["seconds"]:
            bare = b
        o = _run_worker("tokens-ours", path, fmt, "3")
        if "error" in o:
            return {"format": fmt, "messages": item.messages, "error": o["error"]}
        if ours is None or o["cold_s"] < ours["cold_s"]:
            ours = o
    assert bare is not None and ours is not None
    tokens = bare["tokens"]
    entry: dict[str, Any] = {
        "format": fmt,
        "messages": item.messages,
        "file_bytes": item.bytes,
        "encoding": bare["encoding"],
        "samples": runs,
        "texts": bare["texts"],
        "unique_texts": bare["unique_texts"],
        "chars": bare["chars"],
        "unique_chars": bare["unique_chars"],
        "tokens": tokens,
        "transcript_tokens": ours["total"],
        "tokens_agree": ours["text_tokens"] == tokens and ours["warm_total"] == ours["total"],
        "counter_threads": ours["threads"],
        "bare_s": bare["seconds"],
        "cold_s": ours["cold_s"],
        "warm_s": ours["warm_s"],
        "bare_tokens_per_s": tokens / bare["seconds"],
        "cold_tokens_per_s": tokens / ours["cold_s"],
        "warm_tokens_per_s": tokens / ours["warm_s"],
    }
    entry["cold_vs_bare"] = entry["cold_tokens_per_s"] / entry["bare_tokens_per_s"]
    entry["warm_speedup"] = ours["cold_s"] / ours["warm_s"]
    entry["cold_pass"] = entry["cold_vs_bare"] >= COLD_TARGET
    entry["warm_pass"] = entry["warm_speedup"] >= WARM_TARGET
    return entry


def _token_rows(tok: dict[str, Any]) -> list[dict[str, Any]]:
    what = f"{tok['format']} {_size_label(tok['messages'])}"
    cold_m = f"Exact token count, cold ({what}) vs bare encode_ordinary"
    warm_m = f"Exact token count, second pass ({what})"
    if "error" in tok:
        fig = "error: " + tok["error"]
        return [
            target_row(
                "tokens.cold", cold_m, fig, f"≥ {COLD_TARGET:g}×", None, COLD_TARGET, at_most=False
            ),
            target_row(
                "tokens.warm",
                warm_m,
                fig,
                f"≥ {WARM_TARGET:g}× faster",
                None,
                WARM_TARGET,
                at_most=False,
            ),
        ]
    mtok = tok["tokens"] / 1e6
    cold_fig = (
        f"{tok['cold_tokens_per_s'] / 1e6:.2f} Mtok/s = {tok['cold_vs_bare']:.2f}× bare "
        f"({tok['bare_tokens_per_s'] / 1e6:.2f} Mtok/s); {mtok:.1f} Mtok in {tok['cold_s']:.2f} s"
    )
    warm_fig = f"{tok['warm_s']:.3f} s = {tok['warm_speedup']:.0f}× faster than cold"
    return [
        target_row(
            "tokens.cold",
            cold_m,
            cold_fig,
            f"≥ {COLD_TARGET:g}×",
            tok["cold_vs_bare"],
            COLD_TARGET,
            at_most=False,
        ),
        target_row(
            "tokens.warm",
            warm_m,
            warm_fig,
            f"≥ {WARM_TARGET:g}× faster",
            tok["warm_speedup"],
            WARM_TARGET,
            at_most=False,
        ),
    ]


# ---------------------------------------------------------------------------------- rss


def _measure_rss(item: Generated, mode: str) -> dict[str, Any]:
    r = _run_worker("rss", str(item.path), item.format, mode)
    entry: dict[str, Any] = {"messages": item.messages, "file_bytes": item.bytes}
    if "error" in r:
        entry["error"] = r["error"]
        return entry
    entry.update(
        {
            "peak_bytes": r["peak_bytes"],
            "retained_bytes": r["retained_bytes"],
            "baseline_bytes": r["baseline_bytes"],
            "peak_source": r["peak_source"],
            "peak_mb": _mb(r["peak_bytes"]),
            "ratio": r["peak_bytes"] / item.bytes,
        }
    )
    entry["pass"] = entry["ratio"] <= RSS_TARGET
    return entry


def _rss_rows(rss: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for fmt, e in rss.items():
        measurement = f"Peak RSS loading {fmt} {_size_label(e['messages'])} ({_mb(e['file_bytes']):.1f} MB file)"
        if "error" in e:
            rows.append(
                target_row(
                    f"rss.{fmt}",
                    measurement,
                    "error: " + e["error"],
                    f"≤ {RSS_TARGET:g}× file",
                    None,
                    RSS_TARGET,
                    at_most=True,
                )
            )
            continue
        figure = f"{e['peak_mb']:.0f} MB = {e['ratio']:.1f}× file"
        if e.get("retained_bytes") is not None:
            figure += f" ({_mb(e['retained_bytes']):.0f} MB retained)"
        rows.append(
            target_row(
                f"rss.{fmt}",
                measurement,
                figure,
                f"≤ {RSS_TARGET:g}× file",
                e["ratio"],
                RSS_TARGET,
                at_most=True,
            )
        )
    return rows


# ---------------------------------------------------------------------------------- run


def run(ctx: RunContext) -> dict[str, Any]:
    """Generate (or reuse) the transcripts and measure everything; the section's result."""
    sizes = tuple(sorted(set(ctx.sizes)))
    formats = ctx.formats or FORMATS
    largest = sizes[-1]
    files: dict[str, dict[str, Any]] = {}
    load: dict[str, dict[str, Any]] = {fmt: {} for fmt in formats}
    items: dict[tuple[str, int], Generated] = {}
    for item in ensure(ctx.work_dir, sizes, formats, log=ctx.log):
        items[(item.format, item.messages)] = item
        files.setdefault(item.format, {})[str(item.messages)] = {
            "name": item.path.name,
            "bytes": item.bytes,
        }
        ctx.log(f"load {item.format} {_size_label(item.messages)} ...")
        entry = _measure_load(item, ctx.quick)
        load[item.format][str(item.messages)] = entry
        if "error" in entry:
            ctx.log(f"  error: {entry['error']}")
        else:
            ctx.log(
                f"  {entry['load_s']:.3f} s = {entry['ratio']:.2f}× orjson ({entry['orjson_s']:.3f} s)"
            )

    if ("openai", largest) not in items:
        items[("openai", largest)] = ensure(ctx.work_dir, (largest,), ("openai",), log=ctx.log)[0]
    ctx.log(f"token counting on openai {_size_label(largest)} ...")
    tokens = _measure_tokens(items[("openai", largest)], ctx.quick)
    if "error" not in tokens:
        ctx.log(
            f"  cold {tokens['cold_vs_bare']:.2f}× bare; warm {tokens['warm_speedup']:.1f}× faster than cold"
        )

    rss: dict[str, dict[str, Any]] = {}
    for fmt in formats:
        entry = load[fmt].get(str(largest), {})
        if "mode" not in entry:
            continue  # the reader failed: already reported under load
        ctx.log(f"peak RSS {fmt} {_size_label(largest)} ...")
        rss[fmt] = _measure_rss(items[(fmt, largest)], entry["mode"])
        if "error" not in rss[fmt]:
            ctx.log(f"  {rss[fmt]['peak_mb']:.0f} MB = {rss[fmt]['ratio']:.2f}× file")

    targets = [*_load_rows(load, sizes), *_token_rows(tokens), *_rss_rows(rss)]
    return {
        "title": TITLE,
        "generated": now_iso(),
        "quick": ctx.quick,
        "sizes": list(sizes),
        "formats": list(formats),
        "files": files,
        "load": load,
        "tokens": tokens,
        "rss": rss,
        "targets": targets,
    }


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
