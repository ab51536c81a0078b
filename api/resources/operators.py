"""/operators, /operators/{id}, add_project and remove_project."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json, parse_query
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services import operators


class OperatorCollection(Resource):
    @operation("List operators (sorted by name)", "read", response=s.OperatorList, errors=(401, 403),
               name="listOperators",
               scope="Sees only the operators linked to its project.")
    async def on_get(self, req, resp):
        principal = principal_of(req)
        resp.media = data(presenters.operator_items(self.ctx, principal, operators.list_operators(self.ctx, principal)))

    @operation("Create an operator", "write", body=s.OperatorCreate, response=s.Operator,
               errors=(400, 401, 403, 404, 422),
               name="createOperator",
               description=("Creates an operator of the account (initials derive from the name) and links it to "
                            "project_id when given. Answers 200, as the spec documents."),
               scope="The new operator is linked to its own project; another project_id is 404.",
               error_notes={404: "project_id names no project the key can see.",
                            422: "A field is invalid or missing, or the external_id or phone number is already "
                                 "taken."})
    async def on_post(self, req, resp):
        body = await parse_json(req, s.OperatorCreate, self.body_limit)
        principal = principal_of(req)
        created = await operators.create_operator(self.ctx, principal, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.operator_detail(self.ctx, principal, created))  # the spec documents 200, not 201


class OperatorItem(Resource):
    @operation("Get an operator", "read", response=s.Operator, errors=(401, 403, 404),
               name="getOperator",
               scope="Sees only the operators linked to its project; others are 404.",
               error_notes={404: "No operator of that id the key can see."})
    async def on_get(self, req, resp, id: int):
        principal = principal_of(req)
        resp.media = data(presenters.operator_detail(self.ctx, principal,
                                                     operators.get_operator(self.ctx, principal, id)))

    @operation("Update an operator (only supplied fields change)", "write", body=s.OperatorUpdate,
               response=s.Operator, errors=(400, 401, 403, 404, 422),
               name="updateOperator",
               scope="Changes only the operators linked to its project; others are 404.",
               error_notes={404: "No operator of that id the key can see.",
                            422: "A field is invalid, or the phone number is taken."})
    async def on_patch(self, req, resp, id: int):
        body = await parse_json(req, s.OperatorUpdate, self.body_limit)
        updated = await operators.update_operator(self.ctx, principal_of(req), id, body.model_dump(exclude_unset=True))
        resp.media = data(presenters.operator_detail(self.ctx, principal_of(req), updated))

    @operation("Link the operator to a project (idempotent)", "write", body=s.ProjectLink,
               response=s.Operator, errors=(400, 401, 403, 404, 422),
               name="addOperatorToProject",
               scope="Links only to its own project (it may leave out project_id); another project is 404.",
               error_notes={404: "No operator or project of that id the key can see.",
                            422: "project_id is invalid or missing."})
    async def on_post_add_project(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectLink, self.body_limit)
        updated = await operators.add_project(self.ctx, principal_of(req), id, body.project_id)
        resp.media = data(presenters.operator_detail(self.ctx, principal_of(req), updated))

    # The spec also takes project_id in a JSON body here; the document shows the query form only, since
    # OpenAPI cannot say "in the query or in the body".
    @operation("Unlink the operator from a project (project_id in the query, or in a JSON body)", "write",
               query=s.ProjectQuery, response=s.Operator, errors=(400, 401, 403, 404, 413, 422),
               name="removeOperatorFromProject",
               scope="Unlinks only from its own project (it may leave out project_id); another project is 404.",
               error_notes={404: "No operator or project of that id the key can see.",
                            422: "project_id is invalid or missing."})
    async def on_delete_remove_project(self, req, resp, id: int):
        body = await parse_json(req, s.ProjectLink, self.body_limit)
        project_id = parse_query(req, s.ProjectQuery).project_id
        updated = await operators.remove_project(
            self.ctx, principal_of(req), id, project_id if project_id is not None else body.project_id)
        resp.media = data(presenters.operator_detail(self.ctx, principal_of(req), updated))
