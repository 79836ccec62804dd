"""What every summary provider is configured with: one definition of the fields.

:class:`Endpoint` is the base of both providers and of
:class:`~tinyjuice.providers.ProviderConfig`; tjui's configuration reads the setting
names from it (:data:`ENDPOINT_SETTINGS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Self

__all__ = ["ENDPOINT_SETTINGS", "Endpoint"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A named model endpoint. Holds the *name* of the key variable, never the key."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 60.0
    fallback_model: str | None = None

    @property
    def with_main_model(self) -> Callable[[], Self] | None:
        """The retry the failure policy asks for: the same endpoint with ``fallback_model``.

        ``None`` (no retry) when no fallback model is configured — the pipeline then goes
        straight to the policy (cooldown, fallback summary or abort).
        """
        fallback = self.fallback_model
        if not fallback or fallback == self.model:
            return None
        return lambda: replace(self, model=fallback, fallback_model=None)


#: The settings of an endpoint other than its name, in declaration order.
ENDPOINT_SETTINGS: tuple[str, ...] = tuple(f.name for f in fields(Endpoint) if f.name != "name")
