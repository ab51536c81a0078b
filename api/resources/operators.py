"""/operators, /operators/{id}, add_project and remove_project."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json, query_int
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import QueryParam, operation

from callscope.services import operators

PROJECT_ID_QUERY = QueryParam("project_id", {"type": "integer"}, "Required for account-wide keys (or in the body).")


class OperatorCollection(Resource):
    @operation("List operators (sorted by name)", "read", response=s.Data[list[s.OperatorListItem]], errors=(401, 403))
    async def on_get(self, req, resp):
        found = operators.list_operators(self.ctx, principal_of(req))
        resp.media = data(presenters.operator_items(self.ctx, found))

    @operation("Create an operator", "write", body=s.OperatorCreate, response=s.Data[s.OperatorDetail],
               errors=(400, 401, 403, 404, 422))
    async def on_post(self, req, resp):
        body = await parse_json(req, s.OperatorCreate, self.body_limit)
        created = await operators.create_operator(self.ctx, principal_of(req), body.model_dump(exclude_unset=True))
        resp.media = data(presenters.operator_detail(self.ctx, created))  # the spec documents 200, not 201


class OperatorItem(Resource):
    @operation("Get an operator", "read", response=s.Data[s.OperatorDetail], errors=(401, 403, 404))
    async def on_get(self, req, resp, id: int):
        resp.media = data(presenters.operator_detail(self.ctx, operators.get_operator(self.ctx, principal_of(req), id)))

    @operation("Update an operator (only supplied fields change)", "write", body=s.OperatorUpdate,
               response=s.Data[s.OperatorDetail], errors=(400, 401, 403, 404, 422))
    async def on_patch(self, req, resp, id: int):
        body = await parse_json(req, s.OperatorUpdate, self.body_limit)
        updated = await operators.update_operator(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.operator_detail(self.ctx, updated))

    @operation("Link the operator to a project (idempotent)", "write", body=s.ProjectLink,
               response=s.Data[s.OperatorDetail], errors=(400, 401, 403, 404, 422))
    async def on_post_add_project(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectLink, self.body_limit)
        updated = await operators.add_project(self.ctx, principal_of(req), id, body.project_id)
        resp.media = data(presenters.operator_detail(self.ctx, updated))

    @operation("Unlink the operator from a project", "write", body=s.ProjectLink, query=(PROJECT_ID_QUERY,),
               response=s.Data[s.OperatorDetail], errors=(400, 401, 403, 404, 422))
    async def on_delete_remove_project(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectLink, self.body_limit)
        project_id = query_int(req, "project_id")
        updated = await operators.remove_project(
            self.ctx, principal_of(req), id, project_id if project_id is not None else body.project_id)
        resp.media = data(presenters.operator_detail(self.ctx, updated))
