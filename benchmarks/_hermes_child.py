"""Run inside the hermes-agent venv: tinyjuice's engine vs Hermes' ContextCompressor.

Usage: python _hermes_child.py OUT_JSON REPEATS FILE... (OpenAI transcripts). Both
engines get the same message list and a 128K window; the summary LLM is stubbed to
fail (``call_llm`` raises), so each uses its own deterministic fallback. Tokens are
counted with tinyjuice's exact counter on both outputs.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

WINDOW = 128_000


def _stub_llm(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("benchmark stub: the summary LLM is unavailable")


def _pairs_ok(messages: list[dict[str, Any]]) -> bool:
    open_calls: set[str] = set()
    for m in messages:
        for call in m.get("tool_calls") or ():
            open_calls.add(call.get("id"))
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in open_calls:
                return False
            open_calls.discard(m.get("tool_call_id"))
    return not open_calls


def _measure(make: Any, messages: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    from tinyjuice import count_transcript, default_counter, from_messages

    best, out = float("inf"), messages
    for _ in range(repeats):
        engine = make()
        given = copy.deepcopy(messages)
        t0 = time.perf_counter()
        out = engine.compress(given, current_tokens=WINDOW)
        best = min(best, time.perf_counter() - t0)
    tokens = count_transcript(from_messages(out), default_counter()).total
    return {
        "seconds": round(best, 4),
        "messages_after": len(out),
        "tokens_after": tokens,
        "pairs_ok": _pairs_ok(out),
    }


def _tinyjuice() -> Any:
    from tinyjuice.hermes.engine import TinyjuiceEngine

    engine = TinyjuiceEngine()
    engine.update_model("bench-model", WINDOW)
    return engine


def _hermes() -> Any:
    from agent.context_compressor import ContextCompressor

    return ContextCompressor("bench-model", quiet_mode=True, config_context_length=WINDOW)


def main() -> None:
    out_path, repeats, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    from importlib.metadata import version

    import agent.auxiliary_client as aux
    import agent.context_compressor as cc

    from tinyjuice import count_transcript, default_counter, from_messages

    aux.call_llm = _stub_llm
    cc.call_llm = _stub_llm
    results: dict[str, Any] = {"hermes_agent": version("hermes-agent"), "sizes": {}}
    for name in files:
        doc = json.loads(Path(name).read_bytes())
        messages = doc if isinstance(doc, list) else doc["messages"]
        before = count_transcript(from_messages(messages), default_counter()).total
        row: dict[str, Any] = {"messages": len(messages), "tokens_before": before}
        for label, make in (("tinyjuice", _tinyjuice), ("hermes", _hermes)):
            try:
                row[label] = _measure(make, messages, repeats if len(messages) <= 10_000 else 1)
            except Exception as exc:  # recorded, the other engine still runs
                row[label] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        results["sizes"][str(len(messages))] = row
    Path(out_path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
