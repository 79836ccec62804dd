"""Hermes engine section (``--section hermes_engine``): tinyjuice's Hermes context
engine vs Hermes' built-in ContextCompressor.

Both get the same OpenAI message lists (1k / 10k / 100k messages of the generated
session) and a 128K window, with the summary LLM stubbed to fail so each falls back to
its own deterministic summary; the figures are the time ``compress`` takes and the
exact tokens (tinyjuice's counter) of the list it returns. It runs in the hermes-agent
venv (``$TJUI_HERMES_VENV``, as tests/hermes uses; tinyjuice installed there, editable),
through ``_hermes_child.py``. Without that venv the row says so and fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson

from benchmarks import REPO_ROOT, RunContext, target_row
from benchmarks.gen import ensure

TITLE = "Hermes engine"
HERMES_VERSION = "0.19.0"


def hermes_python() -> Path:
    venv = os.environ.get("TJUI_HERMES_VENV") or str(
        Path.home() / ".cache" / "tjui" / f"hermes-venv-{HERMES_VERSION}"
    )
    return Path(venv) / "bin" / "python"


def _figure(row: dict[str, Any]) -> str:
    parts = []
    for label, name in (("tinyjuice", "tinyjuice"), ("hermes", "Hermes")):
        r = row.get(label, {})
        if "error" in r or not r:
            parts.append(f"{name}: error {r.get('error', 'not run')}")
        else:
            parts.append(
                f"{name} {r['seconds']:.2f} s → {r['tokens_after']:,} tokens "
                f"({r['messages_after']:,} msgs)"
            )
    return f"{row['tokens_before']:,} tokens before; " + "; ".join(parts)


def run(ctx: RunContext) -> dict[str, Any]:
    py = hermes_python()
    label = "compress: tinyjuice engine vs Hermes' ContextCompressor, LLM stubbed to fail"
    if not py.exists():
        reason = f"no hermes-agent venv at {py.parent.parent} (see tests/hermes)"
        row = target_row("hermes.compress", label, reason, "reported", None, 1, at_most=False)
        return {"error": reason, "targets": [row]}
    files = ensure(ctx.work_dir, sorted(ctx.sizes), ["openai"], log=ctx.log)
    out = ctx.work_dir / "hermes-engine.json"
    ctx.log(f"hermes: compress on {', '.join(f'{g.messages:,}' for g in files)} messages")
    child = REPO_ROOT / "benchmarks" / "_hermes_child.py"
    repeats = "1" if ctx.quick else "3"
    subprocess.run(
        [str(py), str(child), str(out), repeats, *(str(g.path) for g in files)],
        check=True,
        capture_output=True,
        timeout=3600,
    )
    result: dict[str, Any] = orjson.loads(out.read_bytes())
    targets = []
    for n, row in sorted(result["sizes"].items(), key=lambda kv: int(kv[0])):
        ok = all("error" not in row[k] and row[k]["pairs_ok"] for k in ("tinyjuice", "hermes"))
        targets.append(
            target_row(
                f"hermes.compress.{n}",
                f"{label} ({int(n):,} msgs, 128K window)",
                _figure(row),
                "reported (both return valid tool pairs)",
                1.0 if ok else 0.0,
                1.0,
                at_most=False,
            )
        )
    result["targets"] = targets
    return result
