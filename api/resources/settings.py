"""/app/settings: the account's processing settings as this key sees them."""

from __future__ import annotations

from callscope.api import schemas as s
from callscope.api.pagination import DEFAULT_PER_PAGE, MAX_PER_PAGE
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services.app_settings import processing_settings


class AppSettingsResource(Resource):
    @operation("The account's processing settings", "read", response=s.AppSettings, errors=(401, 403),
               name="getAppSettings",
               description=("The account's processing settings (languages, audio formats and upload limits, "
                            "retention, emotion classes, pagination, rate limiting, number purchase) and the calling "
                            "key's name, permissions, project, expiry and rate limit."),
               scope="Same as an account-wide key; `api_key.project_id` names its project.")
    async def on_get(self, req, resp):
        principal = principal_of(req)
        shown = processing_settings(self.ctx, principal.account)
        resp.media = data(s.AppSettingsDetail(
            account=shown.account,
            default_language=shown.default_language,
            audio_formats=shown.audio_formats,
            upload_limits_bytes=shown.upload_limits_bytes,
            default_audio_retention_days=shown.default_audio_retention_days,
            emotion_classes=shown.emotion_classes,
            pagination={"default_per_page": DEFAULT_PER_PAGE, "max_per_page": MAX_PER_PAGE},
            rate_limiting_enabled=shown.rate_limiting_enabled,
            virtual_number_purchase_paused=shown.virtual_number_purchase_paused,
            api_key=s.KeyInfo(name=principal.key_name, permissions=sorted(principal.permissions),
                              project_id=principal.project_id, expires_at=principal.expires_at,
                              rate_limit_per_minute=(principal.rate_limit_per_minute
                                                     or self.ctx.settings.rate_limit_default_per_minute)),
        ))
