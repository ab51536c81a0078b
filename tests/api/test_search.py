"""GET /search on SQLite and PostgreSQL catalogs: words (phrases, exclusions, OR, stemming by the call's language,
case and accents), meaning (the real text embedder), hybrid; each filter, inside the query (a filtered page is full);
the hit's shape; pagination; isolation between accounts and project-scoped keys; the index kept true through
re-analysis, deletion (API, project, retention) and redaction; and hostile queries answered 422, never 500."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete

from callscope.analysis.stages.redaction import redact
from callscope.catalog.tables import RecordingCategory, SearchSegment
from callscope.resources import Project
from callscope.services import scope, search_index
from callscope.workers.retention import purge_project
from tests.api.conftest import catalog_on_both, count_rows
from tests.search.calls import analyse, result, segments, text_embedder, use_embedder  # noqa: F401 - a fixture

LINES = [
    ("agent", "Thank you for calling, how can I help?", "calm"),
    ("customer", "I would like a refund today please", "angry"),
    ("agent", "Refunds are processed within five days", "neutral"),
    ("customer", "Then cancel my subscription", "angry"),
    ("agent", "Please cancel the order instead, the café will call you", "neutral"),
    ("agent", "We can offer a credit on your next invoice", "happy"),
    ("customer", "Can you return what I paid for the order?", "sad"),
    ("agent", "The weather is lovely today", "happy"),
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def store_settings() -> dict:
    return {"store": "sqlite"}  # search reads the catalog; the store's back ends are tested elsewhere


@pytest.fixture(autouse=True)
def embedder(runtime, text_embedder):
    use_embedder(runtime, text_embedder)


@pytest.fixture
def call(runtime, upload, wav):
    """Upload a recording and store `analysis` as its analysis; its public_id."""
    async def make(analysis, headers=None, **fields) -> str:
        resp = await upload(wav, headers=headers, **fields)
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        await analyse(runtime, public_id, analysis)
        return public_id
    return make


@pytest.fixture
def find(client, admin):
    async def get(q: str, headers=None, **params):
        resp = await client.get("/search", params={"q": q, **params}, headers=headers or admin)
        assert resp.status_code == 200, resp.text
        return resp.json()
    return get


def texts(body: dict) -> list[str]:
    return [hit["text"] for hit in body["data"]]


async def test_words_phrases_exclusions_or_case_and_accents(create_project, call, find):
    project = await create_project("Support", language="en")
    await call(result(LINES), project_id=project["id"])
    keyword = {"mode": "keyword"}
    assert set(texts(await find("refunds", **keyword))) == {LINES[1][1], LINES[2][1]}  # stemmed: refund, refunds
    assert texts(await find('"refund today"', **keyword)) == [LINES[1][1]]
    assert texts(await find('"today refund"', **keyword)) == []  # a phrase keeps its order
    assert texts(await find("cancel -subscription", **keyword)) == [LINES[4][1]]
    assert set(texts(await find("refund OR credit", **keyword))) == {LINES[1][1], LINES[2][1], LINES[5][1]}
    assert set(texts(await find("REFUND", **keyword))) == {LINES[1][1], LINES[2][1]}
    assert texts(await find("CAFE", **keyword)) == texts(await find("cafÉ", **keyword)) == [LINES[4][1]]
    assert texts(await find("refund -today", **keyword)) == [LINES[2][1]]
    assert texts(await find("refund order", **keyword)) == []  # every word, in one segment


async def test_a_call_is_stemmed_in_its_own_language(create_project, call, find):
    spanish = await create_project("Ventas", language="es")
    english = await create_project("Sales", language="en")
    said = [("customer", "Compraremos el plan mañana")]
    await call(result(said, language="es"), project_id=spanish["id"])
    await call(result(said, language="en"), project_id=english["id"], name="English call")
    found = await find("comprar", mode="keyword")  # Spanish stems compraremos and comprar alike; English does not
    assert [hit["recording"]["name"] for hit in found["data"]] == ["call.wav"]
    assert found["data"][0]["highlights"] == [{"start": 0, "end": len("Compraremos")}]
    assert texts(await find("MANANA", mode="keyword")) == [said[0][1], said[0][1]]  # accents, in both


async def test_a_hit_is_a_segment_with_its_recording_speaker_marks_and_a_link_to_its_moment(create_project, call,
                                                                                            find, create_operator):
    operator = await create_operator("Olga")
    project = await create_project("Support", language="en")
    public_id = await call(result(LINES, agent_operator=operator["id"]), project_id=project["id"], name="Big refund")
    [hit] = (await find("invoice credit", mode="keyword"))["data"]
    text = LINES[5][1]
    assert hit["recording"] == {"public_id": public_id, "name": "Big refund"}
    assert (hit["start"], hit["end"], hit["speaker"], hit["role"]) == (25.0, 29.5, "speaker-1", "agent")
    assert (hit["operator_id"], hit["emotion"], hit["text"]) == (operator["id"], "happy", text)
    assert [text[h["start"]:h["end"]] for h in hit["highlights"]] == ["credit", "invoice"]
    assert hit["url"] == f"http://127.0.0.1:8080/recordings/{public_id}#t=25"
    assert hit["score"] > 0


async def test_meaning_finds_what_is_said_in_other_words(create_project, call, find):
    project = await create_project("Support", language="en")
    await call(result(LINES), project_id=project["id"])
    found = texts(await find("money back", mode="meaning"))
    assert LINES[6][1] in found[:4]  # "Can you return what I paid": no word in common
    assert LINES[7][1] not in found  # the weather: below the similarity that counts
    scores = [hit["score"] for hit in (await find("money back", mode="meaning"))["data"]]
    assert scores == sorted(scores, reverse=True) and all(0.3 <= s <= 1 for s in scores)
    hybrid = texts(await find("refund"))  # the default: words and meaning, fused
    assert set(hybrid[:2]) == {LINES[1][1], LINES[2][1]}  # found both ways: first
    assert LINES[6][1] in hybrid


async def test_each_filter_narrows_inside_the_query_so_a_page_stays_full(runtime, client, admin, create_project,
                                                                        create_operator, call, find):
    olga = await create_operator("Olga")
    a = await create_project("A", language="en")
    b = await create_project("B", language="en")
    tag = (await client.post("/tags", json={"name": "vip", "project_id": a["id"]}, headers=admin)).json()["data"]
    many = [("customer", f"I want a refund for order {n}", "angry") for n in range(12)]
    tagged = await call(result(many, categories=("billing",), goals={7: True}), project_id=a["id"],
                        operator_id=olga["id"], **{"tag_ids[]": [str(tag["id"])]})
    await call(result([("agent", f"Your refund number {n} is done", "calm") for n in range(12)],
                      categories=("support",), goals={7: False}), project_id=b["id"])
    for mode in ("keyword", "meaning", "hybrid"):
        checks = {("project_id", a["id"]): tagged, ("operator_id", olga["id"]): tagged, ("speaker", "customer"): tagged,
                  ("tag", tag["id"]): tagged, ("category", "billing"): tagged, ("emotion", "angry"): tagged,
                  ("goal_met", "true"): tagged, ("status", "completed"): None}
        for (name, value), expected in checks.items():
            params = {"mode": mode, "per_page": 5, name: value, **({"goal_id": 7} if name == "goal_met" else {})}
            body = await find("refund", **params)
            assert len(body["data"]) == 5, (mode, name)  # a full page: the filter did not cut a top-k
            assert body["meta"]["total_count"] == (24 if expected is None else 12), (mode, name)
            if expected is not None:
                assert {hit["recording"]["public_id"] for hit in body["data"]} == {expected}, (mode, name)
        created = await find("refund", mode=mode, created_to="2000-01-01T00:00:00Z")
        assert created["data"] == [] and created["meta"]["total_count"] == 0
        assert (await find("refund", mode=mode, status="failed"))["data"] == []
        assert (await find("refund", mode=mode, goal_id=7, goal_met="false"))["meta"]["total_count"] == 12


async def test_pages_cover_every_hit_once(create_project, call, find):
    project = await create_project("Support", language="en")
    await call(result([("customer", f"Refund number {n} please") for n in range(23)]), project_id=project["id"])
    for mode in ("keyword", "meaning", "hybrid"):
        pages = [await find("refund", mode=mode, per_page=10, page=n) for n in (1, 2, 3, 4)]
        assert [len(p["data"]) for p in pages] == [10, 10, 3, 0], mode
        assert pages[0]["meta"] == {"current_page": 1, "per_page": 10, "total_pages": 3, "total_count": 23}
        seen = [hit["text"] for p in pages for hit in p["data"]]
        assert len(seen) == len(set(seen)) == 23, mode


async def test_another_account_and_another_project_are_never_found(runtime, client, make_key, create_project, call,
                                                                  find, upload, wav):
    a = await create_project("A", language="en")
    b = await create_project("B", language="en")
    await call(result([("customer", "Refund for the red bicycle")]), project_id=a["id"])
    await call(result([("customer", "Refund for the blue scooter")]), project_id=b["id"])
    other = await make_key(account="other")
    other_project = (await client.post("/projects", json={"name": "Theirs", "language": "en"},
                                       headers=other)).json()["data"]
    await call(result([("customer", "Refund for the green car")]), headers=other, project_id=other_project["id"])
    for mode in ("keyword", "meaning", "hybrid"):
        assert texts(await find("refund", headers=other, mode=mode)) == ["Refund for the green car"]
        scoped = await make_key("read", project_id=a["id"])
        assert texts(await find("refund", headers=scoped, mode=mode)) == ["Refund for the red bicycle"]
        assert texts(await find("scooter car", headers=scoped, mode="keyword")) == []
        refused = await client.get("/search", params={"q": "refund", "project_id": b["id"], "mode": mode},
                                   headers=scoped)
        assert refused.status_code == 403
        assert set(texts(await find("refund", mode=mode))) == {"Refund for the red bicycle",
                                                              "Refund for the blue scooter"}


async def test_reanalysis_replaces_the_entries_and_deletion_takes_them_away(runtime, client, admin, create_project,
                                                                           call, find):
    project = await create_project("Support", language="en")
    first = await call(result([("customer", "Refund the kettle")], categories=("billing",)), project_id=project["id"])
    second = await call(result([("customer", "Refund the toaster")]), project_id=project["id"])
    await analyse(runtime, first, result([("customer", "Refund the teapot")]), again=True)
    assert sorted(texts(await find("refund", mode="keyword"))) == ["Refund the teapot", "Refund the toaster"]
    assert texts(await find("kettle", mode="keyword")) == []
    assert (await find("refund", category="billing"))["data"] == []  # the new analysis found no category
    assert texts(await find("teapot", mode="meaning"))[:1] == ["Refund the teapot"]

    assert (await client.delete(f"/recordings/{first}", headers=admin)).status_code == 204
    assert texts(await find("refund")) == ["Refund the toaster"]
    assert (await client.delete(f"/projects/{project['id']}", headers=admin)).status_code == 204
    assert (await find("refund"))["data"] == [] and second
    assert count_rows(runtime, SearchSegment) == count_rows(runtime, RecordingCategory) == 0


async def test_calls_analysed_before_search_are_indexed_from_their_stored_documents(runtime, create_project, call,
                                                                                   find):
    project = await create_project("Support", language="en")
    await call(result([("customer", "Refund the kettle")], categories=("billing",)), project_id=project["id"])
    with runtime.catalog.session() as session:  # as a catalog migrated from before search holds it
        session.execute(delete(SearchSegment))
        session.execute(delete(RecordingCategory))
    assert (await find("refund"))["data"] == []
    assert await search_index.reindex(runtime.ctx) == 1
    assert texts(await find("kettle", mode="keyword", category="billing")) == ["Refund the kettle"]
    assert texts(await find("boiling water appliance", mode="meaning")) == ["Refund the kettle"]
    assert await search_index.reindex(runtime.ctx) == 0  # nothing left to do


async def test_retention_takes_a_call_out_of_the_index(runtime, client, admin, create_project, call, find):
    project = await create_project("Support", language="en", retention_days=1)
    await call(result([("customer", "Refund the kettle")]), project_id=project["id"])
    spec = scope.by_id(runtime.ctx, Project, "default", project["id"])
    assert await purge_project(runtime.ctx, spec, runtime.ctx.clock() + timedelta(days=2)) == (1, 0)
    assert (await find("refund"))["data"] == [] and count_rows(runtime, SearchSegment) == 0
    if runtime.catalog.dialect == "sqlite":  # the FTS5 index forgot its words too
        with runtime.catalog.session() as session:
            fts = session.connection().exec_driver_sql(
                "SELECT count(*) FROM search_fts WHERE search_fts MATCH '\"english_kettl\"'").scalar()
            assert fts == 0


async def test_a_redacted_value_is_never_found(create_project, call, find):
    project = await create_project("Support", language="en")
    said = segments([("customer", "My card number is 4111 1111 1111 1111 thanks")])
    redacted = redact(said, ["payment_card"]).segments
    await call(result(redacted), project_id=project["id"])
    for mode in ("keyword", "hybrid"):
        assert (await find("4111", mode=mode))["data"] == []
        assert (await find('"1111 1111"', mode=mode))["data"] == []
    [hit] = (await find("card number", mode="keyword"))["data"]
    assert "4111" not in hit["text"] and "[PAYMENT_CARD]" in hit["text"]


HOSTILE = ["'", "&", "|", "!", ":", "*", "(", ")", "<", ">", '"', "\\", "refund' OR 1=1 --", "refund & credit",
           "refund | !credit", "(refund", "refund)", "*refund*", "refund:*", "NEAR(refund credit)", "refund AND",
           "OR refund OR", "-refund -credit extra", '"refund', 'refund"', "\\'refund\\'", "english_refund",
           "refund <-> credit", "ü ß ÿ", "😀 refund", "x" * 500, " ".join(["refund"] * 32), "- - -", "NOT refund"]


async def test_hostile_queries_are_words_or_a_422_never_a_500(create_project, call, client, admin):
    project = await create_project("Support", language="en")
    await call(result(LINES), project_id=project["id"])
    for mode in ("keyword", "meaning", "hybrid"):
        for q in HOSTILE:
            resp = await client.get("/search", params={"q": q, "mode": mode}, headers=admin)
            assert resp.status_code in (200, 422), (q, mode, resp.text)
            if resp.status_code == 422:
                assert resp.json()["errors"] and all(e.startswith("q ") for e in resp.json()["errors"]), q


@pytest.mark.parametrize(("params", "message"), [
    ({}, "q is required"),
    ({"q": ""}, "q must not be blank or contain control characters"),
    ({"q": "   "}, "q must not be blank or contain control characters"),
    ({"q": "refund\x00"}, "q must not be blank or contain control characters"),
    ({"q": "x" * 501}, "q is too long (maximum is 500 characters)"),
    ({"q": "'&|!:*()<>\"\\"}, "q has no word to search for (letters or digits)"),
    ({"q": "-refund"}, "q must name a word to find, not only words to leave out"),
    ({"q": " ".join(["refund"] * 33)}, "q has too many words (maximum is 32)"),
    ({"q": "refund", "mode": "fuzzy"}, "mode must be one of: keyword, meaning, hybrid"),
    ({"q": "refund", "colour": "red"}, "colour is not a parameter of this operation"),
    ({"q": "refund", "goal_met": "true"}, "goal_met needs goal_id (the goal met or not)"),
    ({"q": "refund", "speaker": "robot"}, "speaker must be one of: agent, customer"),
    ({"q": "refund", "emotion": "bored"}, None),
    ({"q": "refund", "tag": "vip"}, "tag must be an integer"),
    ({"q": "refund", "project_id": "99999999999999999999"}, None),
    ({"q": "refund", "created_from": "yesterday"}, "created_from must be an ISO 8601 timestamp"),
])
async def test_bad_input_is_a_422_naming_it(client, admin, params, message):
    resp = await client.get("/search", params=params, headers=admin)
    assert resp.status_code == 422, resp.text
    if message is not None:
        assert resp.json() == {"errors": [message]}


async def test_a_read_key_is_enough_and_no_key_is_401(client, make_key):
    assert (await client.get("/search", params={"q": "refund"}, headers=await make_key("read"))).status_code == 200
    assert (await client.get("/search", params={"q": "refund"})).status_code == 401
