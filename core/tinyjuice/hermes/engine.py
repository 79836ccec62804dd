"""The tinyjuice engine as a Hermes ``ContextEngine`` (needs hermes-agent importable).

Hermes' plugin manager accepts only ``agent.context_engine.ContextEngine`` instances and
deep-copies the registered one for each agent: the engine holds plain values only.
"""

from __future__ import annotations

try:
    from agent.context_engine import ContextEngine  # type: ignore[import-not-found]
except ImportError as exc:  # pragma: no cover - exercised in the hermes venv test
    raise ImportError(
        "tinyjuice.hermes.engine needs hermes-agent (agent.context_engine); "
        "install it next to tinyjuice: pip install hermes-agent"
    ) from exc

from tinyjuice.hermes._aux import default_provider
from tinyjuice.hermes._core import EngineCore

__all__ = ["TinyjuiceEngine"]


class TinyjuiceEngine(EngineCore, ContextEngine):  # type: ignore[misc]
    """tinyjuice's compaction behind Hermes' context-engine contract."""

    def __init__(self) -> None:
        EngineCore.__init__(self, default_provider)
