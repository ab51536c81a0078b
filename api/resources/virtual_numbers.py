"""/virtual_numbers: list, detail, update, search, purchase, add_operator, remove_operator."""

from __future__ import annotations

from callscope.api import presenters
from callscope.api import schemas as s
from callscope.api.body import parse_json, parse_query
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.services import numbers


class NumberCollection(Resource):
    @operation("List virtual numbers", "read", response=s.VirtualNumberList, errors=(401, 403),
               forbidden_message="Forbidden",
               name="listVirtualNumbers",
               scope="Sees only its own project's numbers.",
               error_notes={403: "The key lacks the read permission (the message is `Forbidden`, as the spec says)."})
    async def on_get(self, req, resp):
        principal = principal_of(req)
        found = numbers.list_numbers(self.ctx, principal)
        resp.media = data([presenters.number_item(self.ctx, principal, n) for n in found])


class NumberItem(Resource):
    @operation("Get a virtual number (detail form)", "read", response=s.VirtualNumber, errors=(401, 403, 404),
               name="getVirtualNumber",
               scope="Sees only its own project's numbers; `available_operators` lists only operators it can see.",
               error_notes={404: "No virtual number of that id the key can see."})
    async def on_get(self, req, resp, id: int):
        principal = principal_of(req)
        number = numbers.get_number(self.ctx, principal, id)
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))

    @operation("Update a virtual number", "write", body=s.NumberUpdate, response=s.VirtualNumber,
               errors=(400, 401, 403, 404, 422),
               name="updateVirtualNumber",
               scope="Changes only its own project's numbers.",
               error_notes={404: "No virtual number of that id the key can see.",
                            422: "A field is invalid."})
    async def on_patch(self, req, resp, id: int):
        principal = principal_of(req)
        body = await parse_json(req, s.NumberUpdate, self.body_limit)
        number = await numbers.update_number(self.ctx, principal, id, body.model_dump(exclude_unset=True))
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))

    @operation("Attach an operator at the next priority slot", "write", body=s.AddOperator,
               response=s.VirtualNumber, errors=(400, 401, 403, 404, 422),
               name="addOperatorToNumber",
               description=("Attaches an operator at the next priority slot: an existing one by operator_id, or a new "
                            "one created from phone_number (and name)."),
               scope="Uses only its own project's numbers and the operators it can see.",
               error_notes={404: "No virtual number or operator of that id the key can see.",
                            422: "Neither operator_id nor phone_number, or an invalid phone number."})
    async def on_post_add_operator(self, req, resp, id: int):
        principal = principal_of(req)
        body = await parse_json(req, s.AddOperator, self.body_limit)
        number = await numbers.add_operator(self.ctx, principal, id, body.model_dump(exclude_unset=True))
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))

    # The spec also takes operator_id in a JSON body here; the document shows the query form only, since
    # OpenAPI cannot say "in the query or in the body".
    @operation("Detach an operator (operator_id in the query, or in a JSON body)", "write", query=s.OperatorQuery,
               response=s.VirtualNumber, errors=(400, 401, 403, 404, 413, 422),
               name="removeOperatorFromNumber",
               scope="Uses only its own project's numbers and the operators it can see.",
               error_notes={404: "No virtual number or operator of that id the key can see.",
                            422: "operator_id is invalid or missing."})
    async def on_delete_remove_operator(self, req, resp, id: int):
        principal = principal_of(req)
        body = await parse_json(req, s.RemoveOperator, self.body_limit)
        operator_id = parse_query(req, s.OperatorQuery).operator_id
        number = await numbers.remove_operator(
            self.ctx, principal, id, operator_id if operator_id is not None else body.operator_id)
        resp.media = data(await presenters.number_detail(self.ctx, principal, number))


class AvailableNumbers(Resource):
    @operation("Search numbers available for purchase", "read", response=s.AvailableNumberList,
               query=s.AvailableQuery, errors=(401, 403, 422, 502),
               name="listAvailableVirtualNumbers",
               description="Numbers the phone-number provider offers in a country, with their costs.",
               scope="Same as an account-wide key.",
               error_notes={422: "An unknown country or number type.",
                            502: "The provider's answer could not be read."})
    async def on_get(self, req, resp):
        query = parse_query(req, s.AvailableQuery)
        found = await numbers.search_available(self.ctx, query.country, query.number_type)
        resp.media = {"data": [c.model_dump(mode="json") for c in found]}


class NumberPurchase(Resource):
    @operation("Purchase a number", "write", body=s.NumberPurchase, response=s.PurchasedVirtualNumber, status=201,
               errors=(400, 401, 403, 422, 502, 503),
               name="purchaseVirtualNumber",
               description="Buys a number of the available list from the provider.",
               scope="Same as an account-wide key; the number belongs to the account.",
               error_notes={422: "A field is invalid, or the provider refused the purchase (its message).",
                            502: "The provider's answer could not be read.",
                            503: "Purchases are paused (`virtual_number_purchase_paused` in the settings)."})
    async def on_post(self, req, resp):
        body = await parse_json(req, s.NumberPurchase, self.body_limit)
        principal = principal_of(req)
        number = await numbers.purchase_number(self.ctx, principal, body.model_dump(exclude_unset=True))
        resp.status = 201
        resp.media = data(presenters.number_item(self.ctx, principal, number))
