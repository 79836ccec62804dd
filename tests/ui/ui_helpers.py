"""Shared helpers for the Pilot tests."""

from __future__ import annotations

import json
from pathlib import Path

from textual.pilot import Pilot

from tjui.screens.main import MainScreen


async def wait_for(pilot: Pilot, predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    waited = 0.0
    while not predicate():
        await pilot.pause(0.05)
        waited += 0.05
        if waited > timeout:
            raise AssertionError("timed out waiting for the app")


async def wait_loaded(pilot: Pilot, *, exact: bool = True) -> MainScreen:
    app = pilot.app

    def ready() -> bool:
        screen = app.screen
        if not isinstance(screen, MainScreen) or screen.session is None:
            return False
        return not exact or screen.session.tokens.counter != "rough"

    await wait_for(pilot, ready)
    screen = app.screen
    assert isinstance(screen, MainScreen)
    await pilot.pause()
    return screen


def write_openai_session(path: Path, exchanges: int = 40) -> Path:
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(exchanges):
        messages.append({"role": "user", "content": f"Step {i}: run the tests for module {i}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}a",
                        "type": "function",
                        "function": {
                            "name": "terminal",
                            "arguments": json.dumps({"command": f"pytest tests/test_{i}.py"}),
                        },
                    },
                    {
                        "id": f"c{i}b",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"src/m{i}.py"}),
                        },
                    },
                ],
            }
        )
        output = "\n".join(f"tests/test_{i}.py::case_{k} PASSED" for k in range(40))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}a",
                "content": json.dumps({"output": output, "exit_code": 0}),
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}b",
                "content": "\n".join(f"line {k}" for k in range(80)),
            }
        )
        messages.append({"role": "assistant", "content": f"Module {i} passes."})
    messages.append({"role": "user", "content": "Now summarise what changed."})
    path.write_text(json.dumps(messages))
    return path
