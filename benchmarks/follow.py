"""Live follow benchmark: from an agent appending a turn to it being on screen.

A Claude Code session from the generator (1,000 and 10,000 messages; 1,000 only with
--quick) is copied and opened in the inspector headless; once exact counts are in, a
turn (a user line and an assistant line) is appended 10 times (5 with --quick) and
each latency is measured from the write until the message list holds the new
messages and the live status (the prediction in the header) is updated.
Target: ≤ 250 ms (the worst append). Only the appended bytes are read (in a worker:
the event loop only stats the file), only the new lines parsed, and every part of the
view grows from the new messages alone: the Claude Code reader's chain, the counts, the
boundary index, the breakdown's sums, the live status's usage series and the sha256 of
the file. The first appends still overlap the "after" projection the inspector starts
on load (a whole compress, not restarted while the file keeps growing).
Runs in a fresh interpreter (``python -m benchmarks.follow PATH N``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import ChildFailed, RunContext, run_child, target_row
from benchmarks.gen import ensure

TITLE = "Live follow"

LATENCY_LIMIT_MS = 250.0


def _last_uuid(path: str) -> str | None:
    """The uuid of the session's last line: appended turns continue its chain."""
    with open(path, "rb") as fh:
        fh.seek(max(0, Path(path).stat().st_size - 200_000))
        for line in reversed(fh.read().splitlines()):
            try:
                uuid = json.loads(line).get("uuid")
            except ValueError:
                continue
            if isinstance(uuid, str):
                return uuid
    return None


def _turn(k: int, parent: str | None) -> bytes:
    user = {
        "type": "user",
        "uuid": f"bench-u{k}",
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "bench",
        "timestamp": "2026-11-25T10:00:00.000Z",
        "message": {"role": "user", "content": f"Follow-up {k}: run the tests again."},
    }
    assistant = {
        "type": "assistant",
        "uuid": f"bench-a{k}",
        "parentUuid": f"bench-u{k}",
        "isSidechain": False,
        "sessionId": "bench",
        "timestamp": "2026-11-25T10:00:01.000Z",
        "requestId": f"bench-req{k}",
        "message": {
            "id": f"bench-msg{k}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": f"All green after follow-up {k}. " * 20}],
        },
    }
    return (json.dumps(user) + "\n" + json.dumps(assistant) + "\n").encode()


async def _measure(path: str, appends: int) -> dict[str, Any]:
    from tjui.app import make_app
    from tjui.screens.main import MainScreen
    from tjui.widgets.message_list import MessageList

    app = make_app(path)
    latencies: list[float] = []
    async with app.run_test(size=(160, 48)):
        screen = app.screen
        while not (
            isinstance(screen, MainScreen)
            and screen.session is not None
            and screen.session.tokens.counter != "rough"
            and screen.live is not None
            and screen.live.status is not None
        ):
            await asyncio.sleep(0.01)
            screen = app.screen
        assert isinstance(screen, MainScreen)
        lst = screen.query_one(MessageList)
        parent = _last_uuid(path)
        for k in range(appends):
            before = lst.count
            t = time.perf_counter()
            with open(path, "ab") as fh:
                fh.write(_turn(k, parent))
            parent = f"bench-a{k}"
            deadline = t + 30
            while lst.count < before + 2 or screen.live.status.messages < before + 2:
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"append {k} not on screen after 30 s ({lst.count} msgs)")
                await asyncio.sleep(0.002)
            latencies.append((time.perf_counter() - t) * 1000)
            await asyncio.sleep(0.15)
        messages = lst.count
    return {"latency_ms": latencies, "messages": messages}


#: Session sizes measured (messages): a typical live session, and a long one.
SIZES = (1_000, 10_000)


def _one(ctx: RunContext, n: int, appends: int) -> dict[str, Any]:
    (item,) = ensure(ctx.work_dir, [n], ["claude-code"], log=ctx.log)
    copy = ctx.work_dir / f"follow-{n}.jsonl"
    shutil.copyfile(item.path, copy)
    ctx.log(f"follow: {appends} appends to a {n:,}-message Claude Code session")
    try:
        raw = run_child(["benchmarks.follow", str(copy), str(appends)])
    except ChildFailed as failed:
        row = target_row(
            f"follow.latency.{n}", f"Live follow ({n:,} msgs)", "error", "≤ 250 ms", None,
            LATENCY_LIMIT_MS, at_most=True,
        )  # fmt: skip
        return {"error": str(failed), "target": row}
    finally:
        copy.unlink(missing_ok=True)
    values = sorted(raw["latency_ms"])
    mean, worst = statistics.fmean(values), values[-1]
    return {
        "messages": raw["messages"],
        "latency_ms": {"mean": round(mean, 1), "max": round(worst, 1)},
        "target": target_row(
            f"follow.latency.{n}",
            f"Live follow: append → on screen ({n:,} msgs, {len(values)} appends)",
            f"mean {mean:.0f} ms, max {worst:.0f} ms",
            f"≤ {LATENCY_LIMIT_MS:g} ms",
            worst,
            LATENCY_LIMIT_MS,
            at_most=True,
        ),
    }


def run(ctx: RunContext) -> dict[str, Any]:
    sizes = SIZES[:1] if ctx.quick else SIZES
    appends = 5 if ctx.quick else 10
    results = {str(n): _one(ctx, n, appends) for n in sizes}
    targets = [r.pop("target") for r in results.values()]
    return {"sizes": results, "targets": targets}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_measure(sys.argv[1], int(sys.argv[2])))))
