"""Tenant isolation: every operation of the API's operation table (api/routing.py, read from the app, so a new
endpoint without a probe fails this test), driven with every kind of key against every object the key must
not reach.

The world (tests/api/isolation_world.py): accounts `default` and `other`, two projects each with operators,
virtual numbers, tags, recordings and shares, plus YAML objects applied with hostile `callscope.io/id`
labels (the ids of the other account's objects, and of the other project's objects) and reconciled as the
operator does. Keys: account-wide and scoped to each project, with read, write, delete and all three. A
FOREIGN object of a key is one of the other account or, for a project-scoped key, of another project.

The rules asserted (a violation is reported as a leak; all are collected, then the test fails listing them):

1. Refused. A request naming a foreign object - in its path, query, JSON body or upload form - answers 404
   or 403 (403: the key lacks the operation's permission, or one of the spec's 403s for project-scoped keys:
   a project_id other than its own, creating or deleting projects). 422 is accepted only where the foreign
   reference is a field validated against the key's scope, for which the spec or the service answers 422
   for a reference it cannot resolve: upload and recording-update `operator_id` and tag ids, upload
   `conversation_id`, share-create `email` (spec: `Not a member of this account`).
2. Indistinguishable. That answer (status and body) equals the answer to the same request naming an id,
   public_id, email, external_id or phone number that exists nowhere: a foreign object's existence is not
   revealed.
3. Filters. Lists and searches given a foreign reference as a filter (recordings by project_id, operator_id,
   tag_ids[], external_id, q) or a foreign phone number (purchase) may answer 2xx, but rule 2 holds for them.
4. No foreign data. No answer (body or headers) contains a string of a foreign object: public_ids, names,
   descriptions, external_ids, emails, phone numbers, account display names. The key's own objects and
   lists are read too (2xx with the permission, 403 without) and scanned the same way.
5. Collisions. Reusing, in the key's own project, the external_id of a foreign recording (upload), the
   external_id and phone number of a foreign operator (create), or the name of a foreign tag (create) gives
   the caller its OWN object (201, or 200 with one of its own), never the foreign one.
6. Unchanged. After all probes every object made for the world is as it was: projects, recordings (name,
   project, operator, tags), shares, operators (fields, project links, numbers), numbers (fields, operators),
   tags.

Requests go in phases: reads, writes (POST, PATCH), the collision probes, then deletes, so a destructive leak
cannot mask the probes before it. Run with -s for the per-combination line "requests tried N, leaks M" (also
printed in the terminal summary).
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import structlog

from callscope.api import app as app_module
from callscope.api.routing import PREFIX, Operation, Router
from tests.api.conftest import catalog_on_both
from tests.api.isolation_world import ALL, SCORECARD_SECTIONS, Key, Obj, World, build_world, token
from tests.audio_samples import make_audio

ORIGIN = "http://callscope.test"
UNKNOWN_ID = 987654
UNKNOWN_LEGACY = 876543219
PHASES = ("read", "write", "collide", "delete")
READ_CONCURRENCY = 8
_PLACEHOLDER = re.compile(r"\{(\w+)(?::[^}]*)?\}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture(scope="module")
def isolation_report(request):
    """Lines printed in the terminal summary after the module ran (visible without -s)."""
    lines: list[str] = []
    yield lines
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and lines:
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


# ----- probes ---------------------------------------------------------------------------------------------

@dataclass
class Probe:
    expect: str  # refuse (rules 1, 2), list (rule 3), own (the key's own objects), mine (rule 5)
    label: str
    values: dict = field(default_factory=dict)  # the path's placeholders
    params: Any = None
    json: Any = None
    form: dict | None = None  # an upload's form fields (the audio file is added)
    data: dict | None = None  # a url-encoded form (the carrier's webhooks)
    allow_422: bool = False
    paused: bool = False  # purchase: the spec's 503 virtual_number_purchase_paused is an answer, not a failure
    echo: tuple[str, ...] = ()  # foreign strings the request itself sends (not a leak when they come back)
    phase: str | None = None  # default: by method
    check: Callable[[dict], str | None] | None = None  # mine: the problem with the answer's data, if any
    after: Callable[[httpx.Response], None] | None = None
    follow: Callable[[Runner, Key, httpx.Response], Awaitable[list[str]]] | None = None  # more problems, if any
    foreign: str | None = None
    unknown: str | None = None
    twin: Probe | None = None


def pair(make: Callable[[Any], Probe], foreign: Any, unknown: Any) -> Probe:
    """The probe naming a foreign object, with its twin naming one that exists nowhere (rule 2)."""
    probe, twin = make(foreign), make(unknown)
    probe.foreign, probe.unknown, probe.twin = str(foreign), str(unknown), twin
    return probe


Builder = Callable[[Key, World], Iterator[Probe]]
PROBES: dict[tuple[str, str], Builder] = {}


def probes(*operations: str) -> Callable[[Builder], Builder]:
    def register(build: Builder) -> Builder:
        for operation in operations:
            method, path = operation.split(" ", 1)
            PROBES[(method, path)] = build
        return build
    return register


def normalized(template: str) -> str:
    """`/api/v1/public/operators/{id:int}` -> `/operators/{id}`."""
    path = template[len(PREFIX):] if template.startswith(PREFIX + "/") else template
    return _PLACEHOLDER.sub(r"{\1}", path)


def fill(template: str, values: dict) -> str:
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def refs(obj: Obj, w: World) -> tuple[tuple[str, Any, Any], ...]:
    """How a path names the object, with the unknown counterpart: recordings by public_id and legacy id."""
    if obj.kind == "recording":
        return ("public_id", obj.public_id, w.unknown_uuid), ("legacy id", obj.legacy_id, UNKNOWN_LEGACY)
    return (("id", obj.id, UNKNOWN_ID),)


def foreign_in_path(key: Key, w: World, kind: str, **fields) -> Iterator[Probe]:
    for obj in w.foreign(key, kind):
        for how, ref, unknown in refs(obj, w):
            yield pair(lambda v: Probe("refuse", f"{obj.label} by {how}", values={"id": v}, **fields), ref, unknown)


def own_in_path(key: Key, w: World, kind: str) -> Iterator[Probe]:
    for obj in w.visible(key, kind):
        for how, ref, _ in refs(obj, w):
            yield Probe("own", f"own {obj.label} by {how}", values={"id": ref})


def ids_of(w: World, key: Key, kind: str, attr: str = "id") -> set:
    return {getattr(o, attr) for o in w.foreign(key, kind)}


# -- recordings --

@probes("GET /recordings/{id}", "GET /recordings/{id}/audio_url", "GET /recordings/{id}/transcription",
        "GET /recordings/{id}/results", "GET /recordings/{id}/summary", "GET /recordings/{id}/shares",
        "GET /recordings/{id}/notes")
def recording_reads(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording")
    yield from own_in_path(key, w, "recording")


@probes("GET /recordings/{id}/live")
def live_call_reads(key: Key, w: World) -> Iterator[Probe]:
    """A live call's events: a foreign recording's are as absent as those of one that exists nowhere (the live
    calls themselves: tests/live_calls/test_live_calls_served.py)."""
    yield from foreign_in_path(key, w, "recording")


@probes("PATCH /recordings/{id}")
def recording_patch(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording", json={"name": f"pwned-{w.tok}"})
    own = w.own(key, "recording").public_id
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"own recording moved to {p.label}", values={"id": own},
                                   json={"project_id": v}), p.id, UNKNOWN_ID)
    for o in w.foreign(key, "operator"):
        yield pair(lambda v: Probe("refuse", f"own recording given {o.label}", values={"id": own},
                                   json={"operator_id": v}, allow_422=True), o.id, UNKNOWN_ID)
    for t in w.foreign(key, "tag"):
        yield pair(lambda v: Probe("refuse", f"own recording tagged {t.label}", values={"id": own},
                                   json={"tag_ids": [v]}, allow_422=True), t.id, UNKNOWN_ID)


@probes("DELETE /recordings/{id}")
def recording_delete(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording")


def owned_recording(w: World, key: Key, project: Obj) -> Callable[[dict], str | None]:
    foreign = ids_of(w, key, "recording", "public_id")

    def check(data: dict) -> str | None:
        if data.get("public_id") in foreign:
            return f"returned the FOREIGN recording {data.get('public_id')}"
        if data.get("project_id") != project.id:
            return f"returned a recording of project {data.get('project_id')}, not of {project.label} ({project.id})"
        return None
    return check


def joined_shares(w: World, foreign: Obj):
    """After a leaked join: the new recording's shares are the foreign conversation's."""
    theirs = {s.id for s in w.of("share") if s.extra["recording"] is foreign}

    async def follow(runner: Runner, key: Key, resp: httpx.Response) -> list[str]:
        public_id = resp.json()["data"]["public_id"]
        runner.requests += 1
        listed = await runner.http.get(f"/recordings/{public_id}/shares", headers=key.headers)
        seen = {s["id"] for s in listed.json().get("data", [])} if listed.status_code == 200 else set()
        return [f"a joined recording lists the foreign conversation's shares: {public_id} lists {foreign.label}'s "
                f"shares {sorted(seen & theirs)}"] if seen & theirs else []
    return follow


@probes("POST /recordings")
def recording_upload(key: Key, w: World) -> Iterator[Probe]:
    base = {} if key.project else {"project_id": w.own_project(key).id}
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"upload into {p.label}", form={"project_id": v}), p.id, UNKNOWN_ID)
    for o in w.foreign(key, "operator"):
        yield pair(lambda v: Probe("refuse", f"upload with operator {o.label}", form={**base, "operator_id": v},
                                   allow_422=True), o.id, UNKNOWN_ID)
    for t in w.foreign(key, "tag"):
        yield pair(lambda v: Probe("refuse", f"upload tagged {t.label}", form={**base, "tag_ids[]": [v]},
                                   allow_422=True), t.id, UNKNOWN_ID)
    for r in w.foreign(key, "recording"):
        for how, ref, unknown in refs(r, w):
            yield pair(lambda v: Probe("refuse", f"upload joining the conversation of {r.label} by {how}",
                                       form={**base, "conversation_id": v}, allow_422=True,
                                       follow=joined_shares(w, r)), ref, unknown)
    for project in w.own_projects(key):
        for r in w.foreign(key, "recording"):
            external_id = r.extra["external_id"]
            form = {"external_id": external_id, **({} if key.project else {"project_id": project.id})}
            yield Probe("mine", f"upload into own {project.label} with the external_id of {r.label}", form=form,
                        echo=(external_id,), phase="collide", check=owned_recording(w, key, project))


@probes("GET /recordings")
def recording_list(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "recordings list")
    unknown = f"unknown-{w.tok}"
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("list", f"filtered by {p.label}", params={"project_id": v}), p.id, UNKNOWN_ID)
    for o in w.foreign(key, "operator"):
        yield pair(lambda v: Probe("list", f"filtered by {o.label}", params={"operator_id": v}), o.id, UNKNOWN_ID)
    for t in w.foreign(key, "tag"):
        yield pair(lambda v: Probe("list", f"filtered by {t.label}", params={"tag_ids[]": v}), t.id, UNKNOWN_ID)
    for r in w.foreign(key, "recording"):
        for param, value in (("external_id", r.extra["external_id"]), ("q", r.extra["name"])):
            yield pair(lambda v: Probe("list", f"filtered by the {param} of {r.label}", params={param: v},
                                       echo=(value,)), value, unknown)


@probes("GET /recordings/filters")
def recording_filters(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "filter values")


@probes("GET /search")
def search(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "search", params={"q": "call"})
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("list", f"search in {p.label}", params={"q": "call", "project_id": v}), p.id,
                   UNKNOWN_ID)
    for o in w.foreign(key, "operator"):
        yield pair(lambda v: Probe("list", f"search by {o.label}", params={"q": "call", "operator_id": v}), o.id,
                   UNKNOWN_ID)
    for t in w.foreign(key, "tag"):
        yield pair(lambda v: Probe("list", f"search with {t.label}", params={"q": "call", "tag": v}), t.id,
                   UNKNOWN_ID)
    for r in w.foreign(key, "recording"):
        name = r.extra["name"]
        yield pair(lambda v: Probe("list", f"search for the name of {r.label}", params={"q": v}, echo=(name,)), name,
                   f"unknown {w.tok}")


# -- shares --

@probes("POST /recordings/{id}/shares")
def share_create(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording", json={"everyone": True})
    own = w.own(key, "recording").public_id
    for m in w.foreign(key, "member"):
        email = m.extra["email"]
        yield pair(lambda v: Probe("refuse", f"own recording shared with {m.label}", values={"id": own},
                                   json={"email": v, "notify": False}, allow_422=True, echo=(email,)),
                   email, f"nobody-{w.tok}@nowhere.example")


@probes("DELETE /recordings/{id}/shares/{share_id}")
def share_delete(key: Key, w: World) -> Iterator[Probe]:
    own_rec = w.own(key, "recording")
    own_share = next(s for s in w.visible(key, "share") if s.extra["recording"] is own_rec)
    for s in w.foreign(key, "share"):
        for how, ref, unknown in refs(s.extra["recording"], w):
            yield pair(lambda v: Probe("refuse", f"{s.label} through its recording by {how}",
                                       values={"id": v, "share_id": s.id}), ref, unknown)
        yield pair(lambda v: Probe("refuse", f"{s.label} through the own recording",
                                   values={"id": own_rec.public_id, "share_id": v}), s.id, UNKNOWN_ID)
    for r in w.foreign(key, "recording"):
        yield pair(lambda v: Probe("refuse", f"own share through {r.label}",
                                   values={"id": v, "share_id": own_share.id}),
                   r.public_id, w.unknown_uuid)


# -- notes --

@probes("POST /recordings/{id}/notes")
def note_create(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording", json={"text": f"pwned-{w.tok}"})


@probes("DELETE /recordings/{id}/notes/{note_id}")
def note_delete(key: Key, w: World) -> Iterator[Probe]:
    own_rec = w.own(key, "recording")
    own_note = next(n for n in w.visible(key, "note") if n.extra["recording"] is own_rec)
    for n in w.foreign(key, "note"):
        for how, ref, unknown in refs(n.extra["recording"], w):
            yield pair(lambda v: Probe("refuse", f"{n.label} through its recording by {how}",
                                       values={"id": v, "note_id": n.id}), ref, unknown)
        yield pair(lambda v: Probe("refuse", f"{n.label} through the own recording",
                                   values={"id": own_rec.public_id, "note_id": v}), n.id, UNKNOWN_ID)
    for r in w.foreign(key, "recording"):
        yield pair(lambda v: Probe("refuse", f"own note through {r.label}",
                                   values={"id": v, "note_id": own_note.id}), r.public_id, w.unknown_uuid)


# -- projects --

@probes("GET /projects")
def project_list(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "projects list")


@probes("POST /projects")
def project_create(key: Key, w: World) -> Iterator[Probe]:
    name = f"probe-project-{token()}"

    def register(resp: httpx.Response) -> None:  # a new object of this tenant: foreign to the other
        if resp.status_code == 201:
            made = resp.json()["data"]
            w.register(Obj("project", key.account, frozenset({f"probe-{made['id']}"}),
                           f"{key.account}/probe-project-{made['id']}", id=made["id"], tokens=(name,), fixture=False))
    yield Probe("list", "create a project", json={"name": name, "language": "en"}, after=register)


@probes("GET /projects/{id}")
def project_get(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "project")
    yield from own_in_path(key, w, "project")


@probes("PATCH /projects/{id}")
def project_patch(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "project", json={"description": f"pwned-{w.tok}"})


@probes("DELETE /projects/{id}")
def project_delete(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "project")


# -- operators --

@probes("GET /operators")
def operator_list(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "operators list")


def new_operator(w: World, key: Key, external_id: str) -> Callable[[dict], str | None]:
    foreign = ids_of(w, key, "operator")

    def check(data: dict) -> str | None:
        if data.get("id") in foreign or data.get("external_id") != external_id:
            return f"returned operator {data.get('id')} ({data.get('external_id')}), not a new one of its own"
        return None
    return check


@probes("POST /operators")
def operator_create(key: Key, w: World) -> Iterator[Probe]:
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"operator linked to {p.label}",
                                   json={"name": f"probe-operator-{w.tok}", "project_id": v}), p.id, UNKNOWN_ID)
    if key.project is None and key.permissions == ALL:  # once per account: a second create would meet the first
        for o in w.foreign(key, "operator"):
            external_id, phone = o.extra["external_id"], o.extra["phone_number"]
            yield Probe("mine", f"operator with the external_id and phone number of {o.label}",
                        json={"name": f"probe-operator-{token()}", "external_id": external_id, "phone_number": phone},
                        echo=(external_id, phone), phase="collide", check=new_operator(w, key, external_id))


@probes("GET /operators/{id}")
def operator_get(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "operator")
    yield from own_in_path(key, w, "operator")


@probes("PATCH /operators/{id}")
def operator_patch(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "operator", json={"name": f"pwned-{w.tok}"})


def own_project_link(key: Key, w: World) -> dict:
    return {} if key.project else {"project_id": w.own_project(key).id}


@probes("POST /operators/{id}/add_project")
def operator_add_project(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "operator", json=own_project_link(key, w))
    own = w.own(key, "operator").id
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"own operator linked to {p.label}", values={"id": own},
                                   json={"project_id": v}), p.id, UNKNOWN_ID)


@probes("DELETE /operators/{id}/remove_project")
def operator_remove_project(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "operator", params=own_project_link(key, w))
    own = w.own(key, "operator").id
    for p in w.foreign(key, "project"):
        for where in ("params", "json"):
            yield pair(lambda v: Probe("refuse", f"own operator unlinked from {p.label} ({where})", values={"id": own},
                                       **{where: {"project_id": v}}), p.id, UNKNOWN_ID)


# -- virtual numbers --

@probes("GET /virtual_numbers", "GET /virtual_numbers/available", "GET /app/settings")
def plain_reads(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "list")


@probes("POST /virtual_numbers/purchase")
def number_purchase(key: Key, w: World) -> Iterator[Probe]:
    for n in w.foreign(key, "number"):
        phone = n.tokens[0]
        yield pair(lambda v: Probe("list", f"purchase of {n.label}'s phone number", json={"phone_number": v},
                                   echo=(phone,), paused=True), phone, "+14155550100")


@probes("GET /virtual_numbers/{id}")
def number_get(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "number")
    yield from own_in_path(key, w, "number")


@probes("PATCH /virtual_numbers/{id}")
def number_patch(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "number", json={"name": f"pwned-{w.tok}", "active": False})


@probes("POST /virtual_numbers/{id}/add_operator")
def number_add_operator(key: Key, w: World) -> Iterator[Probe]:
    own_op, own_number = w.own(key, "operator").id, w.own(key, "number").id
    yield from foreign_in_path(key, w, "number", json={"operator_id": own_op})
    yield from foreign_in_path(key, w, "number", json={"phone_number": f"+447911{UNKNOWN_ID % 1_000_000:06d}",
                                                       "name": f"pwned-{w.tok}"})
    for o in w.foreign(key, "operator"):
        yield pair(lambda v: Probe("refuse", f"{o.label} attached to the own number", values={"id": own_number},
                                   json={"operator_id": v}), o.id, UNKNOWN_ID)


@probes("DELETE /virtual_numbers/{id}/remove_operator")
def number_remove_operator(key: Key, w: World) -> Iterator[Probe]:
    own_op, own_number = w.own(key, "operator").id, w.own(key, "number").id
    yield from foreign_in_path(key, w, "number", params={"operator_id": own_op})
    for o in w.foreign(key, "operator"):
        for where in ("params", "json"):
            yield pair(lambda v: Probe("refuse", f"{o.label} detached from the own number ({where})",
                                       values={"id": own_number}, **{where: {"operator_id": v}}), o.id, UNKNOWN_ID)


# -- tags --

@probes("GET /tags")
def tag_list(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "own project's tags", params=own_project_link(key, w))
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"tags of {p.label}", params={"project_id": v}), p.id, UNKNOWN_ID)


def owned_tag(w: World, key: Key, project: Obj) -> Callable[[dict], str | None]:
    foreign = ids_of(w, key, "tag")

    def check(data: dict) -> str | None:
        if data.get("id") in foreign or data.get("project_id") != project.id:
            return f"returned tag {data.get('id')} of project {data.get('project_id')}, not one of {project.label}"
        return None
    return check


@probes("POST /tags")
def tag_create(key: Key, w: World) -> Iterator[Probe]:
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"tag in {p.label}", json={"name": f"probe-tag-{w.tok}", "project_id": v}),
                   p.id, UNKNOWN_ID)
    for project in w.own_projects(key):
        for t in w.foreign(key, "tag"):
            name = t.extra["name"]
            yield Probe("mine", f"tag in own {project.label} named like {t.label}", phase="collide", echo=(name,),
                        json={"name": name, "project_id": project.id}, check=owned_tag(w, key, project))


@probes("DELETE /tags/{id}")
def tag_delete(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "tag")


# -- scorecards (QA forms) and a recording's review --

@probes("GET /scorecards")
def scorecard_list(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "scorecards list")


@probes("POST /scorecards")
def scorecard_create(key: Key, w: World) -> Iterator[Probe]:
    for p in w.foreign(key, "project"):
        yield pair(lambda v: Probe("refuse", f"form attached to {p.label}", json={
            "name": f"probe-form-{w.tok}", "project_ids": [v], "sections": SCORECARD_SECTIONS}), p.id, UNKNOWN_ID)


@probes("GET /scorecards/{id}", "GET /scorecards/{id}/queue", "DELETE /scorecards/{id}")
def scorecard_reads(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "scorecard")


@probes("PATCH /scorecards/{id}")
def scorecard_patch(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "scorecard", json={"name": f"pwned-{w.tok}"})


@probes("GET /recordings/{id}/scorecard")
def recording_scorecard_reads(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording")
    yield from own_in_path(key, w, "recording")


@probes("PATCH /recordings/{id}/scorecard")
def recording_review(key: Key, w: World) -> Iterator[Probe]:
    yield from foreign_in_path(key, w, "recording", json={"scorecard_id": 1, "answers": [], "reviewed": True})
    own = w.own(key, "recording").public_id
    for f in w.foreign(key, "scorecard"):
        yield pair(lambda v: Probe("refuse", f"own recording reviewed on {f.label}", values={"id": own},
                                   json={"scorecard_id": v, "answers": [], "reviewed": True}, allow_422=True),
                   f.id, UNKNOWN_ID)


# -- service endpoints (no key needed) --

@probes("GET /healthz", "GET /metrics", "GET /openapi.json")
def service_reads(key: Key, w: World) -> Iterator[Probe]:
    yield Probe("own", "service document")


@probes(*(f"POST /telephony/twilio/{webhook}" for webhook in ("voice", "dial", "answered", "recording", "status",
                                                             "hangup")))
def carrier_webhooks(key: Key, w: World) -> Iterator[Probe]:
    """The carrier's webhooks take no key: a request without the carrier's signature reaches no number or call."""
    for n in w.foreign(key, "number"):
        yield pair(lambda v: Probe("refuse", f"a forged carrier webhook of a call to {n.label}",
                                   data={"To": v, "From": "+15105550199", "CallSid": "CA" + "7" * 32},
                                   echo=(v,)), n.tokens[0], "+14155550999")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(own_token: str | None, blob_key: str) -> str:
    """A /files token for another blob: the payload swapped under a MAC of the account's own valid token."""
    if own_token is None:
        return f"{_b64(f'4102444800:{blob_key}'.encode())}.{_b64(b'x' * 32)}"
    payload, mac = own_token.split(".")
    expires = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode().split(":", 1)[0]
    return f"{_b64(f'{expires}:{blob_key}'.encode())}.{mac}"


@probes("GET /files/{token}", "HEAD /files/{token}")
def signed_files(key: Key, w: World) -> Iterator[Probe]:
    mine = w.audio_tokens.get(key.account)
    for r in w.foreign(key, "recording"):
        yield pair(lambda v: Probe("refuse", f"the audio of {r.label} through a forged signed URL",
                                   values={"token": v}),
                   forged(mine, f"accounts/{r.account}/recordings/{r.public_id}/audio"),
                   forged(mine, f"accounts/{r.account}/recordings/{w.unknown_uuid}/audio"))


# ----- running --------------------------------------------------------------------------------------------

@dataclass
class Leak:
    operation: str
    key: Key
    probe: str
    status: int
    problem: str
    body: str


class Runner:
    def __init__(self, http: httpx.AsyncClient, world: World, audio: bytes):
        self.http, self.world, self.audio = http, world, audio
        self.requests = 0
        self.probes = 0
        self.foreign_probes = 0
        self.per_operation: Counter[str] = Counter()
        self.leaks: list[Leak] = []
        self._twins: dict[tuple, asyncio.Future] = {}
        self._patterns: dict[int, tuple[int, re.Pattern | None]] = {}

    async def send(self, key: Key, op: Operation, probe: Probe) -> httpx.Response:
        self.requests += 1
        kwargs: dict[str, Any] = {"headers": dict(key.headers)}
        if probe.params is not None:
            kwargs["params"] = probe.params
        if probe.form is not None:
            kwargs["data"] = {k: ([str(x) for x in v] if isinstance(v, list) else str(v))
                              for k, v in probe.form.items()}
            kwargs["files"] = {"file": ("call.wav", self.audio, "application/octet-stream")}
        elif probe.json is not None:
            kwargs["json"] = probe.json
        elif probe.data is not None:
            kwargs["data"] = probe.data
        return await self.http.request(op.method, ORIGIN + fill(op.path, probe.values), **kwargs)

    def foreign_strings(self, key: Key) -> re.Pattern | None:
        version, pattern = self._patterns.get(id(key), (-1, None))
        if version != self.world.version:
            tokens = sorted({t for o in self.world.objects if not key.sees(o) for t in o.tokens}, key=len, reverse=True)
            pattern = re.compile("|".join(map(re.escape, tokens))) if tokens else None
            self._patterns[id(key)] = (self.world.version, pattern)
        return pattern

    def scan(self, key: Key, resp: httpx.Response, echo: tuple[str, ...]) -> list[str]:
        pattern = self.foreign_strings(key)
        if pattern is None:
            return []
        text = resp.text + "\n" + "\n".join(f"{k}: {v}" for k, v in resp.headers.items())
        return sorted({m.group(0) for m in pattern.finditer(text)} - set(echo))

    async def twin(self, key: Key, op: Operation, probe: Probe, phase: str) -> httpx.Response:
        cache = (id(key), phase, op.method, op.path, repr(probe.values), repr(probe.params), repr(probe.json),
                 repr(probe.form), repr(probe.data))
        if cache not in self._twins:  # a future: concurrent probes with one twin send it once
            self._twins[cache] = asyncio.ensure_future(self.send(key, op, probe))
        return await self._twins[cache]

    async def run(self, key: Key, op: Operation, probe: Probe, phase: str) -> None:
        resp = await self.send(key, op, probe)
        self.probes += 1
        self.foreign_probes += probe.foreign is not None or probe.expect == "mine"
        self.per_operation[f"{op.method} {normalized(op.path)}"] += 1
        status, problems = resp.status_code, []
        permitted = op.permission is None or op.permission in key.permissions
        if probe.paused and status == 503 and resp.json() == {"error": "virtual_number_purchase_paused"}:
            pass
        elif status >= 500:
            problems.append(f"server error {status}")
        elif not permitted and status != 403:
            problems.append(f"answered {status} without the {op.permission} permission (403 expected)")
        elif probe.expect == "refuse":
            allowed = {403, 404} | ({422} if probe.allow_422 else set())
            if status not in allowed:
                problems.append(f"answered {status} to a foreign reference (expected one of {sorted(allowed)})")
        elif probe.expect in ("own", "mine") and permitted:
            if not 200 <= status < 300:
                problems.append(f"answered {status} for the key's own object (2xx expected)")
            elif probe.check is not None and (problem := probe.check(resp.json()["data"])):
                problems.append(problem)
        if probe.twin is not None and (status < 500 or probe.paused):
            twin = await self.twin(key, op, probe.twin, phase)
            twin_text = twin.text.replace(probe.unknown, probe.foreign)
            if (twin.status_code, twin_text) != (status, resp.text):
                problems.append(f"answers unlike an unknown reference ({probe.unknown}): "
                                f"{twin.status_code} {twin.text[:160]!r}")
        if hits := self.scan(key, resp, probe.echo):
            problems.append(f"foreign data in the answer: {', '.join(hits)}")
        if probe.follow is not None and 200 <= status < 300:
            problems += await probe.follow(self, key, resp)
        for problem in problems:
            self.leaks.append(Leak(f"{op.method} {normalized(op.path)}", key, probe.label, status, problem,
                                   resp.text[:300]))
        if probe.after is not None:
            probe.after(resp)


def default_phase(method: str) -> str:
    return {"GET": "read", "HEAD": "read", "DELETE": "delete"}.get(method, "write")


# ----- the state of every object, before and after -----------------------------------------------------------

def _pick(data: Any, *names: str) -> Any:
    return {n: data.get(n) for n in names} if isinstance(data, dict) else data


async def snapshot(http: httpx.AsyncClient, w: World) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for obj in [o for o in w.objects if o.fixture]:
        admin = w.admins[obj.account]

        async def get(path: str, **kw) -> Any:
            resp = await http.get(path, headers=admin, **kw)
            return resp.json()["data"] if resp.status_code == 200 else f"status {resp.status_code}"

        if obj.kind == "project":
            state[obj.label] = _pick(await get(f"/projects/{obj.id}"), "name", "description", "language")
        elif obj.kind == "recording":
            data = await get(f"/recordings/{obj.public_id}")
            if isinstance(data, dict):
                data["tag_ids"] = sorted(data["tag_ids"])
            state[obj.label] = _pick(data, "name", "project_id", "external_id", "operator_id", "tag_ids")
            shares = await get(f"/recordings/{obj.public_id}/shares")
            state[f"{obj.label} shares"] = sorted(s["id"] for s in shares) if isinstance(shares, list) else shares
        elif obj.kind == "operator":
            data = await get(f"/operators/{obj.id}")
            if isinstance(data, dict):
                data["recording_project_ids"] = sorted(data["recording_project_ids"])
                data["virtual_numbers"] = sorted(n["id"] for n in data["virtual_numbers"])
            state[obj.label] = _pick(data, "name", "external_id", "phone_number", "email", "active",
                                     "recording_project_ids", "virtual_numbers")
        elif obj.kind == "number":
            data = await get(f"/virtual_numbers/{obj.id}")
            if isinstance(data, dict):
                data["operators"] = [o["id"] for o in data["operators"]]
            state[obj.label] = _pick(data, "name", "phone_number", "project_id", "active", "recording",
                                     "routing_strategy", "operators")
        elif obj.kind == "scorecard":
            state[obj.label] = _pick(await get(f"/scorecards/{obj.id}"), "name", "version", "project_ids")
        elif obj.kind == "tag":
            tags = await get("/tags", params={"project_id": obj.extra["project_id"]})
            state[obj.label] = (next(({"name": t["name"], "project_id": t["project_id"]} for t in tags
                                      if t["id"] == obj.id), "missing") if isinstance(tags, list) else tags)
    return state


# ----- the test --------------------------------------------------------------------------------------------

async def probe_all(runner: Runner, world: World, operations: dict, service_keys: list[Key]) -> None:
    for phase in PHASES:
        batch = [(key, op, probe)
                 for (method, path), op in sorted(operations.items()) if (method, path) in PROBES
                 for key in (world.keys if op.permission else service_keys)
                 for probe in PROBES[(method, path)](key, world)
                 if (probe.phase or default_phase(method)) == phase]
        # reads change nothing: they run READ_CONCURRENCY at a time; the other phases one by one, in order
        limit = asyncio.Semaphore(READ_CONCURRENCY if phase == "read" else 1)

        async def one(key: Key, op: Operation, probe: Probe, phase: str = phase) -> None:
            async with limit:
                await runner.run(key, op, probe, phase)
        await asyncio.gather(*(one(*item) for item in batch))


def make_app(runtime, monkeypatch):
    """The app as create_app builds it, and its operation table (the Router it fills)."""
    routers: list[Router] = []

    class Recording(Router):
        def __init__(self, app):
            super().__init__(app)
            routers.append(self)

    monkeypatch.setattr(app_module, "Router", Recording)
    app = app_module.create_app(runtime.ctx, runtime.usage, runtime.limiter)
    assert routers, "create_app no longer fills a callscope.api.routing.Router: read the operation table elsewhere"
    return app, routers[0]


def report(leaks: list[Leak], limit: int = 80) -> list[str]:
    """Leaks grouped by operation, key kind and problem, with one example each."""
    groups: dict[tuple, list[Leak]] = {}
    for leak in leaks:
        problem = re.sub(r"[0-9a-f-]{36}|\d+", "#", leak.problem.split(":")[0])
        groups.setdefault((leak.operation, leak.key.kind, problem), []).append(leak)
    lines = []
    for (operation, kind, _), found in sorted(groups.items(), key=lambda g: g[0]):
        first = found[0]
        lines.append(f"- {operation} with {kind} keys ({len(found)}x, e.g. key {first.key.label}, {first.probe}): "
                     f"{first.problem} -> {first.status} {first.body[:200]!r}")
    return lines[:limit] + ([f"... and {len(lines) - limit} more groups"] if len(lines) > limit else [])


@pytest.mark.timeout(300)
async def test_no_key_reaches_another_tenant(runtime, make_key, tmp_path, monkeypatch, store_settings,
                                            catalog_settings, isolation_report):
    combination = f"store={store_settings['store']} catalog={'postgres' if catalog_settings else 'sqlite'}"
    audio = make_audio(tmp_path / "call.wav", "wav", seconds=0.5).read_bytes()
    app, router = make_app(runtime, monkeypatch)
    operations = {(method, normalized(template)): op for (method, template), op in router.operations.items()}
    unprobed = sorted(f"{m} {p}" for m, p in set(operations) - set(PROBES))
    stale = sorted(f"{m} {p}" for m, p in set(PROBES) - set(operations))

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN + PREFIX) as http:
        world = await build_world(runtime, http, make_key, audio)
        before = await snapshot(http, world)
        runner = Runner(http, world, audio)
        service_keys = [k for k in world.keys if k.project is None and k.permissions == ALL]
        # thousands of refused requests (and the 503s of the paused purchase) would flood a failure's output
        with structlog.testing.capture_logs() as logged:
            await probe_all(runner, world, operations, service_keys)
        after = await snapshot(http, world)

    changed = [f"- {label}: before {before[label]!r}, after {after.get(label)!r}"
               for label in before if after.get(label) != before[label]]
    never_driven = sorted(f"{m} {p}" for m, p in set(operations) & set(PROBES)
                          if not runner.per_operation[f"{m} {p}"])
    summary = (f"tenant isolation [{combination}]: {len(operations)} operations, {len(world.keys)} keys, "
               f"requests tried {runner.requests} ({runner.probes} probes, {runner.foreign_probes} naming a foreign "
               f"object), leaks {len(runner.leaks) + len(changed) + len(world.hostile_findings)}")
    print("\n" + summary)
    isolation_report.append(summary)
    crashes = [e for e in logged if e.get("event") == "unhandled_error"]
    problems = []
    if crashes:
        problems.append(f"{len(crashes)} unhandled errors, e.g. {crashes[0]}")
    if unprobed or stale or never_driven:
        problems.append(f"operations without a probe: {unprobed}; probes of no operation: {stale}; "
                        f"operations no probe reached: {never_driven}")
    if world.hostile_findings:
        problems.append("hostile id labels adopted:\n" + "\n".join(f"- {f}" for f in world.hostile_findings))
    if runner.leaks:
        problems.append(f"{len(runner.leaks)} leaking answers:\n" + "\n".join(report(runner.leaks)))
    if changed:
        problems.append("objects changed by another tenant's requests:\n" + "\n".join(changed))
    for line in problems:
        print(line)
    assert not problems, f"{summary}\n" + "\n".join(problems)
