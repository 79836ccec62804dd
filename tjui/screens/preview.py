"""Side-by-side preview: the original middle beside what compaction turns it into.

Details: docs/app.md (`tjui.screens.preview`).
"""

from __future__ import annotations

import textwrap
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.events import Resize
from textual.geometry import Size
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Input, Label, LoadingIndicator, OptionList, Select, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, get_current_worker

from tinyjuice.model import Message
from tinyjuice.pipeline import compress
from tinyjuice.report import CompactionReport, CompactionResult
from tinyjuice.review import CATEGORIES, SummaryReview
from tjui.session import InspectorSession
from tjui.visible import visible
from tjui.widgets.message_list import preview_text
from tjui.workers import ForwardWorkerErrors, failure_text

#: Lines of each original message shown in the preview (the detail pane has it all).
CELL_LINES = 6
SUMMARY_WRAP = 110


@dataclass(frozen=True, slots=True)
class Block:
    """One aligned row of the preview: an original message and what replaces it."""

    left_title: str
    left: tuple[str, ...]
    right_title: str
    right: tuple[str, ...]
    kind: str  # "digest" | "rewritten" | "summarised" | "summary" | "kept"

    @property
    def height(self) -> int:
        return 1 + max(len(self.left), len(self.right), 1) + 1


def _clip_lines(text: str, limit: int = CELL_LINES) -> tuple[str, ...]:
    lines = text.splitlines() or [""]
    if len(lines) > limit:
        return (*lines[: limit - 1], f"… {len(lines) - limit + 1:,} more lines")
    return tuple(lines)


def _message_lines(m: Message) -> tuple[str, ...]:
    text = m.text
    if m.tool_calls:
        calls = "\n".join(f"→ {c.name}({c.arguments[:200]})" for c in m.tool_calls)
        text = f"{text}\n{calls}" if text else calls
    if not text and m.reasoning:
        text = "(reasoning) " + m.reasoning
    return _clip_lines(text or preview_text(m))


def build_blocks(session: InspectorSession, result: CompactionResult) -> list[Block]:
    """Pair each original middle message with its replacement (by original index)."""
    report = result.report
    start = report.boundary_start or 0
    end = report.boundary_end or start
    originals = session.transcript.messages[start:end]
    by_index: dict[int, Message] = {}
    for m in result.compacted_middle:
        if m.meta.original_index is not None:
            by_index.setdefault(m.meta.original_index, m)
    digest_kind = {d["index"]: d["kind"] for d in report.digests}
    blocks: list[Block] = []
    for offset, m in enumerate(originals):
        i = start + offset
        tokens = session.tokens.per_message[i]
        left_title = f"#{i} {m.role.value} · {tokens:,} tok"
        new = by_index.get(i)
        if i in digest_kind and new is not None:
            kind, right_title = "digest", f"{digest_kind[i]} · {len(new.text):,} chars"
            right = _clip_lines(new.text)
        elif report.summary_kind.value != "none":
            # Redacted, and without its source record: still summarised, not rewritten.
            kind, right_title, right = "summarised", "→ into the summary", ()
        elif new is not None and new is not m and new != m:
            kind, right_title, right = "rewritten", "rewritten by rules", _message_lines(new)
        elif new is None:
            kind, right_title, right = "summarised", "dropped (rule)", ()
        else:
            kind, right_title, right = "kept", "kept as is", ()
        blocks.append(Block(left_title, _message_lines(m), right_title, right, kind))
    if result.summary_message is not None:
        text = result.summary_message.text
        lines: list[str] = []
        for line in text.splitlines():
            lines.extend(textwrap.wrap(line, SUMMARY_WRAP) or [""])
        title = f"handoff summary · {report.summary_kind.value} · {report.summary_tokens:,} tok"
        blocks.append(Block("", (), title, tuple(lines), "summary"))
    return blocks


def report_header(report: CompactionReport) -> str:
    confidence = f" ({report.summary_confidence})" if report.summary_confidence else ""
    return (
        f"{report.status.value}: tokens {report.before_tokens:,} → {report.after_tokens:,}"
        f" {report.tokens_kind} · {report.percent_saved:.1f}% saved · cache-cold {report.cache_cold_tokens:,}"
        f" · summary {report.summary_kind.value}{confidence}"
        f" · profile {report.profile.value} · messages {report.boundary_start}–"
        f"{(report.boundary_end or 1) - 1} · {len(report.digests)} digests"
    )


class PreviewView(ScrollView, can_focus=True):
    """Two aligned columns, rendered line by line."""

    COMPONENT_CLASSES = {
        "preview--title",
        "preview--right-title",
        "preview--digest",
        "preview--summary",
        "preview--muted",
        "preview--divider",
    }
    DEFAULT_CSS = """
    PreviewView { background: $surface; overflow-x: hidden; }
    PreviewView > .preview--title { color: $primary; text-style: bold; }
    PreviewView > .preview--right-title { color: $success; text-style: bold; }
    PreviewView > .preview--digest { color: $success; }
    PreviewView > .preview--summary { color: $warning; }
    PreviewView > .preview--muted { color: $foreground-muted; }
    PreviewView > .preview--divider { color: $panel-lighten-2; }
    """
    BINDINGS = [
        Binding("up,k", "scroll_up", "Up", show=False),
        Binding("down,j", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
        Binding("home,g", "top", "Top", show=False),
        Binding("end,G", "bottom", "Bottom", show=False),
    ]

    # Every jump is forced: right after set_blocks, until the next layout, Textual has not
    # yet shown the scrollbar the new lines need, and an unforced scroll is ignored (a key
    # pressed as the preview appears did nothing). The position is still clamped.

    def action_top(self) -> None:
        self.scroll_home(animate=False, immediate=True, force=True)

    def action_bottom(self) -> None:
        # At once, not animated: a second End is never needed to land on the last row.
        self.scroll_end(animate=False, immediate=True, force=True)

    def scroll_to_summary(self) -> bool:
        """Bring the handoff summary to the top; False when there is none."""
        for k, block in enumerate(self._blocks):
            if block.kind == "summary":
                self.scroll_to(y=self._starts[k], animate=False, immediate=True, force=True)
                return True
        return False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._blocks: list[Block] = []
        self._starts: list[int] = [0]

    def set_blocks(self, blocks: list[Block]) -> None:
        self._blocks = blocks
        starts = [0]
        for b in blocks:
            starts.append(starts[-1] + b.height)
        self._starts = starts
        self.virtual_size = Size(self.size.width, starts[-1])
        self.refresh()

    @property
    def total_lines(self) -> int:
        return self._starts[-1]

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"preview--{name}", partial=True)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = self.scroll_offset.y + y
        base = self.rich_style
        if not self._blocks or row >= self._starts[-1]:
            return Strip.blank(width, base)
        k = bisect_right(self._starts, row) - 1
        block = self._blocks[k]
        line = row - self._starts[k]
        col = max(10, (width - 3) // 2)
        if line == block.height - 1:
            return Strip([Segment("─" * width, base + self._style("divider"))])
        if line == 0:
            left, left_style = block.left_title, base + self._style("title")
            right = block.right_title
            right_style = base + self._style(
                "right-title" if block.kind != "summarised" else "muted"
            )
        else:
            j = line - 1
            left = block.left[j] if j < len(block.left) else ""
            right = block.right[j] if j < len(block.right) else ""
            left_style = base
            right_style = base + self._style(
                {"digest": "digest", "summary": "summary", "rewritten": "digest"}.get(
                    block.kind, "muted"
                )
            )
        segments = [
            Segment(visible(left, 4)[:col].ljust(col), left_style),
            Segment(" │ ", base + self._style("divider")),
            Segment(visible(right, 4)[:col].ljust(col), right_style),
        ]
        return Strip(segments).crop_extend(0, width, base)


#: Narrower than this, the scorecard is stacked under the two columns.
STACK_BELOW = 120

#: The provider choice meaning "no model": the deterministic fallback summary.
FALLBACK_CHOICE = "fallback"
#: Missing items listed in the scorecard (the rest are counted).
SCORECARD_MISSING = 300


def provider_choices() -> tuple[list[tuple[str, str]], str | None]:
    """``(label, value)`` for the fallback and every configured provider, and a
    configuration error to show (then only the fallback is offered)."""
    from tjui.config import ConfigError, effective_config

    choices = [("fallback (no model)", FALLBACK_CHOICE)]
    try:
        cfg = effective_config()
    except ConfigError as exc:
        return choices, str(exc)
    for name, p in cfg.providers.items():
        kind = getattr(p.kind.value, "value", p.kind.value)
        choices.append((f"{name} ({kind} {p.model.value or '?'})", name))
    return choices, None


#: Characters of one scorecard row (the panel is 48 columns wide).
ROW_CHARS = 44


def _one_row(text: str) -> str:
    text = visible(text)
    return text if len(text) <= ROW_CHARS else text[: ROW_CHARS - 1] + "…"


#: Recall below these shares is shown in the warning / error colour (presentation only).
WEAK_BELOW = 0.8
POOR_BELOW = 0.5


def _grade_style(share: float | None, styles: dict[str, Style] | None) -> Style | str:
    if styles is None or share is None:
        return ""
    if share < POOR_BELOW:
        return styles.get("poor", "")
    if share < WEAK_BELOW:
        return styles.get("weak", "")
    return ""


def scorecard_options(
    review: SummaryReview, styles: dict[str, Style] | None = None
) -> tuple[list[Option], dict[str, int]]:
    """The scorecard as option-list rows, and the message index of each missing item.

    ``styles`` ("weak", "poor") colour the rows whose recall is low and failed checks."""
    rows: list[Option] = []
    jumps: dict[str, int] = {}
    overall = review.overall
    kept = "nothing to keep" if overall is None else f"kept {overall:.0%} of {len(review.items):,}"
    rows.append(Option(Text(f"review: {kept}", style=_grade_style(overall, styles)), disabled=True))
    for cat in CATEGORIES:
        total = review.total(cat)
        if total:
            found = review.found(cat)
            row = f"  {cat.value:<12}{found:>4}/{total:<4}{found / total:>5.0%}"
            rows.append(Option(Text(row, style=_grade_style(found / total, styles)), disabled=True))
    for c in review.checks:
        mark = {True: "✓", False: "✗", None: "·"}[c.ok]
        style = _grade_style(0.0 if c.ok is False else None, styles)
        rows.append(Option(Text(f"{mark} {c.name}: {c.detail}", style=style), disabled=True))
    missing = [item for cat in CATEGORIES for item in review.missing.get(cat.value, ())]
    if missing:
        rows.append(Option("missing (enter: jump to the message)", disabled=True))
    for n, item in enumerate(missing[:SCORECARD_MISSING]):
        key = f"missing-{n}"
        jumps[key] = item.index
        row = f"#{item.index} {item.category.value}: " + " ".join(item.text.split())
        rows.append(Option(_one_row(row), id=key))
    if len(missing) > SCORECARD_MISSING:
        rows.append(Option(f"… {len(missing) - SCORECARD_MISSING:,} more", disabled=True))
    _probe_rows(review, rows, jumps)
    return rows, jumps


def _probe_rows(review: SummaryReview, rows: list[Option], jumps: dict[str, int]) -> None:
    """Rules lost and unanswered probes, each jumping to its evidence on enter."""
    rules = review.rules
    if rules is not None and rules.checks:
        lost = rules.lost
        mark = "✓" if not lost else "✗"
        rows.append(
            Option(
                f"{mark} rules: {len(rules.checks) - len(lost)}/{len(rules.checks)} kept",
                disabled=True,
            )
        )
        for n, c in enumerate(lost[:SCORECARD_MISSING]):
            jumps[f"rule-{n}"] = c.rule.index
            text = " ".join(c.rule.text.split())
            rows.append(
                Option(_one_row(f"#{c.rule.index} lost {c.rule.source}: {text}"), id=f"rule-{n}")
            )
    probes = review.probes
    if probes is None or not probes.probes:
        return
    scores = " ".join(f"{k} {v:.0%}" for k, v in probes.scores.items())
    rows.append(Option(_one_row(f"probes: {scores}"), disabled=True))
    for n, p in enumerate(probes.unanswered[:SCORECARD_MISSING]):
        jumps[f"probe-{n}"] = p.evidence
        rows.append(
            Option(_one_row(f"#{p.evidence} {p.kind.value}: {p.question}"), id=f"probe-{n}")
        )


def failure_line(report: CompactionReport, provider: str | None) -> str | None:
    """A provider failure, plainly: who failed, the failure class, what happened."""
    if report.failure_class is None or report.failure_class == "no_provider":
        return None
    detail = next(
        (w.split("): ", 1)[-1] for w in report.warnings if w.startswith("summary provider failed")),
        report.reason,
    )
    who = provider or report.summary_provider or "the provider"
    if report.status.value == "aborted":
        return f"✗ {who} failed [{report.failure_class}]: {detail} — nothing was changed."
    return (
        f"✗ {who} failed [{report.failure_class}]: {detail} — showing the deterministic "
        "fallback instead; nothing was changed."
    )


class PreviewScreen(ForwardWorkerErrors, Screen[int | None]):
    """The compaction preview. Dismissed with a message index (jump there) or None."""

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="preview.close"),
        Binding("m", "summary", "Summary", id="preview.summary"),
        Binding("s", "scorecard", "Scorecard", id="preview.scorecard"),
        Binding("r", "recompute", "Regenerate", id="preview.recompute"),
        Binding("x", "cancel", "Cancel", id="preview.cancel"),
        Binding("o", "choose_provider", "Provider", id="preview.provider"),
        Binding("f", "edit_focus", "Focus topic", id="preview.focus"),
    ]

    @dataclass
    class Computed(TMessage):
        result: CompactionResult
        blocks: list[Block]
        review: SummaryReview | None = None
        generation: int = 0
        provider: str | None = None
        #: The session settings it was computed for (InspectorSession.settings_key).
        key: tuple[object, ...] = ()

    @dataclass
    class Failed(TMessage):
        """The provider could not even be set up (configuration); nothing ran."""

        failure_class: str
        message: str
        generation: int = 0

    def __init__(self, session: InspectorSession) -> None:
        super().__init__()
        self.session = session
        self.result: CompactionResult | None = None
        self.review: SummaryReview | None = None
        #: The last provider failure or configuration error shown, if any.
        self.error: str | None = None
        self.generating = False
        self._generation = 0
        self._jumps: dict[str, int] = {}
        self._last_choice: str | None = None
        #: The focus topic of the preview on screen (restored by a cancel).
        self._shown_focus: str | None = session.options.focus_topic
        self._choices, self._config_error = provider_choices()

    def compose(self) -> ComposeResult:
        yield Static("Computing the compaction preview…", id="preview-header", markup=False)
        with Horizontal(id="preview-controls"):
            yield Label("summary by")
            yield Select(
                self._choices,
                value=FALLBACK_CHOICE,
                allow_blank=False,
                compact=True,
                id="preview-provider",
            )
            yield Label("focus")
            yield Input(
                self.session.options.focus_topic or "",
                placeholder="focus topic (enter: regenerate)",
                compact=True,
                id="preview-focus",
            )
        yield Static(
            "original middle (left)  │  what replaces it: digests, rewrites, then the handoff summary (right)",
            id="preview-columns",
            markup=False,
        )
        yield Static("", id="preview-error", classes="-empty", markup=False)
        yield Static("", id="preview-warnings", classes="-empty", markup=False)
        yield LoadingIndicator()
        with Horizontal(id="preview-body"):
            yield PreviewView(id="preview-view")
            yield OptionList(id="preview-scorecard", markup=False, compact=True)
        yield Footer()

    def on_resize(self, event: Resize) -> None:
        # Below STACK_BELOW columns the scorecard goes under the two columns.
        self.set_class(event.size.width < STACK_BELOW, "-stacked")

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < STACK_BELOW, "-stacked")
        self.query_one(PreviewView).focus()
        self._show_error(self._config_note())
        self._start()

    def _config_note(self) -> str | None:
        if not self._config_error:
            return None
        return f"✗ config: {self._config_error} — only the fallback is available."

    # --------------------------------------------------------------- generation

    @property
    def provider_choice(self) -> str:
        value = self.query_one("#preview-provider", Select).value
        return value if isinstance(value, str) else FALLBACK_CHOICE

    @property
    def focus_topic(self) -> str | None:
        return self.query_one("#preview-focus", Input).value.strip() or None

    def _start(self) -> None:
        # The focus typed here is the session's: the main screen and the commit dialog
        # show the figures of what was previewed (a cancel puts the previous one back).
        self.session.set_focus(self.focus_topic)
        self._generation += 1
        self._last_choice = self.provider_choice
        self.generating = True
        self.query_one(LoadingIndicator).remove_class("-hidden")
        self._compute(self._generation, self.provider_choice, self.focus_topic)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _compute(self, generation: int, choice: str, focus: str | None) -> None:
        from tinyjuice.budget import summary_token_budget
        from tinyjuice.review import review_summary
        from tinyjuice.tokens import message_tokens

        s = self.session
        key = s.settings_key()
        provider = None
        if choice != FALLBACK_CHOICE:
            from tinyjuice.providers import make_provider
            from tjui.config import ConfigError, Overrides, resolve_provider_config

            try:
                config = resolve_provider_config(Overrides(provider=choice))
            except ConfigError as exc:
                self.post_message(self.Failed("config", str(exc), generation))
                return
            provider = make_provider(config) if config is not None else None
        options = replace(s.compaction_options(), focus_topic=focus)
        result = compress(
            s.transcript,
            options,
            provider,
            tokens=s.tokens,
            counter=s.counter,
            index=s.index,
            analysis=s.analysis,
        )
        review = None
        if result.summary_message is not None:
            middle = result.compacted_middle
            budget = summary_token_budget(
                result.report.context_window, sum(message_tokens(m, s.counter) for m in middle)
            )
            review = review_summary(
                middle,
                result.summary_message.text,
                start_index=result.report.boundary_start or 0,
                budget_tokens=budget,
                counter=s.counter,
                kept=[m for m in result.messages if m is not result.summary_message],
            )
        if get_current_worker().is_cancelled:
            return
        self.post_message(
            self.Computed(
                result,
                build_blocks(s, result),
                review,
                generation,
                None if provider is None else choice,
                key,
            )
        )

    def _show_error(self, text: str | None) -> None:
        self.error = text
        box = self.query_one("#preview-error", Static)
        box.update(text or "")
        box.set_class(not text, "-empty")

    def _done(self) -> None:
        self.generating = False
        self.query_one(LoadingIndicator).add_class("-hidden")

    def on_preview_screen_failed(self, event: Failed) -> None:
        if event.generation != self._generation:
            return
        self._done()
        self._show_error(f"✗ {event.failure_class}: {event.message} — nothing was changed.")

    def on_preview_screen_computed(self, event: Computed) -> None:
        if event.generation != self._generation:
            return  # a cancelled or superseded run
        self._done()
        self.result = event.result
        self.review = event.review
        self.session.remember(event.result, event.key)
        self._shown_focus = self.session.options.focus_topic
        report = event.result.report
        self.query_one("#preview-header", Static).update(report_header(report))
        self._show_error(failure_line(report, event.provider) or self._config_note())
        warnings = list(report.warnings)
        if report.status.value != "compacted":
            warnings.insert(0, f"{report.status.value}: {report.reason}")
        if report.summary_omitted and any(report.summary_omitted.values()):
            left = ", ".join(f"{k} {v}" for k, v in report.summary_omitted.items() if v)
            warnings.append(f"fallback summary left out for budget: {left}")
        box = self.query_one("#preview-warnings", Static)
        box.update("\n".join(f"⚠ {w}" for w in warnings))
        box.set_class(not warnings, "-empty")
        self.query_one(PreviewView).set_blocks(event.blocks)
        card = self.query_one("#preview-scorecard", OptionList)
        card.clear_options()
        if event.review is None:
            self._jumps = {}
            card.add_option(Option("no summary to review", disabled=True))
        else:
            rows, self._jumps = scorecard_options(event.review, self._grade_styles())
            card.add_options(rows)

    def show_failure(self, worker: Worker[Any]) -> bool:
        """A failed preview is said in the header; the previous one stays."""
        if worker.group != "preview":
            return False
        self._done()
        self.query_one("#preview-header", Static).update(
            f"Preview failed: {failure_text(worker.error)} — nothing was changed."
        )
        return True

    # ------------------------------------------------------------------ controls

    @on(Select.Changed, "#preview-provider")
    def _provider_changed(self, event: Select.Changed) -> None:
        if self._generation and event.value != self._last_choice:
            self._start()

    @on(Input.Submitted, "#preview-focus")
    def _focus_submitted(self, event: Input.Submitted) -> None:
        self._start()
        self.query_one(PreviewView).focus()

    @on(OptionList.OptionSelected, "#preview-scorecard")
    def _jump(self, event: OptionList.OptionSelected) -> None:
        index = self._jumps.get(event.option_id or "")
        if index is not None:
            self.dismiss(index)

    def action_recompute(self) -> None:
        self._start()

    def action_cancel(self) -> None:
        if not self.generating:
            return
        self._generation += 1  # whatever the running worker posts is now stale
        self.workers.cancel_group(self, "preview")
        self._done()
        # Back to what is on screen: the previous preview, its header and focus topic.
        self.session.set_focus(self._shown_focus)
        focus = self.query_one("#preview-focus", Input)
        with self.prevent(Input.Changed):
            focus.value = self._shown_focus or ""
        header = self.query_one("#preview-header", Static)
        if self.result is not None:
            header.update(report_header(self.result.report))
        else:
            header.update("No preview: generation cancelled (r computes it).")
        self._show_error("generation cancelled — nothing was changed.")

    def action_choose_provider(self) -> None:
        self.query_one("#preview-provider", Select).focus()

    def action_edit_focus(self) -> None:
        self.query_one("#preview-focus", Input).focus()

    def action_scorecard(self) -> None:
        self.query_one("#preview-scorecard", OptionList).focus()

    def action_summary(self) -> None:
        view = self.query_one(PreviewView)
        view.focus()
        if not view.scroll_to_summary():
            self.notify("No handoff summary in this preview.", severity="warning")

    def _grade_styles(self) -> dict[str, Style]:
        """Low recall in the theme's warning colour, very low and failed in its error."""
        colours = self.app.theme_variables
        return {
            "weak": Style(color=colours.get("warning"), bold=True),
            "poor": Style(color=colours.get("error"), bold=True),
        }

    def action_close(self) -> None:
        self.dismiss(None)
