"""The Codex CLI rollout sample; its story is data (``data/stories/codex.jsonl``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import Clock, Ids, data_text, prompt_span, rng_for, write_jsonl
from ..project import Repo, ledgerline
from ..writers import CodexLog
from .steps import LogStory

# ================================================================================= Codex

RECON_CSV_HEAD = data_text("text/recon_csv_head.txt")


class CodexTools:
    """The Codex story's tools (see ``steps``): file text and the settlements CSV listing."""

    def __init__(self, repo: Repo, ids: Ids) -> None:
        self.repo = repo
        self.ids = ids

    def text(self, path: str) -> str:
        return self.repo.text(path)

    def settlements(self) -> str:
        """``wc -l`` and ``cat`` of var/settlements.csv, cut to its first 263 lines."""
        rows = "\n".join(
            f"2025-09-{1 + i % 18:02d},INV-2025-{200 + i:04d},{('USD', 'EUR', 'GBP', 'JPY')[i % 4]},"
            f"{(i * 37) % 900 + 10}.{(i * 13) % 100:02d},{(i * 37) % 900 + 10}.{(i * 13) % 100:02d},"
            f"pi_{self.ids.b62(10)}"
            for i in range(260)
        )
        csv = RECON_CSV_HEAD + "\n" + rows + "\n[... omitted 1021 of 1284 lines ...]"
        return "1284 var/settlements.csv\n" + csv


def build_codex(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("codex")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 19, 9, 31, 2, 0, tzinfo=UTC), rng)
    cx = CodexLog(ids, clock)
    session = ids.uuid()
    repo = ledgerline()
    cli = "src/app/cli.py"
    repo.patch(cli, "    mismatches = 0\n", "    mismatches = 0\n    pending = 0\n")
    story = LogStory({"rollout": cx}, CodexTools(repo, ids), ids)
    story.names["session"] = session
    story.replay("codex")
    write_jsonl(out_dir / "codex-rollout.jsonl", cx.lines)
    return cx.entry(
        "codex",
        "gpt-5-codex",
        context_window=272_000,
        session_id=session,
        lines=len(cx.lines),
        injected_user_messages=cx.injected,
        usage_events=len(cx.usage_events),
        prompt_tokens=prompt_span(cx.usage_events),
    )
