"""/virtual_numbers: list, detail, update, search, purchase, add_operator, remove_operator."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json, parse_query
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services import numbers


class NumberCollection(Resource):
    @operation("List virtual numbers", "read", response=s.Data[list[s.NumberListItem]], errors=(401, 403),
               forbidden_message="Forbidden")
    async def on_get(self, req, resp):
        principal = principal_of(req)
        found = numbers.list_numbers(self.ctx, principal)
        resp.media = data([presenters.number_item(self.ctx, principal, n) for n in found])


class NumberItem(Resource):
    @operation("Get a virtual number (detail form)", "read", response=s.Data[s.NumberDetail], errors=(401, 403, 404))
    async def on_get(self, req, resp, id: int):
        principal = principal_of(req)
        number = numbers.get_number(self.ctx, principal, id)
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))

    @operation("Update a virtual number", "write", body=s.NumberUpdate, response=s.Data[s.NumberDetail],
               errors=(400, 401, 403, 404, 422))
    async def on_patch(self, req, resp, id: int):
        principal = principal_of(req)
        body = await parse_json(req, s.NumberUpdate, self.body_limit)
        number = await numbers.update_number(self.ctx, principal, id, body.model_dump(exclude_unset=True))
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))

    @operation("Attach an operator at the next priority slot", "write", body=s.AddOperator,
               response=s.Data[s.NumberDetail], errors=(400, 401, 403, 404, 422))
    async def on_post_add_operator(self, req, resp, id: int):
        principal = principal_of(req)
        body = await parse_json(req, s.AddOperator, self.body_limit)
        number = await numbers.add_operator(self.ctx, principal, id, body.model_dump(exclude_unset=True))
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))

    # The spec also takes operator_id in a JSON body here; the document shows the query form only, since
    # OpenAPI cannot say "in the query or in the body".
    @operation("Detach an operator (operator_id in the query, or in a JSON body)", "write", query=s.OperatorQuery,
               response=s.Data[s.NumberDetail], errors=(400, 401, 403, 404, 413, 422))
    async def on_delete_remove_operator(self, req, resp, id: int):
        principal = principal_of(req)
        body = await parse_json(req, s.RemoveOperator, self.body_limit)
        operator_id = parse_query(req, s.OperatorQuery).operator_id
        number = await numbers.remove_operator(
            self.ctx, principal, id, operator_id if operator_id is not None else body.operator_id)
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))


class AvailableNumbers(Resource):
    @operation("Search numbers available for purchase", "read", response=s.Data[list[s.NumberCandidate]],
               query=s.AvailableQuery, errors=(401, 403, 422, 502))
    async def on_get(self, req, resp):
        query = parse_query(req, s.AvailableQuery)
        found = await numbers.search_available(self.ctx, query.country, query.number_type)
        resp.media = {"data": [c.model_dump(mode="json") for c in found]}


class NumberPurchase(Resource):
    @operation("Purchase a number", "write", body=s.NumberPurchase, response=s.Data[s.NumberListItem], status=201,
               errors=(400, 401, 403, 422, 502, 503))
    async def on_post(self, req, resp):
        body = await parse_json(req, s.NumberPurchase, self.body_limit)
        principal = principal_of(req)
        number = await numbers.purchase_number(self.ctx, principal, body.model_dump(exclude_unset=True))
        resp.status = 201
        resp.media = data(presenters.number_item(self.ctx, principal, number))
