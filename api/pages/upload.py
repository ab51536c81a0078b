"""Upload: an account's admin picks a project and sends one or several recordings from the browser, through the
API's streaming upload (api/uploading.py: the same limits, formats and service as POST /recordings).

Admins only: uploading writes to the account, which members (read-only on the pages) may not; an admin could make
an account-wide write key anyway. The page's script sends each file with XMLHttpRequest (its upload progress), then
polls the recording's state as the recording page does; without script the form posts one file and the answer is
the recording's page, which shows it processing until it completes."""

from __future__ import annotations

import falcon

from callscope.api.pages import web
from callscope.api.uploading import Form, receive
from callscope.resources import Project
from callscope.services import scope
from callscope.services.app_settings import processing_settings
from callscope.services.context import Context
from callscope.services.member_auth import HOME_PATH

PATH = "/upload"


class UploadPage:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    @web.page
    async def on_get(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)
        web.render(req, resp, "upload.html", person=person, account=account,
                   projects=sorted(scope.all_of(self.ctx, Project, account), key=lambda p: p.spec.name),
                   limits=processing_settings(self.ctx, account).upload_limits_bytes,
                   chosen=req.get_param("project_id"))

    @web.page
    async def on_post(self, req, resp):
        person, account = await web.require_admin(self.ctx, req)

        def csrf_first(form: Form) -> None:  # checked before any audio is kept
            web.check_session_csrf(person, {"csrf": (form.get("csrf") or [""])[-1]})

        found, _ = await receive(self.ctx, person.admin_principal(account), req, csrf_first)
        r = found.recording
        page = f"{HOME_PATH}/{r.public_id}"
        if req.client_prefers(["text/html", "application/json"]) != "application/json":
            raise falcon.HTTPSeeOther(page)
        resp.status = falcon.HTTP_201
        resp.media = {"public_id": r.public_id, "name": r.name, "status": r.status, "url": page,
                      "state": f"{page}/state"}
        resp.set_header("Cache-Control", "no-store")
