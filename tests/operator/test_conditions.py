"""The conditions the reconciler writes on objects applied as YAML: `Conflict` for a unique value another object
holds (a number's E.164 in any account), `ReferencesResolved` for names that do not resolve in the object's own
account, and `Ready` False while either says something is wrong; what such an object does meanwhile (routes no
call, authenticates nobody); and the embedded driver re-checking the objects that depend on a changed one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from callscope.errors import Unauthorized, ValidationFailed
from callscope.operator.embedded import EmbeddedOperator
from callscope.operator.handlers import API_KEY_SECRET_KEY, api_key_secret, reconcile
from callscope.resources import ObjectMeta, Operator, Project, Resource, VirtualNumber, VirtualNumberSpec
from callscope.services.apply import apply_documents
from callscope.services.indexes import seniority
from callscope.services.keys import authenticate
from callscope.services.numbers import attached_operators
from callscope.services.phone_calls import called_number
from callscope.store.factory import build_secret_store

PHONE = "+14155550110"


def doc(kind: str, account: str, name: str, /, **spec) -> dict:
    return {"apiVersion": "callscope.io/v1alpha1", "kind": kind, "metadata": {"name": name, "namespace": account},
            "spec": spec}


def number(account: str, name: str = "desk", /, phone: str = PHONE, **spec) -> dict:
    return doc("VirtualNumber", account, name, phoneNumber=phone, countryCode="US", **spec)


def project(account: str, name: str) -> dict:
    return doc("Project", account, name, name=name.title(), language="en")


def operator(account: str, name: str, /, **spec) -> dict:
    return doc("Operator", account, name, name=name.title(), **spec)


def condition(obj: Resource, kind: str) -> tuple[str, str, str]:
    found = next(c for c in obj.status.conditions if c.type == kind)
    return found.status, found.reason, found.message


async def apply(runtime, document: dict) -> Resource:
    """`callscope apply` of one document, then the reconcile the operator runs on it."""
    [(obj, _)] = await apply_documents(runtime.ctx, [document], "default")
    await runtime.store.sync()
    return await recheck(runtime, obj)


async def recheck(runtime, obj: Resource) -> Resource:
    """The reconcile of the object as it is now (the next event or timer tick)."""
    await runtime.store.sync()
    current = runtime.store.cached_get(type(obj), obj.namespace, obj.name)
    return await reconcile(runtime.ctx, current, build_secret_store(runtime.ctx.settings))


async def applied_key(runtime, account: str, name: str) -> str:
    """The key the reconciler wrote for an ApiKey applied without key material."""
    return await build_secret_store(runtime.ctx.settings).read(account, api_key_secret(name), API_KEY_SECRET_KEY)


async def next_second() -> None:
    """Creation timestamps have whole seconds: the next object is created in a later one."""
    await asyncio.sleep(1.05 - datetime.now(UTC).microsecond / 1e6)


# ----- one E.164 in two accounts ---------------------------------------------------------------------------

async def test_a_phone_number_another_account_holds_is_a_conflict_on_the_later_number(runtime):
    earlier = await apply(runtime, number("zeta"))
    await next_second()
    # "alpha" sorts before "zeta": only the creation time can make it the later one
    later = await apply(runtime, number("alpha"))

    status, reason, message = condition(later, "Conflict")
    assert (status, reason) == ("True", "NotUnique")
    assert PHONE in message and "another account" in message and "zeta" not in message
    assert condition(later, "Ready")[:2] == ("False", "Conflict")
    earlier = await recheck(runtime, earlier)
    assert condition(earlier, "Conflict")[0] == "False" and condition(earlier, "Ready")[0] == "True"
    # calls reach the number that holds the E.164, not nobody
    assert called_number(runtime.ctx, PHONE).namespace == "zeta"

    # idempotent: reconciling either again writes nothing
    assert (await recheck(runtime, later)).metadata.resource_version == later.metadata.resource_version
    assert (await recheck(runtime, earlier)).metadata.resource_version == earlier.metadata.resource_version

    await runtime.store.delete(VirtualNumber, "zeta", "desk")
    freed = await recheck(runtime, later)
    assert condition(freed, "Conflict")[0] == "False" and condition(freed, "Ready") == ("True", "Reconciled", "")
    assert called_number(runtime.ctx, PHONE).namespace == "alpha"


async def test_claimants_of_the_same_second_are_ordered_by_account_then_name_whoever_reconciles_first(runtime):
    same = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    spec = VirtualNumberSpec(phone_number=PHONE, country_code="US")
    made = [VirtualNumber(metadata=ObjectMeta(name=n, namespace=a, creation_timestamp=same), spec=spec)
            for a, n in (("beta", "a"), ("alpha", "z"), ("alpha", "b"))]
    assert [(o.namespace, o.name) for o in sorted(made, key=seniority)] == [("alpha", "b"), ("alpha", "z"),
                                                                            ("beta", "a")]

    # in the store (which stamps the time itself), the order of the reconciles changes nothing
    await apply_documents(runtime.ctx, [number("beta"), number("alpha")], "default")
    objs = [runtime.store.cached_get(VirtualNumber, a, "desk") for a in ("beta", "alpha", "beta", "alpha")]
    ready = {}
    for obj in objs:
        reconciled = await recheck(runtime, obj)
        ready[reconciled.namespace] = condition(reconciled, "Ready")[0]
    assert sorted(ready.values()) == ["False", "True"]
    holder = min((runtime.store.cached_get(VirtualNumber, a, "desk") for a in ready), key=seniority)
    assert ready[holder.namespace] == "True" and called_number(runtime.ctx, PHONE).namespace == holder.namespace


async def test_a_duplicate_inside_one_account_keeps_its_condition(runtime):
    await apply(runtime, number("acme", "desk"))
    await next_second()
    twin = await apply(runtime, number("acme", "desk-copy"))
    status, _, message = condition(twin, "Conflict")
    assert status == "True" and PHONE in message and "another account" not in message


# ----- names that do not resolve in the object's own account -----------------------------------------------

async def test_a_number_naming_another_accounts_project_and_operators_is_not_ready_and_routes_to_nobody(runtime):
    await apply(runtime, project("acme", "support"))
    await apply(runtime, operator("acme", "alice", phoneNumber="+14155550101", projects=["support"]))
    stray = await apply(runtime, number("globex", project="support", operators=["alice"]))

    status, reason, message = condition(stray, "ReferencesResolved")
    assert (status, reason) == ("False", "NotFound")
    assert "Project 'support'" in message and "Operator 'alice'" in message and "globex" in message
    assert condition(stray, "Ready")[:2] == ("False", "UnresolvedReferences")
    assert attached_operators(runtime.ctx, stray) == []  # acme's alice is never dialled for globex's number

    # the same names made in globex: resolved on the next reconcile, and only globex's objects act
    await apply(runtime, project("globex", "support"))
    mine = await apply(runtime, operator("globex", "alice", phoneNumber="+14155550199", projects=["support"]))
    resolved = await recheck(runtime, stray)
    assert condition(resolved, "ReferencesResolved") == ("True", "Resolved", "")
    assert condition(resolved, "Ready")[0] == "True"
    assert [o.namespace for o in attached_operators(runtime.ctx, resolved)] == [mine.namespace]


async def test_an_operator_and_a_tag_naming_missing_projects_are_not_ready(runtime):
    await apply(runtime, project("acme", "support"))
    op = await apply(runtime, operator("acme", "alice", projects=["support", "sales"]))
    status, _, message = condition(op, "ReferencesResolved")
    assert status == "False" and "Project 'sales'" in message and "'support'" not in message
    tag = await apply(runtime, doc("Tag", "acme", "vip", name="VIP", project="sales"))
    assert condition(tag, "ReferencesResolved")[0] == "False" and condition(tag, "Ready")[0] == "False"
    for kind, document in (("Project", project("acme", "other")), ("Account", doc("Account", "acme", "acme",
                                                                                  displayName="Acme"))):
        assert condition(await apply(runtime, document), "ReferencesResolved") == ("True", "Resolved", ""), kind


@pytest.mark.parametrize("elsewhere", [False, True], ids=["missing", "another-accounts"])
async def test_a_key_bound_to_a_project_that_does_not_resolve_authenticates_nobody(runtime, elsewhere):
    if elsewhere:
        await apply(runtime, project("acme", "support"))
    key = await apply(runtime, doc("ApiKey", "globex", "bot", permissions=["read"], project="support"))
    secret = await applied_key(runtime, "globex", "bot")
    assert condition(key, "ReferencesResolved")[:2] == ("False", "NotFound")
    assert condition(key, "Ready")[0] == "False"
    with pytest.raises(Unauthorized):  # never the whole account
        await authenticate(runtime.ctx, f"Bearer {secret}")

    made = await apply(runtime, project("globex", "support"))
    key = await recheck(runtime, key)
    assert condition(key, "ReferencesResolved")[0] == "True" and condition(key, "Ready")[0] == "True"
    principal = await authenticate(runtime.ctx, f"Bearer {secret}")
    assert (principal.account, principal.project, principal.project_id) == ("globex", "support", made.status.id)


async def test_a_project_naming_a_missing_signing_secret_is_not_ready_until_it_exists(runtime):
    webhook = {"url": "https://hooks.example.com/calls", "signingSecretRef": {"name": "signing"}}
    made = await apply(runtime, doc("Project", "acme", "support", name="Support", language="en", webhook=webhook))
    status, _, message = condition(made, "ReferencesResolved")
    assert status == "False" and "Secret 'signing' with key 'signing-secret'" in message
    assert condition(made, "Ready")[:2] == ("False", "UnresolvedReferences")
    await build_secret_store(runtime.ctx.settings).put("acme", "signing", "signing-secret", "whsec_abc")
    assert condition(await recheck(runtime, made), "Ready")[0] == "True"


async def test_a_signing_secret_no_secret_store_can_read_is_refused_when_applied(runtime):
    # The secret stores refuse such a name on every read, so the object is refused as the CRD refuses it, rather
    # than saved and left unresolved (delivery read it with the same check and failed on each attempt).
    webhook = {"url": "https://hooks.example.com/calls", "signingSecretRef": {"name": "Not_A_Secret_Name"}}
    with pytest.raises(ValidationFailed, match=r"signingSecretRef\.name: must be a Secret name"):
        await apply(runtime, doc("Project", "acme", "support", name="Support", language="en", webhook=webhook))


# ----- the embedded driver: objects that depend on a changed one ---------------------------------------------

async def eventually(check, what: str, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if found := check():
            return found
        await asyncio.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


async def test_the_embedded_operator_rechecks_what_depends_on_a_created_or_deleted_object(runtime):
    driver = EmbeddedOperator(runtime.ctx)
    await driver.start()
    try:
        def cond(cls, account, name, kind):
            obj = runtime.store.cached_get(cls, account, name)
            return obj is not None and next((c.status for c in obj.status.conditions if c.type == kind), None)

        await apply_documents(runtime.ctx, [number("zeta")], "default")
        await eventually(lambda: cond(VirtualNumber, "zeta", "desk", "Ready") == "True", "zeta's number Ready")
        await next_second()
        await apply_documents(runtime.ctx, [number("alpha", project="support")], "default")
        await eventually(lambda: cond(VirtualNumber, "alpha", "desk", "Conflict") == "True", "the Conflict")
        assert cond(VirtualNumber, "alpha", "desk", "ReferencesResolved") == "False"

        # neither change touches alpha's number: its dependents' re-check does
        await runtime.store.delete(VirtualNumber, "zeta", "desk")
        await eventually(lambda: cond(VirtualNumber, "alpha", "desk", "Conflict") == "False", "the freed value")
        await apply_documents(runtime.ctx, [project("alpha", "support")], "default")
        await eventually(lambda: cond(VirtualNumber, "alpha", "desk", "Ready") == "True", "the resolved project")

        # and the project goes again: the name dangles
        await runtime.store.delete(Project, "alpha", "support")
        await eventually(lambda: cond(VirtualNumber, "alpha", "desk", "ReferencesResolved") == "False",
                         "the dangling project")
    finally:
        await driver.stop()


async def test_the_embedded_operator_rechecks_everything_periodically(runtime):
    """A value the older object gave up by a change of its spec is no event of the later one's: the periodic
    re-check (what the controller's timers do) frees it."""
    runtime.ctx.settings.reconcile_interval_seconds = 0.2
    await apply(runtime, operator("acme", "alice", phoneNumber="+14155550101"))
    await next_second()
    later = await apply(runtime, operator("acme", "alice-copy", phoneNumber="+14155550101"))
    assert condition(later, "Conflict")[0] == "True"
    driver = EmbeddedOperator(runtime.ctx)
    await driver.start()
    try:
        await apply_documents(runtime.ctx, [operator("acme", "alice", phoneNumber="+14155550102")], "default")

        def freed():
            obj = runtime.store.cached_get(Operator, "acme", "alice-copy")
            return condition(obj, "Conflict")[0] == "False" and condition(obj, "Ready")[0] == "True"

        await eventually(freed, "the later operator to keep the phone number the older one gave up")
    finally:
        await driver.stop()
