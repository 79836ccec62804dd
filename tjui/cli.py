"""The ``tjui`` command line.

``tjui [FILE]`` opens the inspector (the session browser when FILE is omitted);
subcommands work headless and most take ``--json``. Bad input is reported as one
clear line on stderr with exit status 2, never a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from tinyjuice.formats import WRITABLE_FORMATS, LoadError
from tjui.clikit import (
    boundary_options,
    check_policy,
    commit_options,
    context_window_option,
    emit_json,
    ensure_parent_dir,
    fail,
    format_option,
    lenient_option,
    live_split_or_fail,
    load_or_fail,
    output_option,
    policy_option,
    provider_option,
    require_messages,
    session_option,
    whole_file_option,
)

if TYPE_CHECKING:  # imported where used: `tjui --help` loads none of them
    from tinyjuice.live import LiveSplit
    from tinyjuice.report import CompactionResult
    from tinyjuice.store import LoadedSource

_GROUP_FLAGS = ("--help", "-h", "--version")

#: The commands that work without a terminal, named when the inspector cannot start.
HEADLESS_COMMANDS = ("inspect", "compress", "explain", "summarize", "review")


def _looks_like_command(word: str) -> bool:
    """A bare word (no path separator, no dot or extension): a command name, not a file."""
    if not word or word.startswith("-"):
        return False
    return not any(c in word for c in {"/", ".", os.sep, os.altsep or "/"})


#: Commands whose modules are imported only when they run (start-up time): module,
#: attribute, and the first paragraph of their help for `tjui --help` (a test checks it
#: is theirs). The commands defined here import what they need inside their functions.
_LAZY: dict[str, tuple[str, str, str]] = {
    "batch": (
        "tjui.commands.batch",
        "batch",
        "Compress trajectories to a token target: JSONL datasets (ShareGPT, OpenAI"
        " messages, … one trajectory per line) and directories of transcript files.",
    ),
    "cache": (
        "tjui.commands.cache",
        "cache_group",
        "The analysis cache: exact token counts and results kept between runs.",
    ),
    "config": (
        "tjui.commands.summaries",
        "config_cmd",
        "Show the effective summary-provider configuration and where each value came from.",
    ),
    "explain": (
        "tjui.commands.explain",
        "explain_cmd",
        "Why compaction fired: each past compaction, the threshold and its rule, and now.",
    ),
    "history": (
        "tjui.commands.store",
        "history_cmd",
        "List commits (newest first), or only those of FILE.",
    ),
    "ls": (
        "tjui.commands.ls",
        "ls_cmd",
        "List the agent sessions on this machine, newest first.",
    ),
    "recover": (
        "tjui.commands.store",
        "recover_cmd",
        "Write an archived copy (by its sha256, or its first 8+ characters) to a file.",
    ),
    "review": (
        "tjui.commands.summaries",
        "review_cmd",
        "Review the summaries an agent already wrote in FILE: one scorecard per compaction.",
    ),
    "summarize": (
        "tjui.commands.summaries",
        "summarize_cmd",
        "Write the handoff summary for FILE's middle and review it. Nothing is saved.",
    ),
    "undo": (
        "tjui.commands.store",
        "undo_cmd",
        "Restore what a commit replaced, byte for byte (the newest commit by default).",
    ),
    "watch": (
        "tjui.commands.watch",
        "watch_cmd",
        "Follow FILE as the agent writes it: live tokens, % of the window, turns to the next"
        " compaction.",
    ),
}


class _DefaultToOpen(click.Group):
    """A group where ``tjui FILE`` (or bare ``tjui``) means ``tjui open [FILE]``.

    A first argument that is neither a command nor an existing path but looks like a
    command name (``tjui inspectt``) is reported as a mistyped command, not opened.
    The commands of :data:`_LAZY` are imported when first looked up.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _LAZY:
            import importlib

            module, attr, _ = _LAZY[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's command list, with the lazy commands' help taken from :data:`_LAZY`."""
        names = [n for n in self.list_commands(ctx) if n in _LAZY or not self.commands[n].hidden]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows: list[tuple[str, str]] = []
        for name in names:
            cmd = self.commands.get(name)
            if cmd is None:
                # A stand-in with the same help shortens it exactly as the command would.
                stand_in = click.Command(name, help=_LAZY[name][2])
                rows.append((name, stand_in.get_short_help_str(limit)))
            else:
                rows.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        """The command, ending quietly with status 141 (128 + SIGPIPE, as a shell
        reports ``seq 9 | head -1``) when whatever reads its output stops early:
        click's own handling exits 1, which this tool reserves for a failed summary or a
        refused commit."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _quiet_closed_stdout()
            sys.exit(EXIT_CLOSED_PIPE)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = args and (args[0] in self.commands or args[0] in _LAZY)
        if not args or (not known and args[0] not in _GROUP_FLAGS):
            if args and _looks_like_command(args[0]) and not Path(args[0]).exists():
                self._no_such_command(args[0])
            args = ["open", *args]
        return super().parse_args(ctx, args)

    def _no_such_command(self, word: str) -> None:
        import difflib

        names = sorted({*_LAZY, *(name for name, cmd in self.commands.items() if not cmd.hidden)})
        close = difflib.get_close_matches(word, names, n=1)
        if close:
            fail(f"No such command '{word}'. Did you mean '{close[0]}'?")
        fail(
            f"No such command '{word}' (and no such file). Commands: {', '.join(names)};"
            " to open a transcript, give its path"
        )


def _is_tty(name: str) -> bool:
    stream: TextIO = getattr(sys, name)
    return stream.isatty()


def _not_terminals() -> list[str]:
    """The standard streams that are not terminals (the inspector needs all three:
    with stderr redirected, Textual would draw the whole UI into that file)."""
    return [name for name in ("stdin", "stdout", "stderr") if not _is_tty(name)]


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


#: The status of a command whose reader closed its output early (128 + SIGPIPE).
EXIT_CLOSED_PIPE = 141


def _quiet_closed_stdout() -> None:
    """Point standard output at the null device, so the interpreter's final flush of
    what could not be written does not fail again on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@click.group(cls=_DefaultToOpen, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tjui", prog_name="tjui")
def main() -> None:
    """tjui — see and shape what fills an LLM agent's context window.

    Run `tjui [FILE]` to open the inspector on a transcript, or `tjui` alone for a
    browser of every agent session on this machine (`tjui demo`: the bundled demo).
    Formats: openai, anthropic, hermes, claude-code, codex, sharegpt, swe-agent,
    gemini-cli, cline, opencode, aider — detected automatically.
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
@whole_file_option
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
    whole_file: bool,
    warn_at: str | None,
) -> None:
    """Open the inspector on FILE (the session browser when FILE is omitted)."""
    from tjui.commands.watch import parse_percent

    level = parse_percent(warn_at)
    _need_terminal()
    from tjui.app import run_app

    run_app(
        file,
        fmt=fmt,
        session=session,
        context_window=context_window,
        model=model,
        whole_file=whole_file,
        warn_at=level,
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
    """Refuse (exit status 2) when stdin, stdout or stderr is not a terminal."""
    streams = _not_terminals()
    if streams:
        commands = [f"tjui {c} FILE" for c in HEADLESS_COMMANDS]
        message = (
            f"the inspector needs a terminal ({_and(streams)}"
            f" {'is' if len(streams) == 1 else 'are'} not a TTY); without one, use "
            + ", ".join(commands[:-1])
            + f" or {commands[-1]} (see tjui --help)"
        )
        if streams == ["stderr"]:
            # `tjui 2>err.log`: the message goes to the file as every error does, and to
            # the terminal the user is looking at.
            click.echo(f"tjui: error: {message}")
        fail(message)


@main.command("inspect")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@format_option
@session_option
@lenient_option
@context_window_option
@whole_file_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
def inspect_cmd(
    file: Path,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    context_window: int | None,
    whole_file: bool,
    as_json: bool,
) -> None:
    """Summarise a transcript: the live context (what the agent sends next) and the
    history before its last compaction, counts, tokens by role and kind, compactions,
    subagents. The other figures are for the whole file."""
    from dataclasses import replace

    from tinyjuice.model_limits import DEFAULT_CONTEXT_WINDOW
    from tinyjuice.stats import compute_stats
    from tinyjuice.subagents import folder_fingerprint, list_subagents
    from tinyjuice.tokens import default_counter
    from tjui.cached import CachedSource

    source = CachedSource(file, fmt, session=session, lenient=lenient)
    params = {
        "path": str(file),
        "context_window": context_window,
        "whole_file": whole_file,
        "subagents": folder_fingerprint(file),
    }
    if as_json and (cached := source.result("inspect", params)) is not None:
        emit_json(cached)
        return
    counter = default_counter()
    stats = compute_stats(
        source.transcript,
        counter,
        tokens=source.tokens(counter),
        context_window=context_window,
        whole_file=whole_file,
    )
    stats = replace(stats, subagents=[s.to_dict() for s in list_subagents(source.transcript)])
    if stats.context_window is None:
        # The window compress and explain judge against when nothing names one.
        stats = replace(
            stats, context_window=DEFAULT_CONTEXT_WINDOW, context_window_source="default"
        )
    if as_json:
        data = stats.to_dict()
        source.remember("inspect", params, data)
        emit_json(data)
        return
    from tjui.render import print_inspect

    print_inspect(stats)


# Long on purpose: a click command checking its option combinations in one place, then
# handing off to core (loading is _load_live, committing commit_from_cli).
@main.command("compress")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@boundary_options("compress")
@click.option(
    "--profile",
    type=click.Choice(["hermes", "rules"]),
    default="hermes",
    show_default=True,
    help="hermes: digests + handoff summary; rules: six zero-inference rules.",
)
@click.option("--focus", default=None, metavar="TEXT", help="Focus topic for the summary.")
@context_window_option
@click.option("--force", is_flag=True, help="Compress even below the threshold or in cooldown.")
@click.option(
    "--dry-run", is_flag=True, help="Only show where the boundary falls and the zone sizes."
)
@click.option(
    "--exact",
    is_flag=True,
    help="Count every message exactly (--dry-run estimates the middle otherwise).",
)
@output_option(
    "Write the compacted transcript to this file (never over FILE); missing directories"
    " are created. With --commit: the export or child target."
)
@click.option(
    "--to",
    "to_format",
    type=click.Choice(WRITABLE_FORMATS),
    default=None,
    help="Output format (default: the input's, when writable).",
)
@format_option
@session_option
@lenient_option
@whole_file_option
@policy_option
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
    exact: bool,
    output: Path | None,
    to_format: str | None,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    whole_file: bool,
    policy: str | None,
    do_commit: bool,
    commit_mode: str | None,
    provider: str | None,
    as_json: bool,
) -> None:
    """Compact a transcript with tinyjuice and report what changed.

    Without --keep-last/--at the agent's policy decides (threshold, tail budget,
    anchors); with them you choose the boundary. Only the live context is compacted
    (what the agent sends after its last compaction; --whole-file: every message);
    --at counts from the start of the file. FILE is modified only with --commit (in
    place: the original is archived first and the history before the last compaction
    is kept as it was; `tjui undo` restores it).
    """
    from tinyjuice.options import CompactionOptions, Profile
    from tinyjuice.pipeline import compress

    _check_compress_flags(keep_last, at, do_commit, commit_mode, dry_run)
    check_policy(policy)
    from tinyjuice.tokens import default_counter
    from tjui.cached import CachedSource

    source = None
    plan_params = {
        "path": str(file),
        "keep_last": keep_last,
        "at": at,
        "profile": profile,
        "policy": policy,
        "context_window": context_window,
        "force": force,
        "focus": focus,
        "exact": exact,
        "whole_file": whole_file,
        # The plan's shape: a plan remembered before it said whether compress would cut
        # now ("decision") is not read back.
        "shape": 2,
    }
    if not do_commit:
        source = CachedSource(file, fmt, session=session, lenient=lenient)
        if dry_run and (cached := source.result("plan", plan_params)) is not None:
            _emit_plan(cached, as_json)
            return
    loaded, split, at = _load_live(
        file, fmt, session, lenient, do_commit, whole_file, at, source=source
    )
    transcript = split.live
    out_format = to_format or transcript.format
    if output is not None and not dry_run and not do_commit:
        _check_output(output, file, out_format)
    options = CompactionOptions(
        profile=Profile(profile),
        keep_last=keep_last,
        boundary=at,
        focus_topic=focus,
        context_window=context_window,
        force=force,
        policy=policy,
        # A commit writes the count before into the file (Claude Code's preTokens).
        exact_counts=exact or do_commit,
    )
    counter = default_counter()
    if dry_run:
        data = _dry_run(transcript, options, counter, source, split, exact=exact)
        data["live"] = _live_dict(split)
        if source is not None:
            source.remember("plan", plan_params, data)
        _emit_plan(data, as_json)
        return
    tokens = _live_tokens(source.tokens(counter), split) if source is not None else None
    # A model is used only when asked for: plain `tjui compress` stays deterministic.
    summarizer = None
    if provider is not None:
        from tjui.commands.summaries import resolve_provider

        summarizer = resolve_provider(provider)
    result = compress(transcript, options, summarizer, counter=counter, tokens=tokens)
    report = result.report.to_dict()
    report["live"] = _live_dict(split)
    if loaded is not None:
        commit = report["commit"] = _commit(result, loaded, commit_mode, output, to_format, split)
        committed = bool(commit.get("committed"))
        report["output"] = {
            "path": commit.get("target_path") if committed else None,
            "format": commit.get("target_format") if committed else None,
            "dropped": [],
        }
    elif output is not None and result.changed:
        losses = _write_output(result.transcript, output, out_format, warn=not as_json, source=file)
        report["output"] = {"path": str(output), "format": out_format, "dropped": _dropped(losses)}
    else:
        report["output"] = {"path": None, "format": None, "dropped": []}
    _emit_compressed(report, as_json, None if loaded is not None else output)
    if result.report.status.value == "aborted":
        sys.exit(1)


def _check_compress_flags(
    keep_last: int | None, at: int | None, do_commit: bool, mode: str | None, dry_run: bool
) -> None:
    """Refuse the flag combinations ``compress`` cannot honour."""
    if keep_last is not None and at is not None:
        fail("use either --keep-last or --at, not both")
    if mode is not None and not do_commit:
        fail("--mode needs --commit")
    if do_commit and dry_run:
        fail("--commit cannot be combined with --dry-run")


def _check_output(output: Path, file: Path, out_format: str) -> None:
    """Refuse an ``-o`` that would overwrite the input or that no writer can write."""
    if output.resolve() == file.resolve():
        fail(f"refusing to write over the input {file}; choose another -o path")
    if out_format not in WRITABLE_FORMATS:
        fail(
            f"cannot write {out_format!r} transcripts; pass --to with one of: "
            + ", ".join(WRITABLE_FORMATS)
        )


def _commit(
    result: CompactionResult,
    loaded: LoadedSource,
    mode: str | None,
    output: Path | None,
    to_format: str | None,
    split: LiveSplit,
) -> dict[str, Any]:
    """Commit ``result`` through the store (``--commit``): what it did, for the report."""
    from tjui.commands.store import commit_from_cli

    # With --commit, -o/--to name the export or child target; the store checks them.
    if output is not None and result.changed:
        ensure_parent_dir(output)
    return commit_from_cli(
        result, loaded, mode=mode, output=output, to_format=to_format, split=split
    )


def _emit_compressed(report: dict[str, Any], as_json: bool, output: Path | None) -> None:
    """Print a compress report: JSON, or the table and what a commit did (``report`` has
    "commit"); and, on stderr, why ``output`` (``-o`` without ``--commit``) was not
    written."""
    if as_json:
        emit_json(report)
    else:
        from tjui.render import print_report

        print_report(report)
        if "commit" in report:
            from tjui.commands.store import echo_commit

            echo_commit(report["commit"])
    if output is not None and report["output"]["path"] is None:
        # A no-op (below the threshold, nothing to compress) or an abort writes nothing.
        left = "left as it was" if output.exists() else "not created"
        click.echo(
            f"not written: {report['status']}: {report['reason']} ({output} {left})", err=True
        )


def _load_live(
    file: Path,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    for_commit: bool,
    whole_file: bool,
    at: int | None,
    *,
    source: Any = None,
) -> tuple[Any, Any, int | None]:
    """(the source loaded for a commit or None, the live split, ``--at`` made relative
    to the live context); exits on a file that cannot be read or holds no messages."""
    loaded = None
    if for_commit:
        from tjui.commands.store import load_for_commit

        loaded = load_for_commit(file, fmt, session=session, lenient=lenient)
        transcript = loaded.transcript
    elif source is not None:
        transcript = source.transcript
    else:
        transcript = load_or_fail(file, fmt, session=session, lenient=lenient)
    require_messages(transcript, file)
    split, at = live_split_or_fail(transcript, whole_file, at)
    return loaded, split, at


def _live_dict(split: Any) -> dict[str, Any]:
    """Where the compacted part starts in the file (boundary indices count from there)."""
    return {"from_index": split.start, "history_messages": split.start}


def _dry_run(
    transcript: Any, options: Any, counter: Any, source: Any, split: Any, *, exact: bool
) -> dict[str, Any]:
    """The plan as a dict, counting exactly only what decides it unless ``exact`` (or the
    cache holds exact counts for the file); ``counts`` says which figures are which."""
    from tinyjuice.decisive import plan_counting_what_decides
    from tinyjuice.pipeline import plan_boundary
    from tinyjuice.tokens import CountKind

    stored = _live_tokens(source.stored_tokens(counter), split) if source is not None else None
    if stored is None and not exact and counter.kind is CountKind.EXACT:
        decisive = plan_counting_what_decides(transcript, options, counter)
        counts = decisive.kinds(counter)
        plan = decisive.plan
    else:
        if stored is not None:
            tokens = stored
        elif source is not None:
            tokens = _live_tokens(source.tokens(counter), split)
        else:
            tokens = None
        plan = plan_boundary(transcript, options, tokens, counter=counter)
        kind = counter.kind.value
        counts = {"head": kind, "middle": kind, "tail": kind, "total": kind}
    return {
        **plan_to_dict(plan),
        "counts": counts,
        "decision": _decision(transcript, options, plan, CountKind(counts["total"])),
    }


def _decision(transcript: Any, options: Any, plan: Any, kind: Any) -> dict[str, Any] | None:
    """Whether ``compress`` would go on to cut now, and why, as it would say it (the
    threshold check on the prompt it decides on); None with a chosen boundary (``--at``,
    ``--keep-last``), which skips the check. A fresh state: the cooldown and back-off
    that the store may hold are the real run's to apply."""
    if options.manual:
        return None
    import time

    from tinyjuice.budget import should_compress
    from tinyjuice.pipeline import prompt_now

    prompt = prompt_now(transcript, plan.total_tokens, kind)
    decision = should_compress(prompt, plan.budget, None, force=options.force, now=time.time())
    return {"fires": decision.fire, "code": decision.code.value, "reason": decision.reason}


def _emit_plan(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(data)
    else:
        from tjui.render import print_plan

        print_plan(data)


def _live_tokens(tokens: Any, split: Any) -> Any:
    """The file's counts cut to the live part (what ``split.live`` holds)."""
    return tokens.tail(split.start) if tokens is not None else None


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


def _write_output(
    transcript: Any, output: Path, fmt: str, *, warn: bool, source: Path
) -> list[Any]:
    """Save ``transcript`` to ``output`` in ``fmt`` (parents created); what it dropped.

    A new OUT gets ``source``'s permission bits (a private transcript stays private).
    With ``warn`` each loss is also said on stderr."""
    from tinyjuice.atomic import file_mode
    from tinyjuice.formats import SaveError, conversion_losses, save

    ensure_parent_dir(output)
    try:
        losses = conversion_losses(transcript, fmt)
        save(transcript, output, fmt, mode=file_mode(source))
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
    require_messages(transcript, file)
    if output.resolve() == file.resolve():
        fail(f"refusing to write over the input {file}; choose another -o path")
    losses = _write_output(transcript, output, to_format, warn=not as_json, source=file)
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
@click.argument("file", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_cmd(file: Path, as_json: bool) -> None:
    """List the sessions in a Hermes state.db, an opencode.db or an opencode storage/ tree."""
    from tinyjuice.formats import hermes, opencode

    try:
        if file.is_dir() or opencode.is_database(file):
            infos = opencode.list_sessions(file)
        else:
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


if __name__ == "__main__":  # pragma: no cover
    main()
