"""The ``tjui`` command line.

``tjui [FILE]`` opens the inspector (the session browser when FILE is omitted);
subcommands work headless and most take ``--json``. Bad input is reported as one
clear line on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path
from typing import Any

import click

from tinyjuice.formats import FORMAT_NAMES, WRITABLE_FORMATS, LoadError
from tjui.clikit import (
    boundary_options,
    context_window_option,
    emit_json,
    ensure_parent_dir,
    fail,
    format_option,
    lenient_option,
    load_or_fail,
    output_option,
    session_option,
)
from tjui.commands.store import commit_from_cli, commit_options, echo_commit, load_for_commit
from tjui.commands.summaries import provider_option, resolve_provider

_GROUP_FLAGS = ("--help", "-h", "--version")

#: The commands that work without a terminal, named when the inspector cannot start.
HEADLESS_COMMANDS = ("inspect", "compress", "explain", "summarize", "review")


def _looks_like_command(word: str) -> bool:
    """A bare word (no path separator, no dot or extension): a command name, not a file."""
    if not word or word.startswith("-"):
        return False
    return not any(c in word for c in {"/", ".", os.sep, os.altsep or "/"})


class _DefaultToOpen(click.Group):
    """A group where ``tjui FILE`` (or bare ``tjui``) means ``tjui open [FILE]``.

    A first argument that is neither a command nor an existing path but looks like a
    command name (``tjui inspectt``) is reported as a mistyped command, not opened.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in _GROUP_FLAGS):
            if args and _looks_like_command(args[0]) and not Path(args[0]).exists():
                self._no_such_command(args[0])
            args = ["open", *args]
        return super().parse_args(ctx, args)

    def _no_such_command(self, word: str) -> None:
        names = sorted(name for name, cmd in self.commands.items() if not cmd.hidden)
        close = difflib.get_close_matches(word, names, n=1)
        if close:
            fail(f"No such command '{word}'. Did you mean '{close[0]}'?")
        fail(
            f"No such command '{word}' (and no such file). Commands: {', '.join(names)};"
            " to open a transcript, give its path"
        )


def _interactive() -> bool:
    """Whether the inspector can run: stdin and stdout are both terminals."""
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.group(cls=_DefaultToOpen, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tjui", prog_name="tjui")
def main() -> None:
    """tjui — see and shape what fills an LLM agent's context window.

    Run `tjui [FILE]` to open the inspector on a transcript, or `tjui` alone for a
    browser of every agent session on this machine (`tjui demo`: the bundled demo). Formats: openai, anthropic, hermes, claude-code, codex,
    sharegpt, swe-agent — detected automatically.
    """
    _check_tokenizer_env()


def _check_tokenizer_env() -> None:
    """Warn about tokenizer settings that would otherwise be ignored without a word."""
    mode = os.environ.get("TJUI_TOKENIZER", "")
    if mode not in ("", "rough", "exact"):
        click.echo(
            f"tjui: warning: TJUI_TOKENIZER={mode!r} is not 'rough' or 'exact'; ignored", err=True
        )
    wanted = os.environ.get("TJUI_ENCODING", "")
    if wanted and mode != "rough":
        try:
            import tiktoken
        except ImportError:
            return
        known = set(tiktoken.list_encoding_names())
        if wanted not in known:
            click.echo(
                f"tjui: warning: TJUI_ENCODING={wanted!r} is not a tiktoken encoding here"
                f" ({', '.join(sorted(known))}); using the default",
                err=True,
            )


@main.command("open", hidden=True)
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@format_option
@session_option
@context_window_option
@click.option("--model", default=None, metavar="M", help="Override the model name.")
@click.option(
    "--warn-at",
    default=None,
    metavar="P%",
    help="Notify when the followed session's live context reaches P% of the window.",
)
def open_cmd(
    file: Path | None,
    fmt: str | None,
    session: str | None,
    context_window: int | None,
    model: str | None,
    warn_at: str | None,
) -> None:
    """Open the inspector on FILE (the session browser when FILE is omitted)."""
    from tjui.commands.watch import parse_percent

    level = parse_percent(warn_at)
    _need_terminal()
    from tjui.app import run_app

    run_app(
        file, fmt=fmt, session=session, context_window=context_window, model=model, warn_at=level
    )


@main.command("demo")
@context_window_option
def demo_cmd(context_window: int | None) -> None:
    """Open the inspector on the bundled demo session."""
    _need_terminal()
    from tjui.app import run_app
    from tjui.paths import demo_session

    run_app(demo_session(), context_window=context_window)


def _need_terminal() -> None:
    """Refuse (exit status 2) when stdin or stdout is not a terminal."""
    if not _interactive():
        streams = [n for n, s in (("stdin", sys.stdin), ("stdout", sys.stdout)) if not s.isatty()]
        commands = [f"tjui {c} FILE" for c in HEADLESS_COMMANDS]
        fail(
            f"the inspector needs a terminal ({' and '.join(streams) or 'stdin/stdout'}"
            f" {'is' if len(streams) == 1 else 'are'} not a TTY); without one, use "
            + ", ".join(commands[:-1])
            + f" or {commands[-1]} (see tjui --help)"
        )


@main.command("inspect")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@format_option
@session_option
@lenient_option
@context_window_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def inspect_cmd(
    file: Path,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    context_window: int | None,
    as_json: bool,
) -> None:
    """Summarise a transcript: counts, tokens by role and kind, past compactions."""
    from dataclasses import replace

    from tinyjuice.report import DEFAULT_CONTEXT_WINDOW
    from tinyjuice.stats import compute_stats

    transcript = load_or_fail(file, fmt, session=session, lenient=lenient)
    stats = compute_stats(transcript, context_window=context_window)
    if stats.context_window is None:
        # The window compress and explain judge against when nothing names one.
        stats = replace(
            stats, context_window=DEFAULT_CONTEXT_WINDOW, context_window_source="default"
        )
    if as_json:
        emit_json(stats.to_dict())
        return
    from tjui.render import print_inspect

    print_inspect(stats)


@main.command("compress")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@boundary_options("compress")
@click.option(
    "--profile",
    type=click.Choice(["hermes", "rules"]),
    default="hermes",
    show_default=True,
    help="hermes: digests + handoff summary; rules: seed 001's rules.",
)
@click.option("--focus", default=None, metavar="TEXT", help="Focus topic for the summary.")
@context_window_option
@click.option("--force", is_flag=True, help="Compress even below the threshold or in cooldown.")
@click.option(
    "--dry-run", is_flag=True, help="Only show where the boundary falls and the zone sizes."
)
@output_option(
    "Write the compacted transcript to this file (never over FILE); missing directories"
    " are created. With --commit: the export or child target."
)
@click.option(
    "--to",
    "to_format",
    type=click.Choice(FORMAT_NAMES),
    default=None,
    help="Output format (default: the input's, when writable).",
)
@format_option
@session_option
@lenient_option
@commit_options
@provider_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def compress_cmd(
    file: Path,
    keep_last: int | None,
    at: int | None,
    profile: str,
    focus: str | None,
    context_window: int | None,
    force: bool,
    dry_run: bool,
    output: Path | None,
    to_format: str | None,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    do_commit: bool,
    commit_mode: str | None,
    provider: str | None,
    as_json: bool,
) -> None:
    """Compact a transcript with tinyjuice and report what changed.

    Without --keep-last/--at the agent-style policy decides (threshold, tail budget,
    anchors); with them you choose the boundary. FILE is modified only with --commit
    (in place: the original is archived first; `tjui undo` restores it).
    """
    from tinyjuice.formats import ConversionLoss
    from tinyjuice.pipeline import compress, plan_boundary
    from tinyjuice.report import CompactionOptions, Profile

    if keep_last is not None and at is not None:
        fail("use either --keep-last or --at, not both")
    if commit_mode is not None and not do_commit:
        fail("--mode needs --commit")
    if do_commit and dry_run:
        fail("--commit cannot be combined with --dry-run")
    loaded = None
    if do_commit:
        loaded = load_for_commit(file, fmt, session=session, lenient=lenient)
        transcript = loaded.transcript
    else:
        transcript = load_or_fail(file, fmt, session=session, lenient=lenient)
    out_format = to_format or transcript.format
    if output is not None and not dry_run and not do_commit:
        if output.resolve() == file.resolve():
            fail(f"refusing to write over the input {file}; choose another -o path")
        if out_format not in WRITABLE_FORMATS:
            fail(
                f"cannot write {out_format!r} transcripts; pass --to with one of: "
                + ", ".join(WRITABLE_FORMATS)
            )
    options = CompactionOptions(
        profile=Profile(profile),
        keep_last=keep_last,
        boundary=at,
        focus_topic=focus,
        context_window=context_window,
        force=force,
    )
    if dry_run:
        plan = plan_boundary(transcript, options)
        data = plan_to_dict(plan)
        if as_json:
            emit_json(data)
        else:
            from tjui.render import print_plan

            print_plan(data)
        return
    # A model is used only when asked for: plain `tjui compress` stays deterministic.
    summarizer = resolve_provider(provider) if provider is not None else None
    result = compress(transcript, options, summarizer)
    report = result.report.to_dict()
    written: str | None = None
    losses: list[ConversionLoss] = []
    written_format: str | None = None
    if loaded is not None:
        # With --commit, -o/--to name the export or child target; the store checks them.
        if output is not None and result.changed:
            ensure_parent_dir(output)
        commit = commit_from_cli(
            result, loaded, mode=commit_mode, output=output, to_format=to_format
        )
        report["commit"] = commit
        if commit.get("committed"):
            written, written_format = commit.get("target_path"), commit.get("target_format")
    elif output is not None and result.changed:
        losses = _write_output(result.transcript, output, out_format, warn=not as_json)
        written, written_format = str(output), out_format
    report["output"] = {"path": written, "format": written_format, "dropped": _dropped(losses)}
    if as_json:
        emit_json(report)
    else:
        from tjui.render import print_report

        print_report(report)
        if loaded is not None:
            echo_commit(report["commit"])
    if output is not None and loaded is None and written is None:
        # A no-op (below the threshold, nothing to compress) or an abort writes nothing.
        left = "left as it was" if output.exists() else "not created"
        click.echo(
            f"not written: {report['status']}: {report['reason']} ({output} {left})", err=True
        )
    if result.report.status.value == "aborted":
        sys.exit(1)


def plan_to_dict(plan: Any) -> dict[str, Any]:
    return {
        "status": "noop" if plan.no_op else "planned",
        "reason": plan.reason,
        "boundary": {
            "start": plan.start,
            "end": plan.end,
            "requested": plan.requested,
            "snap_reason": plan.snap_reason,
        },
        "zones": {
            "head": {"messages": plan.head_messages, "tokens": plan.head_tokens},
            "middle": {"messages": plan.middle_messages, "tokens": plan.middle_tokens},
            "tail": {"messages": plan.tail_messages, "tokens": plan.tail_tokens},
        },
        "total": {"messages": plan.total_messages, "tokens": plan.total_tokens},
        "projected_tokens": plan.projected_tokens,
        "projection": plan.projection,
        "summary_budget": plan.summary_budget,
        "budget": {
            "context_window": plan.context_window,
            "context_window_source": plan.context_window_source,
            "effective_window": plan.budget.effective_window,
            "threshold_tokens": plan.budget.threshold_tokens,
            "threshold_rule": plan.budget.rule.value,
            "explanation": plan.budget.explanation,
        },
    }


def _write_output(transcript: Any, output: Path, fmt: str, *, warn: bool) -> list[Any]:
    """Save ``transcript`` to ``output`` in ``fmt`` (parents created); what it dropped.

    With ``warn`` each loss is also said on stderr."""
    from tinyjuice.formats import SaveError, conversion_losses, save

    ensure_parent_dir(output)
    try:
        losses = conversion_losses(transcript, fmt)
        save(transcript, output, fmt)
    except (SaveError, OSError) as exc:
        fail(f"could not write {output}: {exc}")
    if warn:
        for loss in losses:
            click.echo(f"tjui: warning: {fmt} output drops {loss}", err=True)
    return losses


def _dropped(losses: list[Any]) -> list[dict[str, Any]]:
    return [{"kind": x.kind, "count": x.count, "message": x.message} for x in losses]


@main.command("convert")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--to",
    "to_format",
    required=True,
    type=click.Choice(WRITABLE_FORMATS),
    help="The format to write.",
)
@output_option("Write the converted transcript to this file (never over FILE).")
@format_option
@session_option
@lenient_option
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def convert_cmd(
    file: Path,
    to_format: str,
    output: Path | None,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    as_json: bool,
) -> None:
    """Write FILE in another format, unchanged otherwise (no compaction).

    Says on stderr what the target format cannot hold (ShareGPT has no images, …); an
    OUT ending in .jsonl gets one compact record per line.
    """
    if output is None:
        fail("convert needs -o OUT (the file to write)")
    transcript = load_or_fail(file, fmt, session=session, lenient=lenient)
    if output.resolve() == file.resolve():
        fail(f"refusing to write over the input {file}; choose another -o path")
    losses = _write_output(transcript, output, to_format, warn=not as_json)
    if as_json:
        emit_json(
            {
                "path": str(output),
                "format": to_format,
                "source_format": transcript.format,
                "messages": len(transcript.messages),
                "dropped": _dropped(losses),
            }
        )
        return
    click.echo(
        f"wrote {output} ({to_format}, {len(transcript.messages):,} messages from"
        f" {transcript.format}); the input is unchanged"
    )


@main.command("sessions")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_cmd(file: Path, as_json: bool) -> None:
    """List the sessions in a Hermes state.db."""
    from tinyjuice.formats import hermes

    try:
        infos = hermes.list_sessions(file)
    except LoadError as exc:
        fail(str(exc))
    if as_json:
        emit_json([_asdict(i) for i in infos])
        return
    from tjui.render import print_sessions

    print_sessions(infos)


def _asdict(value: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(value)


def _register_commands() -> None:
    """Commands that live in their own modules (tjui/commands/)."""
    from tjui.commands.batch import batch
    from tjui.commands.explain import explain_cmd
    from tjui.commands.ls import ls_cmd
    from tjui.commands.store import history_cmd, recover_cmd, undo_cmd
    from tjui.commands.summaries import config_cmd, review_cmd, summarize_cmd
    from tjui.commands.watch import watch_cmd

    for command in (summarize_cmd, review_cmd, config_cmd):
        main.add_command(command)
    main.add_command(explain_cmd)
    main.add_command(ls_cmd)
    main.add_command(watch_cmd)
    main.add_command(batch)
    main.add_command(history_cmd)
    main.add_command(undo_cmd)
    main.add_command(recover_cmd)


_register_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
