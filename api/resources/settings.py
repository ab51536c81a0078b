"""/app/settings: the account's processing settings as this key sees them."""

from __future__ import annotations

from callscope.api import schemas as s
from callscope.api.pagination import DEFAULT_PER_PAGE, MAX_PER_PAGE
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.resources import Account
from callscope.services.accounts import account_display_name

EMOTION_CLASSES = ["happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust"]


class AppSettingsResource(Resource):
    @operation("The account's processing settings", "read", response=s.AppSettings, errors=(401, 403),
               name="getAppSettings",
               description=("The account's processing settings (languages, audio formats and upload limits, "
                            "retention, emotion classes, pagination, rate limiting, number purchase) and the calling "
                            "key's name, permissions, project, expiry and rate limit."),
               scope="Same as an account-wide key; `api_key.project_id` names its project.")
    async def on_get(self, req, resp):
        principal = principal_of(req)
        settings = self.ctx.settings
        account = self.ctx.store.cached_get(Account, principal.account, principal.account)
        resp.media = data(s.AppSettingsDetail(
            account=account_display_name(self.ctx, principal.account),
            default_language=account.spec.default_language if account else "en",
            audio_formats=sorted(settings.upload_limits_mb),
            upload_limits_bytes={fmt: mb * 1_000_000 for fmt, mb in settings.upload_limits_mb.items()},
            default_audio_retention_days=(account.spec.audio_retention_days
                                          if account and account.spec.audio_retention_days
                                          else settings.default_audio_retention_days),
            emotion_classes=EMOTION_CLASSES,
            pagination={"default_per_page": DEFAULT_PER_PAGE, "max_per_page": MAX_PER_PAGE},
            rate_limiting_enabled=settings.rate_limit_enabled,
            virtual_number_purchase_paused=settings.virtual_number_purchase_paused,
            api_key=s.KeyInfo(name=principal.key_name, permissions=sorted(principal.permissions),
                              project_id=principal.project_id, expires_at=principal.expires_at,
                              rate_limit_per_minute=(principal.rate_limit_per_minute
                                                     or settings.rate_limit_default_per_minute)),
        ))
