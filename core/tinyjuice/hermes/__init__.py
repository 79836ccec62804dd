"""tinyjuice as a Hermes Agent context engine (``context.engine: tinyjuice``).

Hermes loads pip-installed plugins from the ``hermes_agent.plugins`` entry-point group
(tinyjuice's ``core/pyproject.toml`` registers this module) and calls :func:`register`,
which registers :class:`tinyjuice.hermes.engine.TinyjuiceEngine`. The logic lives in
:mod:`tinyjuice.hermes._core` (no Hermes import); ``engine`` needs hermes-agent.
Enable: ``hermes plugins enable tinyjuice`` and ``context: {engine: tinyjuice}`` in
``~/.hermes/config.yaml``. Tested with hermes-agent 0.19.0.
"""

from __future__ import annotations

from typing import Any

from tinyjuice.hermes._core import ENGINE_NAME, EngineCore

__all__ = ["ENGINE_NAME", "EngineCore", "register"]


def register(ctx: Any) -> None:
    """Hermes' plugin hook: register the tinyjuice context engine."""
    from tinyjuice.hermes.engine import TinyjuiceEngine

    ctx.register_context_engine(TinyjuiceEngine())
