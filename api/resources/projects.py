"""/projects and /projects/{id}."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services import projects


class ProjectCollection(Resource):
    @operation("List projects (ordered by name; a project-scoped key sees its own)", "read",
               response=s.ProjectList, errors=(401, 403),
               name="listProjects",
               scope="Sees its own project only.")
    async def on_get(self, req, resp):
        resp.media = data([presenters.project_short(p) for p in projects.list_projects(self.ctx, principal_of(req))])

    @operation("Create a project (account-wide keys only)", "write", body=s.ProjectCreate,
               response=s.Project, status=201, errors=(400, 401, 403, 422),
               name="createProject",
               description=("Creates a project with its analysis settings: languages, the long-pause threshold, "
                            "transcription hints, retention, the quality baseline, redaction and trackers (saved "
                            "searches each analysed call is matched against)."),
               scope="Cannot create projects (403): only account-wide keys can.",
               error_notes={403: "The key lacks the write permission, or is scoped to a project.",
                            422: "A field is invalid, or name or language is missing."})
    async def on_post(self, req, resp):
        body = await parse_json(req, s.ProjectCreate, self.body_limit)
        project = await projects.create_project(self.ctx, principal_of(req), body.model_dump(exclude_unset=True))
        resp.status = 201
        resp.media = data(await presenters.project_detail(self.ctx, project))


class ProjectItem(Resource):
    @operation("Get a project (detail form)", "read", response=s.Project, errors=(401, 403, 404),
               name="getProject",
               error_notes={404: "No project of that id the key can see."})
    async def on_get(self, req, resp, id: int):
        resp.media = data(await presenters.project_detail(self.ctx,
                                                          projects.get_project(self.ctx, principal_of(req), id)))

    @operation("Update a project (only supplied fields change)", "write", body=s.ProjectUpdate,
               response=s.Project, errors=(400, 401, 403, 404, 422),
               name="updateProject",
               description=("Changes the supplied fields only; `redaction` and `trackers` are replaced whole (null "
                            "turns them off). Changes apply to analyses run afterwards, but trackers apply to the "
                            "calls analysed before as well: the background tracker pass matches them within "
                            "CALLSCOPE_TRACKER_INTERVAL_SECONDS, without holding up the request."),
               scope="Changes its own project only; any other id is 404.",
               error_notes={404: "No project of that id the key can see.",
                            422: "A field is invalid."})
    async def on_patch(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectUpdate, self.body_limit)
        project = await projects.update_project(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(await presenters.project_detail(self.ctx, project))

    @operation("Delete a project and everything in it (irreversible)", "delete", status=204, errors=(401, 403, 404),
               name="deleteProject",
               description=("Deletes the project with its recordings, tags, virtual numbers (released at the "
                            "provider) and the API keys scoped to it; its operators are unlinked and kept. "
                            "Irreversible."),
               scope="May delete its own project (and with it the key itself); any other id is 404.",
               error_notes={404: "No project of that id the key can see."})
    async def on_delete(self, req, resp, id: int):
        await projects.delete_project(self.ctx, principal_of(req), id)
        resp.status = 204
