"""tjui's configuration: summary providers from config.toml, the environment and flags.

Details: docs/providers.md (`tjui.config`).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinyjuice.providers import ProviderConfig, ProviderKind
from tinyjuice.providers.endpoint import ENDPOINT_SETTINGS
from tinyjuice.redact import find_secrets, redact_text

__all__ = [
    "CUSTOM_PROVIDER",
    "DEFAULT_TIMEOUT",
    "ENV_CONFIG",
    "ENV_VARS",
    "FALLBACK_NAME",
    "FLAGS",
    "ConfigError",
    "EffectiveConfig",
    "EffectiveProvider",
    "FileConfig",
    "Overrides",
    "Setting",
    "config_path",
    "effective_config",
    "load_file",
    "resolve_provider_config",
]

ENV_CONFIG = "TJUI_CONFIG"
#: Provider settings that the environment can override, and the variable for each.
ENV_VARS: dict[str, str] = {
    "provider": "TJUI_PROVIDER",
    "kind": "TJUI_PROVIDER_KIND",
    "base_url": "TJUI_BASE_URL",
    "model": "TJUI_MODEL",
    "api_key_env": "TJUI_API_KEY_ENV",
    "timeout": "TJUI_TIMEOUT",
    "fallback_model": "TJUI_FALLBACK_MODEL",
}
#: The command-line flag for each setting.
FLAGS: dict[str, str] = {
    "provider": "--provider",
    "kind": "--provider-kind",
    "base_url": "--base-url",
    "model": "--model",
    "api_key_env": "--api-key-env",
    "timeout": "--timeout",
    "fallback_model": "--fallback-model",
}
#: The provider name that means "no model: the deterministic fallback summary".
FALLBACK_NAME = "fallback"
#: Name of the provider made from environment/flags alone.
CUSTOM_PROVIDER = "custom"
DEFAULT_TIMEOUT = 60.0
_DEFAULT_BASE_URLS = {
    ProviderKind.OPENAI: "https://api.openai.com/v1",
    ProviderKind.ANTHROPIC: "https://api.anthropic.com",
}
_PROVIDER_KEYS = ("kind", *ENDPOINT_SETTINGS)
_FIELDS = _PROVIDER_KEYS
_TOP_KEYS = ("default_provider", "providers")
_KEY_LIKE = frozenset({"api_key", "key", "apikey", "token", "secret", "password", "api-key"})
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOML_AT = re.compile(r"at line (\d+), column (\d+)")


class ConfigError(Exception):
    """A configuration problem, with a message that says how to fix it."""


@dataclass(frozen=True, slots=True)
class Setting:
    """A value and where it came from: ``flag --x``, ``env TJUI_X``, ``file``, ``default``
    or ``unset``."""

    value: Any
    source: str


@dataclass(frozen=True, slots=True)
class FileConfig:
    path: Path
    exists: bool
    default_provider: str | None = None
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Overrides:
    """Values given on the command line (None: not given)."""

    provider: str | None = None
    kind: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    fallback_model: str | None = None


def config_path(env: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """The config file's path and why: ``TJUI_CONFIG`` or the platform default."""
    env = os.environ if env is None else env
    custom = env.get(ENV_CONFIG, "").strip()
    if custom:
        return Path(custom).expanduser(), f"env {ENV_CONFIG}"
    import platformdirs

    return platformdirs.user_config_path("tjui") / "config.toml", "default location"


# ------------------------------------------------------------------------ validation


def _where(path: Path, what: str) -> str:
    return f"{path}: {what}"


def _check_kind(value: Any, where: str) -> ProviderKind:
    try:
        return ProviderKind(value)
    except ValueError:
        raise ConfigError(f'{where}: kind must be "openai" or "anthropic", not {value!r}') from None


def _check_url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: base_url must be a URL string")
    url = value.strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"{where}: base_url must start with http:// or https:// (got {redact_text(url)!r})"
        )
    return url


def _check_text(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value.strip()


def _check_key_env(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: api_key_env must be the name of an environment variable")
    name = value.strip()
    if find_secrets(name) or not _VAR_NAME.match(name):
        raise ConfigError(
            f"{where}: api_key_env must be the NAME of the variable that holds the key "
            '(e.g. "OPENAI_API_KEY"), never the key itself'
        )
    return name


def _check_timeout(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{where}: timeout must be a positive number of seconds")
    return float(value)


def _validate_provider(path: Path, name: str, raw: Any) -> dict[str, Any]:
    where = _where(path, f"[providers.{name}]")
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table of settings")
    if name == FALLBACK_NAME:
        raise ConfigError(f"{where}: {FALLBACK_NAME!r} is reserved for the deterministic summary")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key.lower() in _KEY_LIKE:
            raise ConfigError(
                f"{where}: {key!r} is not allowed — never put a key in the file; export it "
                "in an environment variable and name that variable with api_key_env"
            )
        if key not in _PROVIDER_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed: {', '.join(_PROVIDER_KEYS)}")
        if key == "kind":
            out[key] = _check_kind(value, where)
        elif key == "base_url":
            out[key] = _check_url(value, where)
        elif key == "api_key_env":
            out[key] = _check_key_env(value, where)
        elif key == "timeout":
            out[key] = _check_timeout(value, where)
        else:
            out[key] = _check_text(value, key, where)
    return out


def load_file(path: Path) -> FileConfig:
    """Read and validate the config file; a missing file is an empty configuration."""
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        return FileConfig(path, exists=False)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror})") from None
    try:
        data = tomllib.loads(raw_bytes.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the config file is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_AT.search(str(exc))
        line = f":{m.group(1)}" if m else ""
        raise ConfigError(f"{path}{line}: invalid TOML: {exc}") from None
    default = data.get("default_provider")
    if default is not None and (not isinstance(default, str) or not default.strip()):
        raise ConfigError(_where(path, "default_provider must be a provider name (a string)"))
    providers_raw = data.get("providers", {})
    if not isinstance(providers_raw, Mapping):
        raise ConfigError(_where(path, "providers must be tables: [providers.NAME]"))
    providers = {name: _validate_provider(path, name, raw) for name, raw in providers_raw.items()}
    if default is not None and default.strip() != FALLBACK_NAME and default not in providers:
        raise ConfigError(
            _where(
                path,
                f"default_provider {default!r} is not configured; "
                + _configured_list(providers, path),
            )
        )
    return FileConfig(path, True, default.strip() if default else None, providers)


def _configured_list(providers: Mapping[str, Any], path: Path) -> str:
    if not providers:
        return f"no providers are configured (add a [providers.NAME] table to {path})"
    return "configured: " + ", ".join(sorted(providers))


# ------------------------------------------------------------------------ resolution


@dataclass(frozen=True, slots=True)
class EffectiveProvider:
    """One provider's effective settings, each with its source."""

    name: str
    kind: Setting
    base_url: Setting
    model: Setting
    api_key_env: Setting
    timeout: Setting
    fallback_model: Setting
    #: Whether the key variable is set (checked when the configuration was resolved);
    #: the key itself is never held.
    api_key: Setting

    def to_config(self, path: Path) -> ProviderConfig:
        if not self.model.value:
            raise ConfigError(
                f'provider {self.name!r} has no model: set model = "..." under '
                f"[providers.{self.name}] in {path}, or {ENV_VARS['model']} / {FLAGS['model']}"
            )
        return ProviderConfig(
            name=self.name,
            kind=self.kind.value,
            base_url=self.base_url.value,
            model=self.model.value,
            api_key_env=self.api_key_env.value,
            timeout=self.timeout.value,
            fallback_model=self.fallback_model.value,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in _FIELDS:
            s: Setting = getattr(self, key)
            value = s.value.value if isinstance(s.value, ProviderKind) else s.value
            if isinstance(value, str):
                value = redact_text(value)
            out[key] = {"value": value, "source": s.source}
        out["api_key"] = {"value": self.api_key.value, "source": self.api_key.source}
        return out


@dataclass(frozen=True, slots=True)
class EffectiveConfig:
    path: Path
    path_source: str
    exists: bool
    #: The selected provider's name (None: the deterministic fallback) and its source.
    provider: Setting
    configured: tuple[str, ...]
    providers: Mapping[str, EffectiveProvider]
    #: The selected provider, or None when summaries come from the fallback.
    selected: EffectiveProvider | None
    #: The TJUI_* provider variables that were set (never the key variable).
    env: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Masked, JSON-ready: values with their sources; the key only as set / not set."""
        return {
            "config_file": {
                "path": str(self.path),
                "source": self.path_source,
                "exists": self.exists,
            },
            "provider": {"value": self.provider.value, "source": self.provider.source},
            "providers": {
                name: {"selected": self.selected is p, **p.to_dict()}
                for name, p in self.providers.items()
            },
            "environment": {
                var: redact_text(self.env[var]) for var in ENV_VARS.values() if self.env.get(var)
            },
        }


def _env_value(env: Mapping[str, str], key: str) -> str | None:
    raw = env.get(ENV_VARS[key], "").strip()
    return raw or None


def _pick(
    key: str,
    flags: Overrides,
    env: Mapping[str, str],
    file_values: Mapping[str, Any],
    default: Any,
    apply_overrides: bool,
) -> Setting:
    flag_value = getattr(flags, key) if apply_overrides else None
    if flag_value is not None:
        return Setting(_coerce(key, flag_value, f"flag {FLAGS[key]}"), f"flag {FLAGS[key]}")
    env_value = _env_value(env, key) if apply_overrides else None
    if env_value is not None:
        var = ENV_VARS[key]
        return Setting(_coerce(key, env_value, f"{var}"), f"env {var}")
    if key in file_values:
        return Setting(file_values[key], "file")
    return Setting(default, "default" if default is not None else "unset")


def _coerce(key: str, value: Any, where: str) -> Any:
    if key == "kind":
        return _check_kind(value, where)
    if key == "base_url":
        return _check_url(value, where)
    if key == "api_key_env":
        return _check_key_env(value, where)
    if key == "timeout":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(
                    f"{where}: timeout must be a number of seconds, got {value!r}"
                ) from None
        return _check_timeout(value, where)
    return _check_text(value, key, where)


def _provider(
    name: str,
    file_values: Mapping[str, Any],
    flags: Overrides,
    env: Mapping[str, str],
    apply_overrides: bool,
) -> EffectiveProvider:
    kind = _pick("kind", flags, env, file_values, ProviderKind.OPENAI, apply_overrides)
    picked = {
        key: _pick(key, flags, env, file_values, None, apply_overrides)
        for key in ("base_url", "model", "api_key_env", "fallback_model")
    }
    if picked["base_url"].value is None:
        picked["base_url"] = Setting(_DEFAULT_BASE_URLS[ProviderKind(kind.value)], "default")
    timeout = _pick("timeout", flags, env, file_values, DEFAULT_TIMEOUT, apply_overrides)
    return EffectiveProvider(
        name=name,
        kind=kind,
        timeout=timeout,
        api_key=_key_status(picked["api_key_env"].value, env),
        **picked,
    )


def _key_status(var: str | None, env: Mapping[str, str]) -> Setting:
    """Whether the key variable is set — never the key."""
    if not var:
        return Setting("not needed (no api_key_env)", "none")
    if env.get(var, "").strip():
        return Setting("set (hidden)", f"env {var}")
    return Setting(f"NOT SET — export {var}=<your key>", f"env {var}")


def effective_config(
    flags: Overrides | None = None, env: Mapping[str, str] | None = None
) -> EffectiveConfig:
    """The configuration in effect: flags > environment > file > defaults.

    Raises :class:`ConfigError` for a malformed file, an invalid value, or a selected
    provider name that is not configured (the message lists the configured ones).
    """
    flags = flags or Overrides()
    env = dict(os.environ if env is None else env)
    path, path_source = config_path(env)
    file = load_file(path)

    if flags.provider is not None:
        chosen = Setting(flags.provider.strip(), f"flag {FLAGS['provider']}")
    elif _env_value(env, "provider") is not None:
        chosen = Setting(_env_value(env, "provider"), f"env {ENV_VARS['provider']}")
    elif file.default_provider is not None:
        chosen = Setting(file.default_provider, "file (default_provider)")
    else:
        chosen = Setting(None, "unset")

    name = chosen.value
    adhoc_url = flags.base_url is not None or _env_value(env, "base_url") is not None
    if name is None and adhoc_url:
        name = CUSTOM_PROVIDER
        chosen = Setting(CUSTOM_PROVIDER, "ad hoc (base URL from flags or environment)")
    if name == FALLBACK_NAME:
        chosen = Setting(None, chosen.source)
        name = None
    if name is not None and name not in file.providers and name != CUSTOM_PROVIDER:
        raise ConfigError(
            f"unknown provider {name!r} ({chosen.source}); "
            + _configured_list(file.providers, path)
            + f"; or use {FALLBACK_NAME!r} for the deterministic summary"
        )

    providers: dict[str, EffectiveProvider] = {}
    for pname, values in file.providers.items():
        providers[pname] = _provider(pname, values, flags, env, apply_overrides=pname == name)
    if name == CUSTOM_PROVIDER and CUSTOM_PROVIDER not in providers:
        providers[CUSTOM_PROVIDER] = _provider(CUSTOM_PROVIDER, {}, flags, env, True)
    selected = providers.get(name) if name is not None else None
    env_shown = {var: env[var] for var in ENV_VARS.values() if env.get(var)}
    return EffectiveConfig(
        path=path,
        path_source=path_source,
        exists=file.exists,
        provider=chosen,
        configured=tuple(sorted(file.providers)),
        providers=providers,
        selected=selected,
        env=env_shown,
    )


def resolve_provider_config(
    flags: Overrides | None = None,
    env: Mapping[str, str] | None = None,
    *,
    require_key: bool = True,
) -> ProviderConfig | None:
    """The provider to summarise with, or None for the deterministic fallback.

    With ``require_key`` a configured key variable that is not set is an error naming
    the variable to export (checked now, so a command fails before any work).
    """
    env_map = dict(os.environ if env is None else env)
    cfg = effective_config(flags, env_map)
    if cfg.selected is None:
        return None
    config = cfg.selected.to_config(cfg.path)
    var = config.api_key_env
    if require_key and var and not env_map.get(var, "").strip():
        raise ConfigError(
            f"provider {config.name!r} reads its API key from ${var}, which is not set; "
            f"export {var}=<your key> (or choose --provider {FALLBACK_NAME})"
        )
    return config
