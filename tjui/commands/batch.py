"""``tjui batch``: compress datasets of trajectories to a token target, offline.

Register with ``main.add_command(batch)`` in ``tjui/cli.py``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, NoReturn

import click
import orjson

from tjui.clikit import check_policy, emit_json, fail

if TYPE_CHECKING:
    from tinyjuice.dataset import Job

__all__ = ["EXIT_INTERRUPTED", "NETWORK_WORKERS_PER_CORE", "batch", "worker_count"]

#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
#: Bad lines reported one by one before only the count is given.
_SHOWN_BAD = 20


class _StopFlag:
    """SIGINT handler: the first Ctrl-C asks the run to stop after the current line; a
    second one interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def install(self) -> None:
        self._previous = signal.signal(signal.SIGINT, self)

    def restore(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


class _Progress:
    """A rich progress bar on stderr (bytes read as progress, trajectories/s as rate).

    Started at the first result, after the worker processes exist (they are forked
    before any display thread runs).
    """

    def __init__(self, total_bytes: int, enabled: bool) -> None:
        self.total = max(1, total_bytes)
        self.enabled = enabled
        self.trajectories = 0
        self.started = time.perf_counter()
        self._progress: Any = None
        self._task: Any = None

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("batch"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[done]} trajectories · {task.fields[rate]}/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task("batch", total=self.total, done="0", rate="—")

    def advance(self, consumed: int, trajectory: bool) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            self._start()
        if trajectory:
            self.trajectories += 1
        elapsed = time.perf_counter() - self.started
        rate = f"{self.trajectories / elapsed:,.0f}" if elapsed > 0 else "—"
        self._progress.update(
            self._task, advance=consumed, done=f"{self.trajectories:,}", rate=rate
        )

    def log(self, message: str) -> None:
        """Print a line on stderr without tearing the bar."""
        if self._progress is not None:
            self._progress.console.print(message, markup=False, highlight=False)
        else:
            click.echo(message, err=True)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _progress_enabled(choice: bool | None) -> bool:
    if choice is not None:
        return choice
    return sys.stderr.isatty()


def _provider_factory(name: str | None) -> tuple[Any, str]:
    """(a picklable provider factory or None, the label for reports) for ``--provider``."""
    if name is None or name == "fallback":
        return None, "fallback"
    from functools import partial

    from tinyjuice.providers import make_provider
    from tjui.config import ConfigError, Overrides, resolve_provider_config

    try:
        config = resolve_provider_config(Overrides(provider=name))
    except ConfigError as exc:
        fail(str(exc))
    if config is None:
        return None, "fallback"
    return partial(make_provider, config), f"provider:{config.name}"


#: With a summary provider the work waits on the network: this many workers per core.
NETWORK_WORKERS_PER_CORE = 4


def worker_count(requested: int | None, *, network_bound: bool) -> tuple[int, int | None]:
    """(workers to start, the cap when ``requested`` was lowered to it, else None).

    The default is one worker per core. More processes than cores only slow a CPU-bound
    run down, so ``requested`` is capped at the core count — or at
    ``NETWORK_WORKERS_PER_CORE`` × cores when a summary provider is configured and
    workers mostly wait for its answers.
    """
    cores = os.cpu_count() or 1
    if requested is None:
        return cores, None
    cap = cores * NETWORK_WORKERS_PER_CORE if network_bound else cores
    return (cap, cap) if requested > cap else (requested, None)


def _warn(message: str) -> None:
    click.echo(f"tjui: warning: {message}", err=True)


def _compacted_part(data: dict[str, Any]) -> str:
    """How many trajectories were rewritten, and whether they now fit the target."""
    compacted, over = data["compacted"], data["compacted_still_over_limit"]
    part = f"compacted {compacted:,} of {data['trajectories']:,} trajectories"
    if over == compacted > 0:
        return part + f" (none fits the target: {over:,} still over it)"
    if over:
        return part + f" ({over:,} still over the target)"
    return part + (" (all fit the target)" if compacted else "")


def _summary_line(data: dict[str, Any]) -> str:
    before, after = data["tokens_before"], data["tokens_after"]
    if data["trajectories"]:
        parts = [
            _compacted_part(data),
            f"{data['skipped_under_target']:,} already under the target",
        ]
    else:
        parts = ["no trajectories"]
    if data["unchanged_over_limit"]:
        parts.append(
            f"{data['unchanged_over_limit']:,} over the target and left unchanged"
            " (nothing could be cut)"
        )
    if data["summary_failed"]:
        parts.append(f"{data['summary_failed']:,} left unchanged after a summary failure")
    bad_lines = data["bad_inputs"] - data["bad_files"]
    if bad_lines:
        parts.append(f"{bad_lines:,} bad line(s) written through unchanged")
    if data["bad_files"]:
        parts.append(f"{data['bad_files']:,} bad file(s) written through unchanged")
    # ~ marks an estimate: figures counted only where they decided the compression.
    est_before = "~" if data["tokens_before_kind"] == "estimated" else ""
    est_after = "~" if data["tokens_after_kind"] == "estimated" else ""
    tokens = f"tokens {est_before}{before:,} → {est_after}{after:,}"
    if before:  # no percentage of nothing
        tokens += f" ({est_before}−{100 * (before - after) / before:.1f}%)"
    rate = data.get("trajectories_per_s")
    speed = f"{data.get('wall_s', 0):.1f} s" + (f", {rate:,.0f} trajectories/s" if rate else "")
    return "; ".join(parts) + f"\n{tokens}; {speed} on {data['workers']} worker(s)"


def _abort_on_auth(run: Any, data: dict[str, Any] | None) -> NoReturn:
    """The provider refused the credentials: say so and exit 1, like ``compress``."""
    if data is not None:
        emit_json(data)
    where = ""
    if run.partial is not None:
        where = f"; {run.partial} holds the {run.partial_lines:,} lines finished before it"
    fail(
        f"summary provider auth failed — {run.aborted}; the run was stopped, nothing more"
        f" was summarised{where} (check the provider's API key: `tjui config`)",
        1,
    )


# Long on purpose: a click command checking its option combinations in one place; the
# run itself is core's (tinyjuice.dataset.run_batch).
@click.command("batch")
@click.argument(
    "inputs",
    metavar="IN...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@click.option(
    "--target-tokens",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="Token target per trajectory (system prompt and tool schemas included).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    metavar="OUT",
    help="Output file (one input file) or directory (a directory, or several inputs).",
)
@click.option(
    "--profile",
    type=click.Choice(["hermes", "rules"]),
    default="hermes",
    show_default=True,
    help="hermes: summarise just enough of the middle; rules: seed-001 rules first, "
    "then summarise only if still over the target.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    metavar="K",
    help="Worker processes (default: all cores; at most the core count, or 4× it with"
    " --provider). Output is identical for any K.",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    metavar="N",
    help="Trailing turns of each trajectory kept verbatim.",
)
@click.option(
    "--summary-tokens",
    type=click.IntRange(min=64),
    default=750,
    show_default=True,
    metavar="N",
    help="Tokens reserved for the summary turn that replaces the compressed span.",
)
@click.option(
    "--provider",
    "provider_name",
    default=None,
    metavar="NAME",
    help="Summarise with this configured provider (see `tjui config`); default: the "
    "deterministic fallback summary, no model.",
)
@click.option(
    "--rough", is_flag=True, help="Count with the chars/4 estimate instead of the tokenizer."
)
@click.option(
    "--exact",
    is_flag=True,
    help="Count every message exactly (otherwise the middle of a trajectory over the"
    " target is estimated: its tokens before are marked ~). The output is the same.",
)
@click.option(
    "--metrics",
    "metrics_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write one JSON line of metrics per trajectory to FILE.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on stderr (default: when stderr is a terminal).",
)
@click.option(
    "--policy",
    default=None,
    metavar="P",
    help="Also end each trajectory below this trigger policy's threshold on its model's"
    " window (hermes, claude-code, codex, … as for explain; default: the format's own"
    " agent's, as compress and explain pick it); the lower target wins.",
)
@click.option(
    "--whole-file",
    is_flag=True,
    help="Compress every message, the history before an agent's last compaction"
    " included (default: the live context).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the aggregate metrics as JSON.")
def batch(
    inputs: tuple[Path, ...],
    target_tokens: int,
    output: Path,
    profile: str,
    workers: int | None,
    keep_last: int,
    summary_tokens: int,
    provider_name: str | None,
    rough: bool,
    exact: bool,
    metrics_path: Path | None,
    progress: bool | None,
    policy: str | None,
    whole_file: bool,
    as_json: bool,
) -> None:
    """Compress trajectories to a token target: JSONL datasets (ShareGPT, OpenAI
    messages, … one trajectory per line) and directories of transcript files.

    Per trajectory: count tokens; skip it when already under the target; otherwise keep
    the first system/user/assistant/tool turns, the last N turns and the latest user ask,
    and replace just enough of the middle with one summary turn (the deterministic
    fallback summary, or --provider NAME's). Tool calls never lose their results; a
    network failure of the provider leaves the trajectory unchanged, and an auth failure
    (a rejected key) stops the run with exit status 1. Output keeps the input's format, one line per input line, in
    order; bad lines are reported and written through unchanged. A dataset is written
    to OUT.partial and renamed to OUT when complete; Ctrl-C stops after the current
    line and leaves OUT.partial with every line finished so far.
    """
    from tinyjuice.dataset import run_batch
    from tinyjuice.fit import BatchOptions
    from tinyjuice.options import Profile
    from tinyjuice.tokens import default_counter

    jobs = _planned_jobs(inputs, output, metrics_path)
    check_policy(policy)
    options = BatchOptions(
        target_tokens=target_tokens,
        keep_last=keep_last,
        summary_tokens=summary_tokens,
        profile=Profile(profile),
        policy=policy,
        whole_file=whole_file,
    )
    factory, summary_label = _provider_factory(provider_name)
    n_workers = _workers(workers, network_bound=factory is not None)
    items = _ItemReport(_Progress(sum(j.size for j in jobs), _progress_enabled(progress)))
    try:
        items.open_metrics(metrics_path)
    except OSError as exc:
        fail(f"could not write --metrics {metrics_path}: {exc}")
    stop = _StopFlag()
    stop.install()
    try:
        run = run_batch(
            jobs,
            options,
            workers=n_workers,
            rough=rough,
            exact=exact,
            on_item=items,
            should_stop=lambda: stop.requested,
            provider_factory=factory,
        )
    except OSError as exc:
        fail(f"could not write the output: {exc}", 1)
    finally:
        stop.restore()
        items.close()
    data = run.to_dict()
    data["output"] = str(output)
    data["target_tokens"] = target_tokens
    data["profile"] = profile
    data["keep_last"] = keep_last
    data["summary"] = summary_label
    data["counter"] = default_counter(exact=not rough).name
    if run.aborted is not None:
        _abort_on_auth(run, data if as_json else None)
    if as_json:
        emit_json(data)
    else:
        click.echo(_summary_line(data))
        if run.outputs and not run.interrupted:
            where = run.outputs[0] if len(run.outputs) == 1 else f"{len(run.outputs)} files"
            click.echo(f"wrote {where}")
    if run.interrupted:
        click.echo(f"tjui: {_interrupted(run)}; run again to process everything", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _planned_jobs(inputs: tuple[Path, ...], output: Path, metrics_path: Path | None) -> list[Job]:
    """The run's jobs (input → output), or a clear error: bad inputs, or a metrics file
    that would overwrite one of them."""
    from tinyjuice.dataset import BatchInputError, plan_jobs

    try:
        jobs = plan_jobs(inputs, output)
    except BatchInputError as exc:
        fail(str(exc))
    if metrics_path is not None:
        resolved = metrics_path.resolve()
        if any(resolved == j.source.resolve() or resolved == j.target.resolve() for j in jobs):
            fail(f"--metrics {metrics_path} would overwrite an input or an output")
    return jobs


def _workers(requested: int | None, *, network_bound: bool) -> int:
    """The worker processes to start, warning when ``requested`` was capped."""
    n_workers, capped = worker_count(requested, network_bound=network_bound)
    if capped is not None:
        cores = os.cpu_count() or 1
        why = (
            f"{NETWORK_WORKERS_PER_CORE} per core × {cores} core(s) with a summary provider"
            if network_bound
            else f"{cores} core(s): more processes than cores only slow a CPU-bound run"
        )
        _warn(f"--workers {requested} capped at {capped} ({why})")
    return n_workers


class _ItemReport:
    """``run_batch``'s ``on_item``: advances the progress bar, reports the first bad
    lines (then only counts them) and writes each trajectory's metrics line."""

    def __init__(self, bar: _Progress) -> None:
        self.bar = bar
        self.bad_seen = 0
        self.metrics: IO[bytes] | None = None

    def open_metrics(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.metrics = path.open("wb")

    def __call__(self, job: Job, metrics: Any, consumed: int) -> None:
        if metrics is not None:
            if metrics.status.value == "bad_input":
                self.bad_seen += 1
                if self.bad_seen <= _SHOWN_BAD:
                    line = metrics.line
                    where = f"{job.source}, line {line}" if line else str(job.source)
                    self.bar.log(
                        f"tjui: warning: {where}: {metrics.error} (written through unchanged)"
                    )
            if self.metrics is not None:
                record = {"source": str(job.source), **metrics.to_dict()}
                self.metrics.write(orjson.dumps(record) + b"\n")
        self.bar.advance(consumed, metrics is not None)

    def close(self) -> None:
        self.bar.stop()
        if self.metrics is not None:
            self.metrics.close()
        if self.bad_seen > _SHOWN_BAD:
            _warn(f"{self.bad_seen - _SHOWN_BAD:,} more bad line(s) or file(s) not shown")


def _interrupted(run: Any) -> str:
    """What an interrupted run finished, and where it left it."""
    done = run.summary.trajectories + run.summary.bad_inputs
    message = f"interrupted after {done:,} trajectories ({run.items:,} lines/files)"
    if run.partial is not None:
        message += (
            f"; {run.partial} holds {run.partial_lines:,} complete lines, through line "
            f"{run.stopped_line:,} of {run.stopped_source}"
        )
    if run.outputs:
        message += f"; {len(run.outputs):,} output file(s) finished"
    return message
