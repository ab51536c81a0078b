"""The interactive API reference at /docs: Swagger UI over the service's own OpenAPI document (/openapi.json),
served from the files the `swagger-ui-bundle-v2` package ships (no CDN: it works offline and behind a firewall).
Public, as the document is; a reader tries an operation with their own API key (*Authorize*)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import falcon
import swagger_ui_bundle

from callscope.api.pages import web
from callscope.api.pages.web import Asset

PATH = "/docs"
_FILES = Path(swagger_ui_bundle.swagger_ui_path)
SWAGGER_UI = {name: Asset(body, content_type, hashlib.sha256(body).hexdigest()[:12])
              for name, content_type in (("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
                                         ("swagger-ui.css", "text/css; charset=utf-8"))
              for body in [(_FILES / name).read_bytes()]}


class ApiReference:
    async def on_get(self, req, resp):
        web.render(req, resp, "reference.html", swagger_ui={
            name: f"{PATH}/swagger-ui/{name}?v={asset.version}" for name, asset in SWAGGER_UI.items()})
        # Swagger UI sets style attributes as it draws: its page alone allows them
        web.allow_inline_styles(resp)


class SwaggerUiFile:
    async def on_get(self, req, resp, name: str):
        asset = SWAGGER_UI.get(name)
        if asset is None:
            raise falcon.HTTPNotFound()
        web.serve_asset(req, resp, asset)
