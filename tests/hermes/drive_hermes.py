"""Run a real Hermes AIAgent for a few turns (executed by the hermes venv's python).

Usage: drive_hermes.py BASE_URL TURNS OUT_JSON. HERMES_HOME must point at a directory holding a
config.yaml that selects the tinyjuice engine. Prints one JSON object: the engine's
class and status, the session id and what Hermes reported, written to OUT_JSON
(Hermes prints its own progress lines on stdout).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    base_url, turns, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    from hermes_state import SessionDB
    from run_agent import AIAgent

    db = SessionDB()
    agent = AIAgent(
        base_url=base_url,
        api_key="sk-fake-loopback",
        provider="custom",
        model="fake-model",
        enabled_toolsets=["todo"],
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        session_db=db,
        max_iterations=6,
        tool_delay=0.0,
    )
    engine = agent.context_compressor
    history: list[dict] = []
    statuses = []
    for i in range(turns):
        result = agent.run_conversation(
            f"Turn {i}: add the next release step to the todo list. " + "context " * 60,
            conversation_history=history,
        )
        history = result.get("messages") or history
        statuses.append(engine.get_status())
    with open(out, "w", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "engine_class": f"{type(engine).__module__}.{type(engine).__name__}",
                    "engine_name": engine.name,
                    "session_id": agent.session_id,
                    "status": engine.get_status(),
                    "statuses": statuses,
                    "final_messages": len(history),
                },
                default=str,
            )
        )


if __name__ == "__main__":
    main()
