"""The two tenants of the isolation suite (tests/api/test_isolation.py): what exists, and which key sees it.

`build_world` creates, through the public API (and `callscope apply` plus the reconcile the operator runs,
for the YAML objects), in each of the accounts `default` and `other`:

* the Account (a distinctive display name: it is the `shared_by.name` of API shares) and one member;
* projects p1 and p2, each with an operator, a virtual number (bought through the sandbox provider while
  purchasing is briefly unpaused) with the operator attached, two tags, two recordings (real audio; tagged,
  one with the operator), two shares (one with the member, one with everyone) and a note on each recording;
* an operator linked to both projects and attached to both numbers, an unlinked operator and a number
  attached to no project (account-wide keys only see those two); each number also has the unlinked operator
  and the other project's operator attached, which its project's key must not see inside it;
* YAML objects with HOSTILE `callscope.io/id` labels: a Project, Tag, Operator and VirtualNumber labelled
  with the id of the other account's p1 object, and copies in p2 labelled with the id of the same account's
  p1 object;
* the probe keys: account-wide and scoped to p1 and to p2, each with read, write, delete and all three.

Every object carries the strings that identify it (public_id, names, external_id, email, phone number,
description), so a response can be scanned for data of objects the key must not see.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

import httpx
from sqlalchemy import select

from callscope.catalog.tables import Recording
from callscope.identifiers import uuid7
from callscope.operator.handlers import reconcile
from callscope.resources import Operator, Project, Tag, VirtualNumber
from callscope.resources.meta import ID_LABEL
from callscope.services import accounts
from callscope.services.apply import apply_documents
from callscope.services.phones import normalize_e164

ACCOUNTS = ("default", "other")
PROJECTS = ("p1", "p2")
PERMISSION_SETS = ("read", "write", "delete", "read,write,delete")
ALL = frozenset({"read", "write", "delete"})
API_VERSION = "callscope.io/v1alpha1"


def token() -> str:
    return uuid.uuid4().hex[:10]


# a QA form of each project: a question any call answers (no goal, category or field to name)
SCORECARD_SECTIONS = [{"name": "Conduct", "weight": 100, "questions": [
    {"id": "pauses", "text": "Were silences announced?", "weight": 100, "answer": {"source": "pauses"}}]}]


@dataclass(eq=False)
class Obj:
    """One object of a tenant. `scope`: the projects whose scoped keys see it (every account-wide key of
    the account sees it too); an empty set: account-wide keys only; None: every key of the account."""

    kind: str  # account, member, project, operator, number, tag, scorecard, recording, share, note
    account: str
    scope: frozenset[str] | None
    label: str
    id: int | None = None
    public_id: str | None = None
    legacy_id: int | None = None
    tokens: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    fixture: bool = True  # made by build_world (verified unchanged at the end)


@dataclass(eq=False)
class Key:
    account: str
    project: str | None  # p1 / p2 for a project-scoped key
    permissions: frozenset[str]
    headers: dict[str, str]

    @property
    def kind(self) -> str:
        return "project-scoped" if self.project else "account-wide"

    @property
    def label(self) -> str:
        return f"{self.account}/{self.project or 'account-wide'}[{','.join(sorted(self.permissions))}]"

    def sees(self, obj: Obj) -> bool:
        if obj.account != self.account:
            return False
        return obj.scope is None or self.project is None or self.project in obj.scope


@dataclass
class World:
    tok: str
    unknown_uuid: str
    objects: list[Obj] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    admins: dict[str, dict[str, str]] = field(default_factory=dict)  # setup and verification only
    audio_tokens: dict[str, str] = field(default_factory=dict)  # a signed /files token of each account
    hostile_findings: list[str] = field(default_factory=list)
    version: int = 0  # bumped on every register: cached token scans are rebuilt

    def register(self, obj: Obj) -> Obj:
        self.objects.append(obj)
        self.version += 1
        return obj

    def of(self, kind: str, account: str | None = None) -> list[Obj]:
        return [o for o in self.objects if o.kind == kind and (account is None or o.account == account)]

    def foreign(self, key: Key, kind: str) -> list[Obj]:
        return [o for o in self.of(kind) if not key.sees(o)]

    def visible(self, key: Key, kind: str) -> list[Obj]:
        return [o for o in self.of(kind) if key.sees(o) and o.fixture]

    def project(self, account: str, label: str) -> Obj:
        return next(o for o in self.of("project", account) if o.label == f"{account}/{label}")

    def own_project(self, key: Key) -> Obj:
        return self.project(key.account, key.project or "p1")

    def own(self, key: Key, kind: str) -> Obj:
        """The key's own object of a kind in its project (p1 for account-wide keys), made by build_world."""
        home = key.project or "p1"
        return next(o for o in self.of(kind, key.account) if o.fixture and o.scope == frozenset({home})
                    and not o.extra.get("hostile"))

    def own_projects(self, key: Key) -> list[Obj]:
        """The fixture projects a key may upload into (account-wide: all of them, the hostile ones too)."""
        return [o for o in self.of("project", key.account) if o.fixture and key.sees(o)]


# ----- building -------------------------------------------------------------------------------------------

class Builder:
    def __init__(self, runtime, http: httpx.AsyncClient, make_key, audio: bytes):
        self.rt, self.http, self.make_key, self.audio = runtime, http, make_key, audio
        self.world = World(tok=token(), unknown_uuid=str(uuid7()))
        self.phones: set[str] = set()
        self.candidates: list[str] = []

    async def call(self, method: str, path: str, headers: dict, expect: tuple[int, ...] = (200, 201), **kw) -> dict:
        resp = await self.http.request(method, path, headers=headers, **kw)
        assert resp.status_code in expect, f"setup {method} {path}: {resp.status_code} {resp.text}"
        return resp.json()["data"] if resp.content else {}

    def phone(self, prefix: str) -> str:
        """A fresh valid UK number (never one of the sandbox provider's US candidates)."""
        while True:
            number = prefix + "".join(random.choices("0123456789", k=12 - len(prefix) + 1))
            if number not in self.phones and normalize_e164(number, None) == number:
                self.phones.add(number)
                return number

    async def buy(self, headers: dict, name: str) -> dict:
        if not self.candidates:
            found = await self.call("GET", "/virtual_numbers/available", self.world.admins["default"])
            self.candidates = [c["phone_number"] for c in found]
        return await self.call("POST", "/virtual_numbers/purchase", headers,
                               json={"phone_number": self.candidates.pop(0), "name": name})

    async def upload(self, headers: dict, **fields) -> dict:
        data = {k: (v if isinstance(v, list) else str(v)) for k, v in fields.items()}
        return await self.call("POST", "/recordings", headers, data=data,
                               files={"file": ("call.wav", self.audio, "application/octet-stream")})

    def legacy_id(self, public_id: str) -> int:
        with self.rt.catalog.session() as session:
            return session.scalar(select(Recording.id).where(Recording.public_id == public_id))

    async def apply(self, document: dict):
        """`callscope apply` of one document, then the reconcile the operator runs on it."""
        [(obj, _)] = await apply_documents(self.rt.ctx, [document], document["metadata"]["namespace"])
        await self.rt.store.sync()
        reconciled = await reconcile(self.rt.ctx, self.rt.store.cached_get(type(obj), obj.namespace, obj.name))
        await self.rt.store.sync()
        return reconciled

    # -- one tenant ------------------------------------------------------------------------------------

    async def tenant(self, account: str) -> None:
        w, t = self.world, token()
        admin = w.admins[account]
        display = f"{account.title()} Tenant {t}"
        await apply_documents(self.rt.ctx, [{"apiVersion": API_VERSION, "kind": "Account",
                                             "metadata": {"name": account, "namespace": account},
                                             "spec": {"displayName": display}}], account)
        await self.rt.store.sync()
        w.register(Obj("account", account, None, account, tokens=(display,)))
        email = f"member-{t}@{account}-corp.example"
        await accounts.add_member(self.rt.ctx, account, email, f"Member {t}")
        w.register(Obj("member", account, None, f"{account}/member", tokens=(email, f"Member {t}"),
                       extra={"email": email}))
        unlinked = await self.operator(account, admin, frozenset(), f"{account}/unlinked-operator")
        number = await self.buy(admin, f"number-{account}-unattached-{token()}")
        w.register(Obj("number", account, frozenset(), f"{account}/unattached-number", id=number["id"],
                       tokens=(number["phone_number"], number["name"])))
        projects = {}
        for label in PROJECTS:
            projects[label] = await self.project(account, admin, label, email)
        shared = await self.operator(account, admin, frozenset(PROJECTS), f"{account}/shared-operator",
                                     project_id=projects["p1"].id)
        await self.call("POST", f"/operators/{shared.id}/add_project", admin, json={"project_id": projects["p2"].id})
        for label in PROJECTS:
            number = next(o for o in w.of("number", account) if o.scope == frozenset({label}))
            # attached too, the operators its project's key cannot see: a number must not show them to that key
            strangers = [o for o in w.of("operator", account) if o.scope == frozenset(PROJECTS) - {label}]
            for operator in (shared, unlinked, *strangers):
                await self.call("POST", f"/virtual_numbers/{number.id}/add_operator", admin,
                                json={"operator_id": operator.id})
        rec = w.own(Key(account, None, ALL, admin), "recording")
        url = (await self.call("GET", f"/recordings/{rec.public_id}/audio_url", admin))["url"]
        if "/files/" in url:
            w.audio_tokens[account] = url.rsplit("/files/", 1)[1]

    async def operator(self, account: str, headers: dict, scope: frozenset[str], label: str, **fields) -> Obj:
        t = token()
        body = {"name": f"operator-{t}", "external_id": f"op-ext-{t}", "phone_number": self.phone("+447911"),
                "email": f"operator-{t}@{account}-corp.example", **fields}
        made = await self.call("POST", "/operators", headers, json=body)
        return self.world.register(Obj(
            "operator", account, scope, label, id=made["id"],
            tokens=(body["name"], body["external_id"], made["phone_number"], body["email"]),
            extra={"external_id": body["external_id"], "phone_number": made["phone_number"]}))

    async def project(self, account: str, admin: dict, label: str, member: str) -> Obj:
        w, t, scope = self.world, token(), frozenset({label})
        name, description = f"project-{account}-{label}-{t}", f"description-{t}"
        made = await self.call("POST", "/projects", admin, json={"name": name, "language": "en",
                                                               "description": description})
        meta = self.rt.store.get_by_id(Project, account, made["id"]).name
        project = w.register(Obj("project", account, scope, f"{account}/{label}", id=made["id"],
                                 tokens=(name, description), extra={"meta": meta}))
        scoped = await self.make_key(project_id=project.id, account=account)
        operator = await self.operator(account, admin, scope, f"{account}/{label}/operator", project_id=project.id)
        number = await self.buy(scoped, f"number-{account}-{label}-{token()}")
        await self.call("POST", f"/virtual_numbers/{number['id']}/add_operator", admin,
                        json={"operator_id": operator.id})
        w.register(Obj("number", account, scope, f"{account}/{label}/number", id=number["id"],
                       tokens=(number["phone_number"], number["name"])))
        tags = []
        for i in (1, 2):
            name = f"tag-{account}-{label}-{i}-{token()}"
            made = await self.call("POST", "/tags", admin, json={"name": name, "project_id": project.id})
            tags.append(w.register(Obj("tag", account, scope, f"{account}/{label}/tag{i}", id=made["id"],
                                       tokens=(name,), extra={"name": name, "project_id": project.id})))
        name = f"scorecard-{account}-{label}-{token()}"
        made = await self.call("POST", "/scorecards", admin, json={
            "name": name, "project_ids": [project.id], "sections": SCORECARD_SECTIONS})
        w.register(Obj("scorecard", account, scope, f"{account}/{label}/scorecard", id=made["id"], tokens=(name,)))
        for i, fields in ((1, {"operator_id": operator.id, "tag_ids[]": [str(tags[0].id)]}),
                          (2, {"tag_ids[]": [str(tags[0].id), str(tags[1].id)]})):
            name, external_id = f"recording-{account}-{label}-{i}-{token()}", f"rec-ext-{token()}"
            made = await self.upload(admin, project_id=project.id, name=name, external_id=external_id, **fields)
            rec = w.register(Obj("recording", account, scope, f"{account}/{label}/recording{i}",
                                 public_id=made["public_id"], legacy_id=self.legacy_id(made["public_id"]),
                                 tokens=(made["public_id"], name, external_id),
                                 extra={"external_id": external_id, "name": name}))
            body = {"email": member, "notify": False} if i == 1 else {"everyone": True}
            share = await self.call("POST", f"/recordings/{rec.public_id}/shares", admin, json=body)
            w.register(Obj("share", account, scope, f"{account}/{label}/recording{i}/share", id=share["id"],
                           extra={"recording": rec}))
            text = f"note-{account}-{label}-{i}-{token()}"
            note = await self.call("POST", f"/recordings/{rec.public_id}/notes", admin, json={"text": text})
            w.register(Obj("note", account, scope, f"{account}/{label}/recording{i}/note", id=note["id"],
                           tokens=(text,), extra={"recording": rec}))
        return project

    # -- hostile YAML ----------------------------------------------------------------------------------

    async def hostile(self, account: str, victim: str) -> None:
        """YAML objects of `account` labelled with the ids of `victim`'s p1 objects (and, in p2, with the ids
        of the same account's p1 objects), reconciled as the operator would."""
        w = self.world
        p1, p2 = w.project(account, "p1"), w.project(account, "p2")
        for suffix, target, home in (("", victim, p1), ("-sibling", account, p2)):
            theirs = {kind: w.own(Key(target, None, ALL, {}), kind) for kind in ("operator", "number", "tag")}
            theirs["project"] = w.project(target, "p1")
            t = token()
            docs = [
                ("project", Project, {"kind": "Project", "spec": {"name": f"hostile-project-{t}", "language": "en",
                                                                  "description": f"hostile-description-{t}"}},
                 (f"hostile-project-{t}", f"hostile-description-{t}")),
                ("tag", Tag, {"kind": "Tag", "spec": {"name": f"hostile-tag-{t}", "project": home.extra["meta"]}},
                 (f"hostile-tag-{t}",)),
                ("operator", Operator, {"kind": "Operator", "spec": {
                    "name": f"hostile-operator-{t}", "externalId": f"hostile-ext-{t}",
                    "phoneNumber": self.phone("+447911"), "email": f"hostile-{t}@{account}-corp.example",
                    "projects": [home.extra["meta"]]}}, ()),
                ("number", VirtualNumber, {"kind": "VirtualNumber", "spec": {
                    "phoneNumber": self.phone("+442079460"), "name": f"hostile-number-{t}", "countryCode": "GB",
                    "numberType": "local", "project": home.extra["meta"]}}, ()),
            ]
            for kind, _cls, doc, tokens in docs:
                victim_obj = theirs[kind]
                spec = doc["spec"]
                if kind == "operator":
                    tokens = (spec["name"], spec["externalId"], spec["phoneNumber"], spec["email"])
                elif kind == "number":
                    tokens = (spec["phoneNumber"], spec["name"])
                name = f"hostile-{kind}{suffix}"
                document = {"apiVersion": API_VERSION, **doc,
                            "metadata": {"name": name, "namespace": account, "labels": {ID_LABEL: str(victim_obj.id)}}}
                made = await self.apply(document)
                if made.status.id == victim_obj.id or made.metadata.labels.get(ID_LABEL) == str(victim_obj.id):
                    w.hostile_findings.append(
                        f"{kind} {account}/{name} applied with {ID_LABEL}={victim_obj.id} (the id of "
                        f"{victim_obj.label}) got status.id {made.status.id}, label "
                        f"{made.metadata.labels.get(ID_LABEL)}: a duplicate id")
                scope = frozenset({f"hostile{suffix}"}) if kind == "project" else home.scope
                extra = {"hostile": True, "name": spec.get("name")}
                if kind == "project":
                    extra["meta"] = name
                if kind == "tag":
                    extra["project_id"] = home.id
                if kind == "operator":
                    extra.update(external_id=spec["externalId"], phone_number=spec["phoneNumber"])
                w.register(Obj(kind, account, scope, f"{account}/{name}", id=made.status.id, tokens=tokens,
                               extra=extra))

    async def keys(self) -> None:
        for account in ACCOUNTS:
            for label in (None, *PROJECTS):
                project_id = self.world.project(account, label).id if label else None
                for permissions in PERMISSION_SETS:
                    headers = await self.make_key(permissions, project_id=project_id, account=account)
                    self.world.keys.append(Key(account, label, frozenset(permissions.split(",")), headers))


async def build_world(runtime, http: httpx.AsyncClient, make_key, audio: bytes) -> World:
    builder = Builder(runtime, http, make_key, audio)
    settings = runtime.ctx.settings
    paused = settings.virtual_number_purchase_paused
    settings.virtual_number_purchase_paused = False  # the spec pauses purchases; setup buys a few numbers
    try:
        for account in ACCOUNTS:
            builder.world.admins[account] = await make_key(account=account)
        for account in ACCOUNTS:
            await builder.tenant(account)
    finally:
        settings.virtual_number_purchase_paused = paused
    await builder.hostile("other", "default")
    await builder.hostile("default", "other")
    await builder.keys()
    return builder.world
