"""In-memory indexes of the object cache: authentication by key hash and the account-wide uniqueness
rules, so neither scans every object of a kind."""

from __future__ import annotations

from typing import TypeVar

from callscope.resources import ApiKey, Operator, Resource, Tag, VirtualNumber
from callscope.store.cache import CachedStore

R = TypeVar("R", bound=Resource)

KEY_HASH = "keyHash"
OPERATOR_EXTERNAL_ID = "externalId"
PHONE = "phoneNumber"
CALLED_NUMBER = "calledNumber"  # a number's E.164 alone: the carrier's webhooks name no account
TAG_NAME = "projectTagName"


def register(store: CachedStore) -> None:
    store.add_index(ApiKey, KEY_HASH, lambda k: k.status.key_hash)
    store.add_index(Operator, OPERATOR_EXTERNAL_ID,
                    lambda o: (o.namespace, o.spec.external_id) if o.spec.external_id else None)
    store.add_index(Operator, PHONE, lambda o: (o.namespace, o.spec.phone_number) if o.spec.phone_number else None)
    store.add_index(VirtualNumber, PHONE, lambda n: (n.namespace, n.spec.phone_number))
    store.add_index(VirtualNumber, CALLED_NUMBER, lambda n: n.spec.phone_number)
    store.add_index(Tag, TAG_NAME, lambda t: (t.namespace, t.spec.project, t.spec.name.casefold()))


def holders(store: CachedStore, kind: type[R], index: str, value: tuple, besides: str | None = None) -> list[R]:
    """Objects holding `value` in a uniqueness index, other than the one named `besides`."""
    return [o for o in store.by_index(kind, index, value) if o.name != besides]
