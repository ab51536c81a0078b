"""Integer ids belong to one object in all accounts: an id label a user wrote is never trusted, ids that
collided before claims existed are separated, and every catalog query that takes an id takes the account."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select

from callscope.catalog.ids import Owner, claim_of
from callscope.catalog.tables import IdClaim, Recording, RecordingTag
from callscope.operator.handlers import reconcile
from callscope.resources import Project, Tag
from callscope.resources.meta import ID_LABEL
from callscope.services.apply import apply_documents
from callscope.services.recordings import remove_tag_everywhere
from tests.api.conftest import catalog_on_both


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


async def _apply(runtime, document: dict):
    """`callscope apply` of one document, then the reconcile the operator runs on it."""
    [(obj, _)] = await apply_documents(runtime.ctx, [document], "default")
    await runtime.store.sync()
    return await reconcile(runtime.ctx, runtime.store.cached_get(type(obj), obj.namespace, obj.name))


def _project_doc(account: str, name: str, labels: dict) -> dict:
    return {"apiVersion": "callscope.io/v1alpha1", "kind": "Project",
            "metadata": {"name": name, "namespace": account, "labels": labels},
            "spec": {"name": name.title(), "language": "en"}}


def _tag_doc(account: str, name: str, project: str, labels: dict) -> dict:
    return {"apiVersion": "callscope.io/v1alpha1", "kind": "Tag",
            "metadata": {"name": name, "namespace": account, "labels": labels},
            "spec": {"name": name.title(), "project": project}}


async def test_a_hostile_id_label_is_replaced_and_reported(runtime, create_project):
    mine = await create_project("Support")
    hostile = await _apply(runtime, _project_doc("other", "copycat", {ID_LABEL: str(mine["id"])}))
    assert hostile.status.id != mine["id"]
    assert hostile.metadata.labels[ID_LABEL] == str(hostile.status.id)
    condition = next(c for c in hostile.status.conditions if c.type == "IdAssigned")
    assert condition.reason == "LabelReplaced" and str(mine["id"]) in condition.message
    assert await runtime.catalog.read(claim_of, "Project", hostile.status.id) == Owner("other", "copycat")
    # the REST-made project keeps its id
    assert runtime.store.get_by_id(Project, "default", mine["id"]).spec.name == "Support"


async def test_a_label_copied_within_the_account_is_replaced_too(runtime, create_project):
    mine = await create_project("Support")
    twin = await _apply(runtime, _project_doc("default", "twin", {ID_LABEL: str(mine["id"])}))
    assert twin.status.id != mine["id"]


@pytest.mark.parametrize("label", ["", "abc", "１２", "99999999999999999999999", "-1"])
async def test_malformed_id_labels_get_a_fresh_id(runtime, label):
    obj = await _apply(runtime, _project_doc("default", "odd", {ID_LABEL: label}))
    assert obj.status.id is not None and obj.metadata.labels[ID_LABEL] == str(obj.status.id)


async def test_a_rest_created_object_keeps_the_id_in_its_label(runtime, create_project):
    """The reconciler may see a REST-made object before its status: it adopts the allocator's id."""
    project = await create_project("Support")
    stored = runtime.store.get_by_id(Project, "default", project["id"])
    draft = stored.model_copy(deep=True)
    draft.status.id = None
    await runtime.store.update_status(draft)
    await runtime.store.sync()
    again = await reconcile(runtime.ctx, runtime.store.cached_get(Project, "default", stored.name))
    assert again.status.id == project["id"]
    assert not [c for c in again.status.conditions if c.type == "IdAssigned"]


async def test_a_relabelled_object_gets_its_own_id_back_in_the_label(runtime, create_project):
    mine = await create_project("Support")
    await _apply(runtime, _project_doc("other", "victim", {}))
    victim = runtime.store.cached_get(Project, "other", "victim")
    changed = await _apply(runtime, _project_doc("other", "victim", {ID_LABEL: str(mine["id"])}))
    assert changed.status.id == victim.status.id
    assert changed.metadata.labels[ID_LABEL] == str(victim.status.id)


async def test_ids_that_collided_before_claims_are_separated_older_keeps(runtime, create_project):
    """An older version adopted copied labels: two accounts' projects with one id. The older keeps it."""
    mine = await create_project("Support")
    younger = await _apply(runtime, _project_doc("other", "copycat", {}))
    draft = younger.model_copy(deep=True)
    draft.metadata.labels[ID_LABEL] = str(mine["id"])
    draft = (await runtime.store.update(draft)).model_copy(deep=True)
    draft.status.id = mine["id"]
    await runtime.store.update_status(draft)
    await runtime.store.sync()
    collided = runtime.store.cached_get(Project, "other", "copycat")
    assert collided.status.id == mine["id"]
    # the younger one reconciles first, before any claim names either
    with runtime.catalog.session() as s:
        s.execute(delete(IdClaim))
    moved = await reconcile(runtime.ctx, collided)
    await runtime.store.sync()
    kept = runtime.store.get_by_id(Project, "default", mine["id"])
    older = await reconcile(runtime.ctx, kept)
    await runtime.store.sync()
    moved = runtime.store.cached_get(Project, "other", "copycat")
    assert older.status.id == mine["id"]
    assert moved.status.id != mine["id"]
    assert await runtime.catalog.read(claim_of, "Project", mine["id"]) == Owner("default", older.name)


async def test_upload_idempotency_never_crosses_accounts(runtime, client, make_key, upload, wav, create_project):
    """Even with two accounts' projects on one id (as a stale label once allowed), an external_id of one
    account never returns the other's recording."""
    mine = await create_project("Support")
    first = await upload(wav, project_id=mine["id"], external_id="call-1")
    assert first.status_code == 201
    other_key = await make_key(account="other")
    hostile = await _apply(runtime, _project_doc("other", "copycat", {}))
    draft = hostile.model_copy(deep=True)
    draft.status.id = mine["id"]  # the collision, made directly in the store
    await runtime.store.update_status(draft)
    await runtime.store.sync()
    theirs = await upload(wav, headers=other_key, project_id=mine["id"], external_id="call-1")
    assert theirs.status_code == 201, theirs.text
    assert theirs.json()["data"]["public_id"] != first.json()["data"]["public_id"]
    with runtime.catalog.session() as s:
        accounts = sorted(s.scalars(select(Recording.account).where(Recording.external_id == "call-1")))
    assert accounts == ["default", "other"]


async def test_untagging_one_account_leaves_the_other_alone(runtime, client, admin, upload, wav, create_project):
    project = await create_project("Support")
    tag = (await client.post("/tags", json={"name": "vip", "project_id": project["id"]}, headers=admin)).json()["data"]
    recording = (await upload(wav, project_id=project["id"], **{"tag_ids[]": [str(tag["id"])]})).json()["data"]
    await remove_tag_everywhere(runtime.ctx, "other", tag["id"])
    got = (await client.get(f"/recordings/{recording['public_id']}", headers=admin)).json()["data"]
    assert tag["id"] in got["tag_ids"]
    with runtime.catalog.session() as s:
        assert s.scalar(select(RecordingTag.tag_id)) == tag["id"]


async def test_hostile_tag_label_cannot_untag_another_account(runtime, client, admin, make_key, upload, wav,
                                                              create_project):
    project = await create_project("Support")
    tag = (await client.post("/tags", json={"name": "vip", "project_id": project["id"]}, headers=admin)).json()["data"]
    recording = (await upload(wav, project_id=project["id"], **{"tag_ids[]": [str(tag["id"])]})).json()["data"]
    await _apply(runtime, _project_doc("other", "theirs", {}))
    hostile = await _apply(runtime, _tag_doc("other", "copycat", "theirs", {ID_LABEL: str(tag["id"])}))
    assert hostile.status.id != tag["id"]
    other_key = await make_key(account="other")
    resp = await client.delete(f"/tags/{tag['id']}", headers=other_key)
    assert resp.status_code == 404
    assert (await client.delete(f"/tags/{hostile.status.id}", headers=other_key)).status_code == 204
    got = (await client.get(f"/recordings/{recording['public_id']}", headers=admin)).json()["data"]
    assert got["tag_ids"] == [tag["id"]]
    assert runtime.store.get_by_id(Tag, "default", tag["id"]) is not None


async def test_conversation_id_is_scoped_like_the_key(client, make_key, upload, wav, create_project):
    """A project-scoped key cannot join another project's conversation, and cannot tell whether the id exists."""
    own, foreign = await create_project("Own"), await create_project("Foreign")
    theirs = (await upload(wav, project_id=foreign["id"])).json()["data"]
    scoped = await make_key(project_id=own["id"])
    joined = await upload(wav, headers=scoped, conversation_id=theirs["public_id"])
    unknown = await upload(wav, headers=scoped, conversation_id="0190f3c2-7d8e-7abc-8def-0123456789ab")
    assert joined.status_code == unknown.status_code == 422
    assert joined.json() == unknown.json()
    shares = await client.get(f"/recordings/{theirs['public_id']}/shares", headers=scoped)
    assert shares.status_code == 404
    # an account-wide key may link two recordings of the account into one conversation
    linked = await upload(wav, project_id=own["id"], conversation_id=theirs["public_id"])
    assert linked.status_code == 201


async def test_a_scoped_key_cannot_attach_an_operator_of_another_project(client, make_key, upload, wav, create_project,
                                                                        create_operator):
    own, foreign = await create_project("Own"), await create_project("Foreign")
    linked = await create_operator("Ann Own", project_id=own["id"])
    elsewhere = await create_operator("Bob Foreign", project_id=foreign["id"])
    scoped = await make_key(project_id=own["id"])
    assert (await upload(wav, headers=scoped, operator_id=linked["id"])).status_code == 201
    hidden = await upload(wav, headers=scoped, operator_id=elsewhere["id"])
    unknown = await upload(wav, headers=scoped, operator_id=987654)
    assert hidden.status_code == unknown.status_code == 422
    assert hidden.json() == unknown.json()
    recording = (await upload(wav, headers=scoped)).json()["data"]
    patched = await client.patch(f"/recordings/{recording['public_id']}", json={"operator_id": elsewhere["id"]},
                                 headers=scoped)
    assert patched.status_code == 422
