"""Context windows and output limits of common models.

Published figures, used when a transcript does not record its window. Lookups match
the longest known prefix of the model name after dropping a provider prefix
("anthropic/claude-sonnet-4" → "claude-sonnet-4"), so dated variants resolve too.
Callers can pass overrides (the CLI's ``--context-window``) which always win.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "MODEL_LIMITS",
    "ModelLimits",
    "lookup_model",
    "resolve_context_window",
]

#: Used only when neither the caller, the transcript nor the model table knows the window
#: (also ``tinyjuice.report.DEFAULT_CONTEXT_WINDOW``).
DEFAULT_CONTEXT_WINDOW = 128_000


@dataclass(frozen=True, slots=True)
class ModelLimits:
    context_window: int
    max_output_tokens: int


MODEL_LIMITS: Mapping[str, ModelLimits] = {
    # Anthropic
    "claude-opus-4": ModelLimits(200_000, 32_000),
    "claude-sonnet-4": ModelLimits(200_000, 64_000),
    "claude-haiku-4": ModelLimits(200_000, 64_000),
    "claude-3-7-sonnet": ModelLimits(200_000, 64_000),
    "claude-3-5-sonnet": ModelLimits(200_000, 8_192),
    "claude-3-5-haiku": ModelLimits(200_000, 8_192),
    "claude-3-opus": ModelLimits(200_000, 4_096),
    # OpenAI
    "gpt-5-codex": ModelLimits(400_000, 128_000),
    "gpt-5": ModelLimits(400_000, 128_000),
    "gpt-4.1": ModelLimits(1_047_576, 32_768),
    "gpt-4o-mini": ModelLimits(128_000, 16_384),
    "gpt-4o": ModelLimits(128_000, 16_384),
    "o4-mini": ModelLimits(200_000, 100_000),
    "o3": ModelLimits(200_000, 100_000),
    "codex-mini": ModelLimits(200_000, 100_000),
    # Google
    "gemini-3-pro": ModelLimits(1_048_576, 65_536),
    "gemini-2.5-pro": ModelLimits(1_048_576, 65_536),
    "gemini-2.5-flash": ModelLimits(1_048_576, 65_536),
    "gemini-2.0-flash": ModelLimits(1_048_576, 8_192),
    "gemini-1.5-pro": ModelLimits(2_097_152, 8_192),
    "gemini-1.5-flash": ModelLimits(1_048_576, 8_192),
    # Open models (common serving defaults)
    "qwen3-coder": ModelLimits(262_144, 65_536),
    "qwen3": ModelLimits(131_072, 32_768),
    "deepseek-chat": ModelLimits(128_000, 8_192),
    "deepseek-reasoner": ModelLimits(128_000, 64_000),
    "kimi-k2": ModelLimits(131_072, 16_384),
    "glm-4.5": ModelLimits(131_072, 98_304),
    "llama-3.1": ModelLimits(131_072, 8_192),
    "hermes-4": ModelLimits(131_072, 32_768),
}


def _normalise(model: str) -> str:
    name = model.strip().lower()
    if "/" in name:
        name = name.rsplit("/", 1)[-1]
    return name


def lookup_model(
    model: str | None, overrides: Mapping[str, ModelLimits] | None = None
) -> ModelLimits | None:
    """Limits for ``model`` by longest matching prefix, or None when unknown."""
    if not model:
        return None
    name = _normalise(model)
    tables = [overrides or {}, MODEL_LIMITS]
    for table in tables:
        best: str | None = None
        for key in table:
            k = key.lower()
            if name.startswith(k) and (best is None or len(k) > len(best)):
                best = key
        if best is not None:
            return table[best]
    return None


def resolve_context_window(
    transcript_window: int | None, model: str | None, override: int | None = None
) -> tuple[int | None, str | None, int | None]:
    """``(window, source, max_output_tokens)``: an override wins, then the transcript, then the table.

    ``source`` is "override", "transcript" or "model table" (None when unknown).
    """
    limits = lookup_model(model)
    max_out = limits.max_output_tokens if limits else None
    if override:
        return override, "override", max_out
    if transcript_window:
        return transcript_window, "transcript", max_out
    if limits is not None:
        return limits.context_window, "model table", max_out
    return None, None, max_out
