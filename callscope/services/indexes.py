"""In-memory indexes of the object cache: authentication by key hash and the account-wide uniqueness
rules, so neither scans every object of a kind."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from callscope.resources import ApiKey, Operator, Resource, Tag, VirtualNumber
from callscope.store.cache import CachedStore

R = TypeVar("R", bound=Resource)

KEY_HASH = "keyHash"
OPERATOR_EXTERNAL_ID = "externalId"
PHONE = "phoneNumber"
# A number's E.164 alone, unique in all accounts: the carrier routes it to one number, and its webhooks name no account.
CALLED_NUMBER = "calledNumber"
TAG_NAME = "projectTagName"


def register(store: CachedStore) -> None:
    store.add_index(ApiKey, KEY_HASH, lambda k: k.status.key_hash)
    store.add_index(Operator, OPERATOR_EXTERNAL_ID,
                    lambda o: (o.namespace, o.spec.external_id) if o.spec.external_id else None)
    store.add_index(Operator, PHONE, lambda o: (o.namespace, o.spec.phone_number) if o.spec.phone_number else None)
    store.add_index(VirtualNumber, CALLED_NUMBER, lambda n: n.spec.phone_number)
    store.add_index(Tag, TAG_NAME, lambda t: (t.namespace, t.spec.project, t.spec.name.casefold()))


def holders(store: CachedStore, kind: type[R], index: str, value: tuple, besides: str | None = None) -> list[R]:
    """Objects holding `value` in a uniqueness index, other than the one named `besides`."""
    return [o for o in store.by_index(kind, index, value) if o.name != besides]


def seniority(obj: Resource) -> tuple:
    """The order in which objects claiming one unique value (or one id) hold it: created first, ties by account
    and name (creation timestamps have whole seconds), so every reconcile of either object gives the same answer."""
    created = obj.metadata.creation_timestamp
    return (created.timestamp() if created else float("inf"), obj.namespace, obj.name)


def holder(store: CachedStore, kind: type[R], index: str, value: Hashable) -> R | None:
    """The object that holds `value` of a uniqueness index: the senior claimant; the others are in Conflict."""
    return min(store.by_index(kind, index, value), key=seniority, default=None)
