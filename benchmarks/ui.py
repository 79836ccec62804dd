"""Inspector benchmarks, measured headless with Textual's ``run_test`` at 100k messages.

- time to first paint: from starting the app until the message list has painted
  rows (estimated counts) — target ≤ 1.5 s;
- applying a boundary move (the ``]``/``[`` action: core's plan over the prefix
  sums, then redrawing the visible rows and the bar) — target ≤ 16 ms each (one
  frame), over 100 moves;
- scrolling one page (the list's page-down action and redrawing the visible rows)
  — ≤ 50 ms;
- selecting a 70k-token message (a pytest log as a tool result) and painting the
  detail pane with it: from the cursor move until a composed frame shows its body,
  the worker that prepares the body included — ≤ 50 ms.

Pilot's ``press`` is not used for timing: it sleeps until the process looks idle,
which measures the test harness rather than the app. Textual's own cost to
composite a whole frame is reported beside the figures (``full_frame_ms``).

Each figure runs in a fresh interpreter (``python -m benchmarks.ui PATH``) so one
measurement's caches cannot flatter another's.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import ChildFailed, RunContext, run_child, target_row
from benchmarks.gen import ensure

TITLE = "Inspector"

FIRST_PAINT_LIMIT_S = 1.5
MOVE_LIMIT_MS = 16.0
SCROLL_LIMIT_MS = 50.0
DETAIL_LIMIT_MS = 50.0
#: Tokens in the benchmark's huge tool output (exact, with the default counter).
DETAIL_TOKENS = 70_000


def _log_lines(n: int) -> list[str]:
    """A made-up pytest log: passing tests, debug lines, a failure every so often."""
    lines = []
    for i in range(n):
        if i % 7 == 3:
            lines.append(f"DEBUG    app.jobs.worker:worker.py:{40 + i % 60} job {i:06x} retried")
        elif i % 53 == 0:
            lines.append(f"E       AssertionError: expected {i} rows, got {i - 1}")
        else:
            lines.append(f"tests/unit/test_mod_{i % 97}.py::test_case_{i} PASSED [{i % 100:3d}%]")
    return lines


def write_detail_transcript(path: Path) -> int:
    """An OpenAI transcript whose message 3 is a ~70k-token tool output; its tokens."""
    from tinyjuice.tokens import default_counter

    counter = default_counter()
    lines = _log_lines(8000)
    tokens = counter.count("\n".join(lines))
    lines = _log_lines(int(len(lines) * DETAIL_TOKENS / tokens) + 50)
    log = "\n".join(lines)
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Run the whole test suite."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": log},
        {"role": "assistant", "content": "Two failures; fixing them next."},
        {"role": "user", "content": "Go ahead."},
    ]
    path.write_text(json.dumps({"messages": messages}))
    return counter.count(log)


async def _measure_detail(path: str, rounds: int) -> dict[str, Any]:
    from tjui.app import make_app
    from tjui.screens.main import MainScreen
    from tjui.widgets.detail import DetailPane
    from tjui.widgets.lazy_text import LazyText
    from tjui.widgets.message_list import MessageList

    app = make_app(path)
    select_ms: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        while not (
            isinstance(screen, MainScreen)
            and screen.session is not None
            and screen.session.tokens.counter != "rough"
        ):
            await asyncio.sleep(0.01)
            screen = app.screen
        await pilot.pause()
        lst = screen.query_one(MessageList)
        pane = screen.query_one(DetailPane)
        for i in range(rounds * 2):
            index = 3 if i % 2 == 0 else 1  # the huge output, then a short ask
            t = time.perf_counter()
            lst.cursor = index
            screen._show_detail(index)  # the list's rest-delay timer, skipped
            while pane.filling or not all(w.is_mounted for w in pane.query(LazyText)):
                await asyncio.sleep(0)
            screen._refresh_layout()
            screen._compositor.render_update(full=True)
            if index == 3:
                select_ms.append((time.perf_counter() - t) * 1000)
            await pilot.pause()
    return {"select_ms": select_ms}


async def _measure(path: str, moves: int, pages: int) -> dict[str, Any]:
    from textual.geometry import Region

    from tjui.app import make_app
    from tjui.screens.main import MainScreen
    from tjui.widgets.context_bar import ContextBar
    from tjui.widgets.message_list import MessageList

    t0 = time.perf_counter()
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        lst: MessageList | None = None
        while True:
            screen = app.screen
            if isinstance(screen, MainScreen):
                lst = screen.query_one(MessageList)
                if lst.count and lst.size.height:
                    break
            await asyncio.sleep(0.002)
        visible = Region(0, 0, lst.size.width, lst.size.height)
        lst.render_lines(visible)  # the first screenful of rows, estimated counts
        first_paint = time.perf_counter() - t0
        while screen.session is None or screen.session.tokens.counter == "rough":
            await asyncio.sleep(0.01)
        await pilot.pause()
        bar = screen.query_one(ContextBar)

        def repaint() -> None:
            # What a frame must draw after the change: the visible rows and the bar.
            lst.render_lines(Region(0, 0, lst.size.width, lst.size.height))
            bar.render()

        move_ms: list[float] = []
        for i in range(moves):
            delta = 1 if (i // 10) % 2 else -1
            t = time.perf_counter()
            screen.action_boundary_step(delta)
            repaint()
            move_ms.append((time.perf_counter() - t) * 1000)
        await pilot.pause()
        scroll_ms: list[float] = []
        for _ in range(pages):
            t = time.perf_counter()
            lst.action_page_down_cursor()
            lst.render_lines(Region(0, 0, lst.size.width, lst.size.height))
            scroll_ms.append((time.perf_counter() - t) * 1000)
        await pilot.pause()
        # Textual's own cost to composite a whole 160x48 frame, for context.
        frame_ms: list[float] = []
        for _ in range(5):
            t = time.perf_counter()
            screen._compositor.render_update(full=True)
            frame_ms.append((time.perf_counter() - t) * 1000)
        counted = screen.session.tokens.counter if screen.session else None
    return {
        "first_paint_s": round(first_paint, 3),
        "messages": lst.count if lst else 0,
        "move_ms": move_ms,
        "scroll_ms": scroll_ms,
        "full_frame_ms": frame_ms,
        "counter_at_end": counted,
    }


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean": round(statistics.fmean(ordered), 3),
        "p95": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 3),
        "max": round(ordered[-1], 3),
    }


def _run_detail(ctx: RunContext) -> dict[str, Any]:
    """Selecting the 70k-token message, in its own fresh interpreter."""
    path = ctx.work_dir / "detail-70k.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens = write_detail_transcript(path)
    rounds = 5 if ctx.quick else 20
    ctx.log(f"ui: selecting a {tokens:,}-token message, {rounds} times")
    name = f"Inspector: select a {tokens:,}-token message (detail pane painted, {rounds} times)"
    target = f"≤ {DETAIL_LIMIT_MS:g} ms"
    try:
        raw = run_child(["benchmarks.ui", "detail", str(path), str(rounds)])
    except ChildFailed as failed:
        row = target_row(
            "ui.detail_select", name, "error", target, None, DETAIL_LIMIT_MS, at_most=True
        )
        return {"error": str(failed), "target": row}
    select = _summary(raw["select_ms"])
    figure = f"mean {select['mean']:.1f} ms, p95 {select['p95']:.1f} ms"
    row = target_row(
        "ui.detail_select", name, figure, target, select["p95"], DETAIL_LIMIT_MS, at_most=True
    )
    return {"tokens": tokens, "select_ms": select, "target": row}


def run(ctx: RunContext) -> dict[str, Any]:
    n = max(ctx.sizes)
    files = ensure(ctx.work_dir, [n], ["openai"], log=ctx.log)
    path = str(files[0].path)
    moves, pages = (20, 10) if ctx.quick else (100, 30)
    ctx.log(f"ui: measuring the inspector on {n:,} messages")
    try:
        raw = run_child(["benchmarks.ui", path, str(moves), str(pages)])
    except ChildFailed as failed:
        return {
            "error": str(failed),
            "targets": [
                target_row(
                    "ui.first_paint",
                    "Inspector first paint",
                    "error",
                    "≤ 1.5 s",
                    None,
                    FIRST_PAINT_LIMIT_S,
                    at_most=True,
                )
            ],
        }
    move = _summary(raw["move_ms"])
    scroll = _summary(raw["scroll_ms"])
    targets = [
        target_row(
            "ui.first_paint",
            f"Inspector: time to first paint ({raw['messages']:,} msgs)",
            f"{raw['first_paint_s']:.2f} s",
            f"≤ {FIRST_PAINT_LIMIT_S:g} s",
            raw["first_paint_s"],
            FIRST_PAINT_LIMIT_S,
            at_most=True,
        ),
        target_row(
            "ui.boundary_move",
            f"Inspector: apply a boundary move ({raw['messages']:,} msgs, {len(raw['move_ms'])} moves)",
            f"mean {move['mean']:.1f} ms, p95 {move['p95']:.1f} ms",
            f"≤ {MOVE_LIMIT_MS:g} ms each",
            move["p95"],
            MOVE_LIMIT_MS,
            at_most=True,
        ),
        target_row(
            "ui.scroll_page",
            f"Inspector: scroll one page ({raw['messages']:,} msgs)",
            f"mean {scroll['mean']:.1f} ms, p95 {scroll['p95']:.1f} ms",
            f"≤ {SCROLL_LIMIT_MS:g} ms",
            scroll["p95"],
            SCROLL_LIMIT_MS,
            at_most=True,
        ),
    ]
    detail = _run_detail(ctx)
    targets.append(detail.pop("target"))
    return {
        "messages": raw["messages"],
        "detail_select": detail,
        "full_frame_ms": _summary(raw["full_frame_ms"]),
        "first_paint_s": raw["first_paint_s"],
        "boundary_move_ms": move,
        "scroll_page_ms": scroll,
        "targets": targets,
    }


if __name__ == "__main__":
    if sys.argv[1] == "detail":
        result = asyncio.run(_measure_detail(sys.argv[2], int(sys.argv[3])))
    else:
        result = asyncio.run(_measure(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    print(json.dumps(result))
