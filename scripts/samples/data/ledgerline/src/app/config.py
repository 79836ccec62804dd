"""Settings, read from the environment (and .env in development)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    app_env: str = "development"
    database_url: str
    redis_url: str = "redis://localhost:6379/0"
    payments_base_url: str = "https://api.stripe.com"
    stripe_api_key: SecretStr
    stripe_webhook_secret: SecretStr
    default_tax_rate: float = Field(0.0, ge=0, le=0.3)
    invoice_bucket: str = "ledgerline-invoices"


@lru_cache
def get_settings() -> Settings:
    return Settings()
