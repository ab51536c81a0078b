"""The account's processing settings as `GET /app/settings` and the Settings → Processing page show them: one
reading of the account and the server's settings for both."""

from __future__ import annotations

from dataclasses import dataclass

from callscope.resources import Account
from callscope.services.accounts import account_display_name
from callscope.services.context import Context

EMOTION_CLASSES = ["happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust"]


@dataclass(frozen=True)
class ProcessingSettings:
    account: str  # the display name
    default_language: str
    upload_limits_bytes: dict[str, int]  # by format
    default_audio_retention_days: int
    emotion_classes: list[str]
    rate_limiting_enabled: bool
    virtual_number_purchase_paused: bool

    @property
    def audio_formats(self) -> list[str]:
        return sorted(self.upload_limits_bytes)


def processing_settings(ctx: Context, account: str) -> ProcessingSettings:
    settings = ctx.settings
    obj = ctx.store.cached_get(Account, account, account)
    return ProcessingSettings(
        account=account_display_name(ctx, account),
        default_language=obj.spec.default_language if obj else "en",
        upload_limits_bytes={fmt: mb * 1_000_000 for fmt, mb in sorted(settings.upload_limits_mb.items())},
        default_audio_retention_days=(obj.spec.audio_retention_days if obj and obj.spec.audio_retention_days
                                      else settings.default_audio_retention_days),
        emotion_classes=EMOTION_CLASSES,
        rate_limiting_enabled=settings.rate_limit_enabled,
        virtual_number_purchase_paused=settings.virtual_number_purchase_paused,
    )
