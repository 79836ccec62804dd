"""tinyjuice.formats.catalog: the sessions a file holds, and which one is on screen."""

from __future__ import annotations

import json
from pathlib import Path

from tinyjuice.formats.catalog import SessionEntry, file_sessions, position_of


def _trajectory(tid: str | None, turns: int) -> dict:
    conv = [{"from": "system", "value": "You are a made-up test agent."}]
    for i in range(turns):
        conv.append({"from": "human", "value": f"ask {i}"})
        conv.append({"from": "gpt", "value": f"answer {i}"})
    out: dict = {"conversations": conv}
    if tid is not None:
        out["id"] = tid
    return out


def test_sharegpt_list_with_ids_and_without(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([_trajectory("alpha", 1), _trajectory(None, 2)]))
    entries = file_sessions(path, "sharegpt")
    assert entries == [SessionEntry("alpha", "alpha", 3), SessionEntry("2", "#2", 5)]
    assert position_of(entries, "2", None) == 1
    assert position_of(entries, "alpha", None) == 0
    assert position_of(entries, None, "alpha") == 0
    assert position_of(entries, None, None) == 0


def test_one_session_lists_nothing(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_trajectory("solo", 1)) + "\n")
    assert file_sessions(path, "sharegpt") == []
    assert file_sessions(path, "openai") == []
    assert position_of([], None, "solo") is None
