"""/operators, /operators/{id}, add_project and remove_project."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json, parse_query
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services import operators


class OperatorCollection(Resource):
    @operation("List operators (sorted by name)", "read", response=s.Data[list[s.OperatorListItem]], errors=(401, 403))
    async def on_get(self, req, resp):
        principal = principal_of(req)
        resp.media = data(presenters.operator_items(self.ctx, principal, operators.list_operators(self.ctx, principal)))

    @operation("Create an operator", "write", body=s.OperatorCreate, response=s.Data[s.OperatorDetail],
               errors=(400, 401, 403, 404, 422))
    async def on_post(self, req, resp):
        body = await parse_json(req, s.OperatorCreate, self.body_limit)
        principal = principal_of(req)
        created = await operators.create_operator(self.ctx, principal, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.operator_detail(self.ctx, principal, created))  # the spec documents 200, not 201


class OperatorItem(Resource):
    @operation("Get an operator", "read", response=s.Data[s.OperatorDetail], errors=(401, 403, 404))
    async def on_get(self, req, resp, id: int):
        principal = principal_of(req)
        resp.media = data(presenters.operator_detail(self.ctx, principal,
                                                     operators.get_operator(self.ctx, principal, id)))

    @operation("Update an operator (only supplied fields change)", "write", body=s.OperatorUpdate,
               response=s.Data[s.OperatorDetail], errors=(400, 401, 403, 404, 422))
    async def on_patch(self, req, resp, id: int):
        body = await parse_json(req, s.OperatorUpdate, self.body_limit)
        updated = await operators.update_operator(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.operator_detail(self.ctx, principal_of(req), updated))

    @operation("Link the operator to a project (idempotent)", "write", body=s.ProjectLink,
               response=s.Data[s.OperatorDetail], errors=(400, 401, 403, 404, 422))
    async def on_post_add_project(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectLink, self.body_limit)
        updated = await operators.add_project(self.ctx, principal_of(req), id, body.project_id)
        resp.media = data(presenters.operator_detail(self.ctx, principal_of(req), updated))

    # The spec also takes project_id in a JSON body here; the document shows the query form only, since
    # OpenAPI cannot say "in the query or in the body".
    @operation("Unlink the operator from a project (project_id in the query, or in a JSON body)", "write",
               query=s.ProjectQuery, response=s.Data[s.OperatorDetail], errors=(400, 401, 403, 404, 413, 422))
    async def on_delete_remove_project(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectLink, self.body_limit)
        project_id = parse_query(req, s.ProjectQuery).project_id
        updated = await operators.remove_project(
            self.ctx, principal_of(req), id, project_id if project_id is not None else body.project_id)
        resp.media = data(presenters.operator_detail(self.ctx, principal_of(req), updated))
