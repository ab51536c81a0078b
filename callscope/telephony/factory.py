"""Build the configured phone-number provider from Settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from callscope.telephony.base import NumberProvider
from callscope.telephony.sandbox import SandboxProvider
from callscope.telephony.twilio import TwilioProvider

if TYPE_CHECKING:
    from callscope.config import Settings

SANDBOX_STATE_FILE = "sandbox-provider.json"


class ProviderConfigurationError(RuntimeError):
    """The provider settings are incomplete; raised at start-up, never per request."""


def build_provider(settings: Settings) -> NumberProvider:
    if settings.number_provider == "sandbox":
        return SandboxProvider(settings.data_dir / SANDBOX_STATE_FILE)
    if settings.number_provider == "twilio":
        missing = [
            env
            for env, value in (
                ("CALLSCOPE_TWILIO_ACCOUNT_SID", settings.twilio_account_sid),
                ("CALLSCOPE_TWILIO_AUTH_TOKEN", settings.twilio_auth_token),
            )
            if not value
        ]
        if missing:
            raise ProviderConfigurationError(
                f"CALLSCOPE_NUMBER_PROVIDER=twilio needs {' and '.join(missing)} to be set"
            )
        return TwilioProvider(
            settings.twilio_account_sid,  # type: ignore[arg-type]
            settings.twilio_auth_token,  # type: ignore[arg-type]
            base_url=settings.twilio_base_url,
            bundle_sids=dict(settings.twilio_bundles),
        )
    raise ProviderConfigurationError(f"Unknown number provider: {settings.number_provider!r}")
