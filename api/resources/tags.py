"""/tags and /tags/{id}."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json, parse_query
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services import tags


class TagCollection(Resource):
    @operation("List a project's tags (ordered by name)", "read", response=s.TagList,
               query=s.ProjectQuery, errors=(401, 403, 404, 422),
               name="listTags",
               scope="Lists its own project's tags (it may leave out project_id).",
               error_notes={404: "project_id names no project the key can see.",
                            422: "project_id is invalid or missing."})
    async def on_get(self, req, resp):
        found = tags.list_tags(self.ctx, principal_of(req), parse_query(req, s.ProjectQuery).project_id)
        resp.media = data(await presenters.tag_outs(self.ctx, found))

    @operation("Create a tag (idempotent on name: 200 with the existing tag)", "write", body=s.TagCreate,
               response=s.Tag, status=201, extra_statuses={200: s.Tag},
               errors=(400, 401, 403, 404, 422),
               name="createTag",
               description=("Creates a tag of the project; its colour is the first of the palette no tag of the "
                            "project uses. A tag of the same name answers 200 with the existing tag."),
               scope="Creates tags of its own project only (it may leave out project_id).",
               error_notes={404: "project_id names no project the key can see.",
                            422: "A field is invalid or missing."})
    async def on_post(self, req, resp):
        body = await parse_json(req, s.TagCreate, self.body_limit)
        tag, created = await tags.create_tag(self.ctx, principal_of(req), body.name, body.project_id)
        resp.status = 201 if created else 200
        resp.media = data((await presenters.tag_outs(self.ctx, [tag]))[0])


class TagItem(Resource):
    @operation("Delete a tag (removed from the recordings that carry it)", "write", status=204,
               errors=(401, 403, 404),
               name="deleteTag",
               error_notes={404: "No tag of that id the key can see."})
    async def on_delete(self, req, resp, id: int):
        await tags.delete_tag(self.ctx, principal_of(req), id)
        resp.status = 204
