"""Virtual numbers: search and purchase through the provider, settings, and attached operators."""

from __future__ import annotations

from typing import Any

from callscope.catalog.calls import CallRecord, NumberStats, number_stats, recent_calls
from callscope.errors import NotFound, ServiceUnavailable, ValidationFailed
from callscope.resources import Operator, VirtualNumber, VirtualNumberSpec, VirtualNumberStatus
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.services.indexes import CALLED_NUMBER, holder
from callscope.services.objects import change_spec, create_with_id
from callscope.services.operators import PHONE_INVALID, PHONE_TAKEN, create_operator
from callscope.services.phones import normalize_e164, region_of
from callscope.store.interface import AlreadyExists
from callscope.telephony.base import NumberCandidate

PURCHASE_PAUSED = "virtual_number_purchase_paused"
# A called number reaches one account, so buying one is a rule across accounts ('*': no account has that name).
EVERY_ACCOUNT_NUMBERS = "*virtual-numbers"


def list_numbers(ctx: Context, principal: Principal) -> list[VirtualNumber]:
    numbers = [n for n in scope.all_of(ctx, VirtualNumber, principal.account) if scope.number_visible(principal, n)]
    return sorted(numbers, key=lambda n: n.status.id)


def get_number(ctx: Context, principal: Principal, number_id: int) -> VirtualNumber:
    return scope.visible_number(ctx, principal, number_id)


def attached_operators(ctx: Context, number: VirtualNumber) -> list[Operator]:
    """Attached operators in priority order (objects deleted under the number are skipped)."""
    found = (ctx.store.cached_get(Operator, number.namespace, name) for name in number.spec.operators)
    return [o for o in found if o is not None and o.status.id is not None]


async def call_activity(ctx: Context, number: VirtualNumber) -> tuple[NumberStats, list[CallRecord]]:
    """The number's call statistics and its ten newest calls (the spec's recent_calls limit)."""
    number_id = number.status.id
    stats = (await ctx.catalog.read(number_stats, number.namespace, [number_id]))[number_id]
    return stats, await ctx.catalog.read(recent_calls, number.namespace, number_id, 10)


def available_operators(ctx: Context, principal: Principal, number: VirtualNumber) -> list[Operator]:
    attached = set(number.spec.operators)
    operators = [
        o for o in scope.all_of(ctx, Operator, principal.account)
        if o.spec.active and o.name not in attached and scope.operator_visible(principal, o)
    ]
    return sorted(operators, key=lambda o: (o.spec.name.casefold(), o.status.id))


async def update_number(ctx: Context, principal: Principal, number_id: int, fields: dict[str, Any]) -> VirtualNumber:
    number = scope.visible_number(ctx, principal, number_id)
    changes = {k: (v.strip() or None) if k == "name" and isinstance(v, str) else v for k, v in fields.items()}

    def apply(draft: VirtualNumber) -> None:
        draft.spec = draft.spec.model_copy(update=changes)

    return await change_spec(ctx, number, apply)


async def search_available(ctx: Context, country: str, number_type: str) -> list[NumberCandidate]:
    """Numbers on sale (country and number_type were checked at the API's edge)."""
    return await ctx.provider.search(country, number_type)


async def purchase_number(ctx: Context, principal: Principal, fields: dict[str, Any]) -> VirtualNumber:
    if ctx.settings.virtual_number_purchase_paused:
        raise ServiceUnavailable(PURCHASE_PAUSED)
    raw = (fields.get("phone_number") or "").strip()
    if not raw:
        raise ValidationFailed("phone_number is required")
    phone = normalize_e164(raw, None)
    if phone is None:
        raise ValidationFailed(PHONE_INVALID)
    country = (fields.get("country_code") or region_of(phone) or "").upper()
    number_type = fields.get("number_type") or "mobile"
    project = scope.own_project(ctx, principal) if principal.scoped else None
    async with ctx.exclusive(EVERY_ACCOUNT_NUMBERS):
        if holder(ctx.store, VirtualNumber, CALLED_NUMBER, phone) is not None:  # in any account: calls reach one
            raise ValidationFailed(PHONE_TAKEN)
        bought = await ctx.provider.purchase(phone, country, number_type, fields.get("requirement_group_id"))
        spec = VirtualNumberSpec(
            phone_number=bought.phone_number, name=(fields.get("name") or "").strip() or None,
            country_code=bought.country_code, number_type=bought.number_type, recording=True,
            project=project.name if project else None,
        )
        status = VirtualNumberStatus(
            provider=bought.provider, provider_ref=bought.provider_ref,
            upfront_cost=bought.upfront_cost or fields.get("upfront_cost"),
            monthly_cost=bought.monthly_cost or fields.get("monthly_cost"),
        )
        try:
            return await create_with_id(ctx, VirtualNumber, principal.account, spec.phone_number, spec, status,
                                        unique=(spec.phone_number,))
        except AlreadyExists:  # bought a moment ago through another API process
            raise ValidationFailed(PHONE_TAKEN) from None


async def add_operator(ctx: Context, principal: Principal, number_id: int, fields: dict[str, Any]) -> VirtualNumber:
    number = scope.visible_number(ctx, principal, number_id)
    if fields.get("operator_id") is not None:  # the spec: operator_id wins over phone_number
        operator = scope.visible_operator(ctx, principal, fields["operator_id"])
    elif fields.get("phone_number"):
        new_fields = {"name": fields.get("name") or "Operator", "phone_number": fields["phone_number"]}
        operator = await create_operator(ctx, principal, new_fields)
    else:
        raise ValidationFailed("operator_id or phone_number is required")

    def attach(draft: VirtualNumber) -> None:
        if operator.name not in draft.spec.operators:
            draft.spec.operators.append(operator.name)

    return await change_spec(ctx, number, attach)


async def remove_operator(ctx: Context, principal: Principal, number_id: int, operator_id: int | None) -> VirtualNumber:
    number = scope.visible_number(ctx, principal, number_id)
    if operator_id is None:
        raise ValidationFailed("operator_id is required")
    operator = scope.visible_operator(ctx, principal, operator_id)
    if operator.name not in number.spec.operators:
        raise NotFound()

    def detach(draft: VirtualNumber) -> None:
        if operator.name in draft.spec.operators:
            draft.spec.operators.remove(operator.name)

    return await change_spec(ctx, number, detach)
