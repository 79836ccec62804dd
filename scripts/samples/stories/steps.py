"""Stories as data: the steps in ``data/stories/*.jsonl`` and the values inside them.

A story file holds one JSON object a line, a step; each story module replays its steps
through its agent's writer. Inside a step, these forms stand for values computed at replay
time rather than copied: ``{"$file": path}`` is a data file's text (a project file, a long
summary), ``{"$png": path}`` its bytes in base64 (a pasted screenshot), ``{"$ref": name}``
a value an earlier step named (a tool-use id, a message uuid), ``{"$tool": [name, *args]}``
what the story's tool ``name`` returns for those arguments (a file read, an edit's diff; a
``"kw"`` key beside it gives keyword arguments), and ``{"$": [parts]}`` a string joined
from literal parts and parts of these forms (e.g. a recorded test run and what followed it).
Values resolve left to right, depth first: the order the story's random draws and edits
happened in.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ..common import data_bytes, data_text


def read_steps(story: str) -> list[dict[str, Any]]:
    """The steps of ``data/stories/<story>.jsonl`` (split on newlines only: JSON strings
    may hold U+2028 and other characters ``str.splitlines`` would split on)."""
    return [json.loads(line) for line in data_text(f"stories/{story}.jsonl").split("\n")[:-1]]


class Values:
    """Resolves the values inside steps; ``names`` holds what earlier steps named."""

    def __init__(self, tools: Any = None) -> None:
        self.names: dict[str, Any] = {}
        self.tools = tools

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "$tool" in value:
            name, *args = value["$tool"]
            kw = self.resolve(value.get("kw", {}))
            return getattr(self.tools, name)(*self.resolve(args), **kw)
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "$file":
                return data_text(arg)
            if key == "$png":
                return base64.b64encode(data_bytes(arg)).decode("ascii")
            if key == "$ref":
                return self.names[arg]
            if key == "$":
                return "".join(self.resolve(p) for p in arg)
        return {k: self.resolve(v) for k, v in value.items()}

    def name(self, step: dict[str, Any], value: Any) -> None:
        """Keep ``value`` under the step's ``as`` name (a list of names for a list of values)."""
        names = step.get("as")
        if isinstance(names, list):
            self.names.update(zip(names, value, strict=True))
        elif names is not None:
            self.names[names] = value


class LogStory(Values):
    """Replays steps that call a writer's methods: ``{"<method>": [args], "kw": {...}}``, with
    ``as`` naming what the method returned. A step the story has a ``step_<kind>`` method for
    is that method's instead; here ``session`` switches between writers when a story writes
    several, ``set`` sets a writer's attribute (``[name, value]``) and ``ids`` draws an id
    (``Ids.<kind>()``) for later steps."""

    def __init__(self, logs: dict[str, Any], tools: Any = None, ids: Any = None) -> None:
        super().__init__(tools)
        self.logs = logs
        self.log = next(iter(logs.values()))
        self.ids = ids

    def play(self, step: dict[str, Any]) -> None:
        kind = next(iter(step))
        own = getattr(self, f"step_{kind}", None)
        if own is not None:
            own(step[kind], step)
        else:
            args = self.resolve(step[kind])
            out = getattr(self.log, kind)(*args, **self.resolve(step.get("kw", {})))
            self.name(step, out)

    def step_session(self, name: str, step: dict[str, Any]) -> None:
        self.log = self.logs[name]

    def step_set(self, value: list[Any], step: dict[str, Any]) -> None:
        setattr(self.log, value[0], self.resolve(value[1]))

    def step_ids(self, kind: str, step: dict[str, Any]) -> None:
        self.name(step, getattr(self.ids, kind)())

    def replay(self, story: str) -> None:
        for step in read_steps(story):
            self.play(step)
