"""Streaming and parallel running of :mod:`tinyjuice.fit` over files and directories.

Details: docs/policies.md (`tinyjuice.dataset`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

from tinyjuice.atomic import file_mode
from tinyjuice.fit import (
    BatchAggregator,
    BatchOptions,
    BatchSummary,
    LineResult,
    TrajectoryMetrics,
    process_file,
    process_line,
)
from tinyjuice.formats._io import LoadError, check_regular
from tinyjuice.summary import FailureClass, SummaryProvider
from tinyjuice.tokens import TokenCounter, default_counter

__all__ = [
    "PARTIAL_SUFFIX",
    "BatchInputError",
    "BatchRun",
    "ItemCallback",
    "Job",
    "detect_line_format",
    "iter_lines",
    "map_ordered",
    "plan_jobs",
    "run_batch",
]

#: Suffix of a dataset output while it is being written (and after an interruption).
PARTIAL_SUFFIX = ".partial"
#: Lines per chunk sent to a worker, and the byte size that closes a chunk early.
CHUNK_ITEMS = 32
CHUNK_BYTES = 4 << 20
#: Chunks in flight per worker.
IN_FLIGHT_PER_WORKER = 3
#: Trajectories a worker counts before trimming the counter's text cache (bounded memory).
_CACHE_RESET_EVERY = 256
#: What a trim keeps: the counts of texts up to this many characters (they repeat from
#: one trajectory to the next), unless more than ``_CACHE_KEEP_ENTRIES`` are left.
_CACHE_KEEP_CHARS = 1024
_CACHE_KEEP_ENTRIES = 32_768
#: Read and write buffer for datasets: lines are often tens of KB, and the default 8 KB
#: buffer makes reading them several times slower.
_IO_BUFFER = 1 << 16
#: Lines probed to decide whether a JSONL file is a dataset.
_PROBE_LINES = 5

A = TypeVar("A")
R = TypeVar("R")


class BatchInputError(ValueError):
    """The inputs or the output path cannot be used (the message says why)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One input file and where its output goes.

    ``kind`` is ``lines`` (a dataset, streamed; ``format`` is its per-line format) or
    ``file`` (one trajectory).
    """

    source: Path
    target: Path
    kind: Literal["lines", "file"]
    format: str | None
    size: int


@dataclass(frozen=True, slots=True)
class BatchRun:
    """What a run did: the aggregate, and where it stopped when it was interrupted."""

    summary: BatchSummary
    workers: int
    wall_s: float
    #: Lines and files processed (blank lines included).
    items: int
    interrupted: bool
    #: Outputs completed, in order.
    outputs: tuple[str, ...]
    #: The partial output left by an interruption, and the input line it ends after.
    partial: str | None = None
    stopped_source: str | None = None
    stopped_line: int | None = None
    partial_lines: int = 0
    #: Why the run was stopped early on its own: the summary provider refused the
    #: credentials (an auth failure would repeat for every trajectory).
    aborted: str | None = None

    def to_dict(self, *, timings: bool = True) -> dict[str, Any]:
        out = self.summary.to_dict(timings=timings)
        out.update(
            {
                "workers": self.workers,
                "items": self.items,
                "interrupted": self.interrupted,
                "aborted": self.aborted,
                "outputs": len(self.outputs),
                "partial": None
                if self.partial is None
                else {
                    "path": self.partial,
                    "lines": self.partial_lines,
                    "source": self.stopped_source,
                    "after_line": self.stopped_line,
                },
            }
        )
        if timings:
            out["wall_s"] = round(self.wall_s, 3)
            out["trajectories_per_s"] = (
                round(self.summary.trajectories / self.wall_s, 1) if self.wall_s > 0 else None
            )
        return out


# ------------------------------------------------------------------------------ reading


def iter_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(1-based line number, raw line with its ending)`` for every line, lazily."""
    with Path(path).open("rb", buffering=_IO_BUFFER) as fh:
        yield from enumerate(fh, start=1)


def detect_line_format(path: str | Path) -> str | None:
    """The per-line format when ``path`` is a JSONL dataset of trajectories, else None.

    The first few non-blank lines are loaded one by one: each that loads must be a
    writable format, hold messages and agree with the others. Lines that do not load
    are skipped (a bad first line does not hide a dataset). A Claude Code, Codex or
    Hermes gateway session (one transcript spread over lines) is not a dataset.
    """
    from tinyjuice.formats import WRITABLE_FORMATS, LoadError, load_bytes

    found: str | None = None
    probed = ok = 0
    for _, raw in iter_lines(path):
        body = raw.strip()
        if not body:
            continue
        probed += 1
        if body[:1] in (b"{", b"["):
            try:
                t = load_bytes(body, path)
            except LoadError:
                t = None
            if t is not None:
                if t.format not in WRITABLE_FORMATS or not t.messages:
                    return None
                if found is None:
                    found = t.format
                elif t.format != found:
                    return None
                ok += 1
        if ok >= 2 or probed >= _PROBE_LINES:
            break
    return found


def _walk(root: Path, skip: Path | None) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith(PARTIAL_SUFFIX):
                continue
            if os.path.isfile(here / name):  # a pipe or device in the folder is not data
                out.append(here / name)
    return out


def plan_jobs(inputs: Sequence[str | Path], output: str | Path) -> list[Job]:
    """The jobs for ``inputs`` written to ``output``.

    One input file → ``output`` is a file (or, when it is an existing directory, the file
    goes inside it under its own name). A directory, or several inputs → ``output`` is a
    directory: a file input lands as ``output/<name>``; a single directory input's files
    as ``output/<relative path>``; with several inputs, ``output/<dir name>/<relative path>``.
    Raises :class:`BatchInputError` for a missing input, an output that would overwrite
    an input, or two inputs landing on the same output.
    """
    srcs = [Path(p) for p in inputs]
    out = Path(output)
    if not srcs:
        raise BatchInputError("no input given")
    for s in srcs:
        if not s.exists():
            raise BatchInputError(f"{s}: no such file or directory")
        if not s.is_dir():
            try:
                check_regular(s)
            except LoadError as exc:
                raise BatchInputError(str(exc)) from None
    pairs: list[tuple[Path, Path]] = []
    if len(srcs) == 1 and srcs[0].is_file():
        target = out / srcs[0].name if out.is_dir() else out
        pairs.append((srcs[0], target))
    else:
        if out.exists() and not out.is_dir():
            raise BatchInputError(
                f"{out} is a file; with a directory or several inputs the output is a directory"
            )
        resolved_out = out.resolve()
        for s in srcs:
            if s.is_file():
                pairs.append((s, out / s.name))
                continue
            base = out if len(srcs) == 1 else out / s.resolve().name
            root = s.resolve()
            skip = resolved_out if (resolved_out == root or root in resolved_out.parents) else None
            if skip == root:
                raise BatchInputError(f"the output {out} is the input directory {s}")
            for f in _walk(root, skip):
                pairs.append((f, base / f.relative_to(root)))
    seen: dict[Path, Path] = {}
    inputs_resolved = {p.resolve() for p, _ in pairs}
    jobs: list[Job] = []
    for src, target in pairs:
        key = target.resolve()
        if key in inputs_resolved:
            raise BatchInputError(f"refusing to write over the input {src}; choose another -o")
        if key in seen:
            raise BatchInputError(f"{seen[key]} and {src} would both be written to {target}")
        seen[key] = src
        fmt = detect_line_format(src)
        jobs.append(
            Job(
                source=src,
                target=target,
                kind="lines" if fmt else "file",
                format=fmt,
                size=src.stat().st_size,
            )
        )
    return jobs


# ----------------------------------------------------------------------------- parallel


def map_ordered(
    fn: Callable[[A], R],
    items: Iterable[A],
    *,
    workers: int,
    max_in_flight: int | None = None,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Generator[tuple[A, R], None, None]:
    """``(item, fn(item))`` in input order, computed by ``workers`` processes.

    At most ``max_in_flight`` items (default 3 per worker) are submitted and not yet
    yielded, so a lazy ``items`` is consumed only as fast as results are taken. With
    ``workers <= 1`` everything runs here, in order, after calling ``initializer``.
    Closing the iterator early cancels what has not started and waits for the rest.
    """
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        for item in items:
            yield item, fn(item)
        return
    limit = max(1, max_in_flight or IN_FLIGHT_PER_WORKER * workers)
    executor = ProcessPoolExecutor(workers, initializer=initializer, initargs=initargs)
    pending: deque[tuple[A, Future[R]]] = deque()
    source = iter(items)
    try:
        for item in source:
            pending.append((item, executor.submit(fn, item)))
            if len(pending) >= limit:
                break
        while pending:
            item, future = pending.popleft()
            result = future.result()
            for nxt in source:
                pending.append((nxt, executor.submit(fn, nxt)))
                break
            yield item, result
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


# ------------------------------------------------------------------------------ workers

#: Item kinds inside a chunk.
_BLANK, _LINE, _FILE = 0, 1, 2
#: (kind, job index, line number, payload: raw line bytes or the file path)
_Item = tuple[int, int, int | None, bytes | str]
_Chunk = tuple[tuple[str | None, ...], list[_Item]]


@dataclass(slots=True)
class _WorkerState:
    options: BatchOptions
    counter: TokenCounter
    provider: SummaryProvider | None = None
    exact: bool = False
    since_reset: int = 0


_STATE: _WorkerState | None = None


def _init_worker(
    options: BatchOptions,
    rough: bool,
    exact: bool,
    in_pool: bool,
    provider_factory: Callable[[], SummaryProvider | None] | None,
) -> None:
    global _STATE
    if in_pool:
        # Ctrl-C reaches the whole process group; the parent decides when to stop.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    provider = provider_factory() if provider_factory is not None else None
    _STATE = _WorkerState(options, default_counter(exact=not rough), provider, exact)


def _run_chunk(chunk: _Chunk) -> list[LineResult | None]:
    state = _STATE
    if state is None:  # pragma: no cover - the initializer always runs first
        raise RuntimeError("batch worker used before it was initialised")
    formats, items = chunk
    out: list[LineResult | None] = []
    for kind, job, line, payload in items:
        if kind == _BLANK:
            out.append(None)
            continue
        if kind == _LINE:
            assert isinstance(payload, bytes)
            fmt = formats[job]
            assert fmt is not None
            out.append(
                process_line(
                    payload,
                    fmt,
                    state.options,
                    counter=state.counter,
                    line=line,
                    provider=state.provider,
                    exact=state.exact,
                )
            )
        else:
            assert isinstance(payload, str)
            if _no_content(payload):  # no trajectory, and not a bad one: copied through
                out.append(None)
                continue
            out.append(
                process_file(
                    payload,
                    state.options,
                    counter=state.counter,
                    provider=state.provider,
                    exact=state.exact,
                )
            )
        state.since_reset += 1
    if state.since_reset >= _CACHE_RESET_EVERY:
        _trim_cache(state.counter)
        state.since_reset = 0
    return out


def _no_content(path: str) -> bool:
    """Whether the file is empty or holds only whitespace (read until the first other
    byte: one block for any real transcript)."""
    with Path(path).open("rb") as fh:
        while block := fh.read(_IO_BUFFER):
            if not block.isspace():
                return False
    return True


def _trim_cache(counter: TokenCounter) -> None:
    """Bound the counter's text cache, keeping the short texts' counts when it can."""
    trim = getattr(counter, "trim_cache", None)
    if callable(trim):
        trim(_CACHE_KEEP_CHARS, _CACHE_KEEP_ENTRIES)
        return
    clear = getattr(counter, "clear_cache", None)
    if callable(clear):
        clear()


def _chunks(jobs: Sequence[Job]) -> Iterator[_Chunk]:
    formats = tuple(j.format for j in jobs)
    items: list[_Item] = []
    size = 0
    for j, job in enumerate(jobs):
        if job.kind == "file":
            items.append((_FILE, j, None, str(job.source)))
            size += 256
        else:
            for n, raw in iter_lines(job.source):
                kind = _LINE if raw.strip() else _BLANK
                items.append((kind, j, n, raw))
                size += len(raw)
                if len(items) >= CHUNK_ITEMS or size >= CHUNK_BYTES:
                    yield formats, items
                    items, size = [], 0
        if len(items) >= CHUNK_ITEMS:
            yield formats, items
            items, size = [], 0
    if items:
        yield formats, items


# -------------------------------------------------------------------------------- write


def _atomic_write(target: Path, data: bytes | None, source: Path) -> None:
    """Write one output file; it takes its source's permission bits."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with _private_open(tmp) as fh:
            fh.write(source.read_bytes() if data is None else data)
        os.chmod(tmp, file_mode(source))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _private_open(path: Path) -> BinaryIO:
    """``path`` opened for writing, created 0600 (its final mode is set when complete)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return os.fdopen(fd, "wb", buffering=_IO_BUFFER)


class _LinesWriter:
    """Writes one dataset's output to ``<target>.partial``; renames it when complete."""

    def __init__(self, job: Job) -> None:
        self.job = job
        job.target.parent.mkdir(parents=True, exist_ok=True)
        self.partial = job.target.with_name(job.target.name + PARTIAL_SUFFIX)
        self.fh = _private_open(self.partial)
        self.lines = 0
        self.last_line: int | None = None

    def write(self, data: bytes, line: int | None) -> None:
        self.fh.write(data)
        self.lines += 1
        self.last_line = line

    def flush(self) -> None:
        self.fh.flush()

    def finish(self) -> None:
        self.fh.close()
        os.chmod(self.partial, file_mode(self.job.source))
        os.replace(self.partial, self.job.target)

    def abandon(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()


#: Called for every processed line or file: (job, metrics or None for a blank line or an
#: empty file, bytes read).
ItemCallback = Callable[[Job, TrajectoryMetrics | None, int], None]


# Long on purpose: one run loop (workers, ordered writes, stop and abort checks) whose
# steps share the open outputs and counters.
def run_batch(
    jobs: Sequence[Job],
    options: BatchOptions,
    *,
    workers: int = 1,
    rough: bool = False,
    exact: bool = False,
    on_item: ItemCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    provider_factory: Callable[[], SummaryProvider | None] | None = None,
) -> BatchRun:
    """Process every job, writing outputs as described in the module docstring.

    Summaries come from the deterministic fallback unless ``provider_factory`` is
    given: it is called once in each worker (so it must pickle: a module-level function
    or a ``functools.partial`` of one) and its provider summarises every trajectory
    there. Auth and network failures leave the trajectory unchanged (``summary_failed``);
    an auth failure also stops the run (``aborted`` says why): the key is wrong for all.

    ``rough`` counts with the chars/4 estimate instead of the tokenizer. The outputs are
    the same with ``exact``; without it a trajectory over the target is counted only
    where that decides its compression, and its ``tokens_before`` is an estimate
    (:func:`tinyjuice.fit.count_for_target`; the summary's ``tokens_before_kind``).

    ``on_item`` sees each result in input order (progress, bad-line reports, per-
    trajectory metrics). ``should_stop`` is polled after every written line; when it
    returns True the run stops there and the result says how far it got.
    """
    started = time.perf_counter()
    agg = BatchAggregator()
    outputs: list[str] = []
    writer: _LinesWriter | None = None
    interrupted = False
    aborted: str | None = None
    items_done = 0
    stopped: tuple[str | None, int | None] = (None, None)
    # Load the tokenizer here first: forked workers inherit it instead of loading it each.
    default_counter(exact=not rough)
    results = map_ordered(
        _run_chunk,
        _chunks(jobs),
        workers=workers,
        initializer=_init_worker,
        initargs=(options, rough, exact, workers > 1, provider_factory),
    )
    try:
        for (_, items), chunk_results in results:
            for (kind, j, line, payload), res in zip(items, chunk_results, strict=True):
                job = jobs[j]
                if writer is not None and writer.job is not job:
                    writer.finish()
                    outputs.append(str(writer.job.target))
                    writer = None
                if kind == _FILE:
                    _atomic_write(job.target, None if res is None else res.output, job.source)
                    outputs.append(str(job.target))
                    consumed = job.size
                else:
                    assert isinstance(payload, bytes)
                    if writer is None:
                        writer = _LinesWriter(job)
                    out = res.output if res is not None and res.output is not None else payload
                    writer.write(out, line)
                    consumed = len(payload)
                items_done += 1
                metrics = res.metrics if res is not None else None
                if metrics is not None:
                    agg.add(metrics, str(job.source))
                if on_item is not None:
                    on_item(job, metrics, consumed)
                if metrics is not None and metrics.failure_class == FailureClass.AUTH.value:
                    aborted = metrics.error or "the summary provider refused the credentials"
                if aborted is not None or (should_stop is not None and should_stop()):
                    interrupted = True
                    stopped = (str(job.source), line)
                    break
            if writer is not None:
                writer.flush()
            if interrupted:
                break
        if not interrupted and writer is not None:
            writer.finish()
            outputs.append(str(writer.job.target))
            writer = None
    finally:
        results.close()
        if writer is not None:
            writer.abandon()
    partial = str(writer.partial) if writer is not None else None
    return BatchRun(
        summary=agg.summary(),
        workers=max(1, workers),
        wall_s=time.perf_counter() - started,
        items=items_done,
        interrupted=interrupted,
        outputs=tuple(outputs),
        partial=partial,
        stopped_source=stopped[0],
        stopped_line=stopped[1],
        partial_lines=writer.lines if writer is not None else 0,
        aborted=aborted,
    )
