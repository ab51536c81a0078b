"""The recording page's actions, in process on SQLite and PostgreSQL: sharing (any member; with a member, who is
emailed by the sharer's name, or with everyone), tags, re-analysis and deletion (the account's admins, deletion asked
first), each saying what it did on the page; a member sees no button for what they may not do and a forged request
is refused with the pages' error page (403, 400 without the form's token), another account's recording is 404 to
every action, and a refused action says why beside its form."""

from __future__ import annotations

import email
import email.policy
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import select, update

from callscope.catalog.tables import Job, Recording
from callscope.services import accounts, projects, tags
from tests.pages.conftest import MEMBER, admin, browser_of
from tests.search.calls import analyse, result

ADMIN = "ada@example.com"
LINES = [("agent", "Thank you for calling, how can I help?", "calm"),
         ("customer", "I want a refund for the second charge.", "angry")]
ACTIONS = ("share", "unshare", "tags", "reanalyse", "delete")


@pytest.fixture
async def boss(runtime, member) -> httpx.AsyncClient:
    """The admin of `default` (the `member` fixture has made Ana a member first), signed in."""
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada Admin", "admin")
    http = await browser_of(runtime, ADMIN)
    yield http
    await http.aclose()


def csrf(page: httpx.Response) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page.text)[1]


def notice(page: httpx.Response) -> str | None:
    found = re.search(r'id="action-notice">([^<]+)<', page.text)
    return unescape(found[1]) if found else None


def problem(page: httpx.Response) -> str | None:
    found = re.search(r'id="action-problem" tabindex="-1">([^<]+)<', page.text)
    return unescape(found[1]) if found else None


async def post(http: httpx.AsyncClient, public_id: str, action: str, **fields) -> httpx.Response:
    page = await http.get(f"/recordings/{public_id}")
    return await http.post(f"/recordings/{public_id}/{action}", data={"csrf": csrf(page), **fields})


async def follow(http: httpx.AsyncClient, resp: httpx.Response) -> httpx.Response:
    assert resp.status_code == 303, resp.text
    return await http.get(resp.headers["location"])


async def rest(api, call, public_id: str, path: str = "") -> httpx.Response:
    return await api.get(f"/recordings/{public_id}{path}", headers=call.keys["default"])


async def test_a_member_shares_with_a_colleague_named_as_themself(runtime, settings, member, boss, call, support,
                                                                  api) -> None:
    public_id = await call(LINES, support)
    resp = await post(member, public_id, "share", to=ADMIN, message="The refund we spoke of.", notify="on")
    page = await follow(member, resp)
    assert notice(page) == f"Shared with Ada Admin ({ADMIN})."
    [share] = (await rest(api, call, public_id, "/shares")).json()["data"]
    assert share["user"]["email"] == ADMIN and share["shared_by"] == {"type": "member", "name": "Ana"}
    await runtime.mail.drain(timeout=5)
    mails = [email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
             for p in (settings.data_dir / "outbox").glob("*.eml")]
    [mail] = [m for m in mails if ADMIN in str(m["To"]) and "shared" in m["Subject"]]
    text = mail.get_body(preferencelist=("plain",)).get_content()
    assert mail["Subject"].startswith("Ana shared a call recording with you") and "> The refund we spoke of." in text
    assert f"/recordings/{public_id}" in text

    again = await follow(member, await post(member, public_id, "share", to=ADMIN))
    assert notice(again) == f"This call was shared with Ada Admin ({ADMIN}) already: nothing was sent."
    everyone = await follow(member, await post(member, public_id, "share", to="everyone"))
    assert notice(everyone).startswith("Shared with everyone in the account")
    assert 'id="shares"' in everyone.text and "Everyone in the account" in everyone.text

    refused = await post(member, public_id, "share", to="nobody@example.com", back="status=failed")
    assert refused.status_code == 422 and problem(refused) == "Not a member of this account"
    assert ' id="share-action" open' in refused.text  # the form shown open, its reason beside it
    assert '<p class="back"><a href="/recordings?status=failed">' in refused.text  # the list's filters kept


async def test_a_member_sees_no_admin_action_and_a_forged_one_is_refused(runtime, member, call, support,
                                                                         api) -> None:
    public_id = await call(LINES, support)
    page = await member.get(f"/recordings/{public_id}")
    assert 'id="share-action"' in page.text
    for button in ('id="tags-action"', 'id="reanalyse"', 'id="delete"', "/unshare"):
        assert button not in page.text
    tag, _ = await tags.create_tag(runtime.ctx, admin("default"), "escalate", support)
    forged = {"tags": {"tag_id": str(tag.status.id)}, "reanalyse": {}, "delete": {"confirmed": "yes"},
              "unshare": {"share_id": "1"}}
    for action, fields in forged.items():
        resp = await post(member, public_id, action, **fields)
        assert resp.status_code == 403, (action, resp.text)
        assert "Only the account&#39;s admins may do this" in resp.text and "<html" in resp.text
    got = (await rest(api, call, public_id)).json()["data"]
    assert got["tag_ids"] == [] and got["stage"] == "done"
    assert await _jobs(runtime, public_id) == []


async def test_without_the_forms_token_nothing_is_done(member, boss, call, support, api) -> None:
    public_id = await call(LINES, support)
    for http in (member, boss):
        for action in ACTIONS:
            resp = await http.post(f"/recordings/{public_id}/{action}", data={"csrf": "forged", "confirmed": "yes",
                                                                              "to": "everyone"})
            assert resp.status_code == 400 and "This form has expired" in resp.text, action
    assert (await rest(api, call, public_id)).status_code == 200
    assert (await rest(api, call, public_id, "/shares")).json()["data"] == []


async def test_another_accounts_recording_is_not_found_to_every_action(runtime, boss, member, call, api) -> None:
    other = await projects.create_project(runtime.ctx, admin("other"), {"name": "Theirs", "language": "en"})
    theirs = await call(LINES, other.status.id, account="other")
    own = await boss.get("/recordings")
    for http in (boss, member):
        for action in ACTIONS:
            resp = await http.post(f"/recordings/{theirs}/{action}", data={"csrf": csrf(own), "confirmed": "yes",
                                                                           "to": "everyone"})
            assert resp.status_code == 404 and "<html" in resp.text, action
    assert (await api.get(f"/recordings/{theirs}", headers=call.keys["other"])).status_code == 200


async def test_a_signed_out_action_leads_to_sign_in_and_back_to_the_page(pages, call, support) -> None:
    public_id = await call(LINES, support)
    resp = await pages.post(f"/recordings/{public_id}/delete", data={"csrf": "x", "confirmed": "yes"})
    assert resp.status_code == 303
    assert resp.headers["location"] == f"/sign-in?next=/recordings/{public_id}"


async def test_an_admin_edits_the_tags_adding_a_new_one(runtime, boss, call, support, api) -> None:
    public_id = await call(LINES, support)
    billing, _ = await tags.create_tag(runtime.ctx, admin("default"), "billing", support)
    elsewhere = await projects.create_project(runtime.ctx, admin("default"), {"name": "Sales", "language": "en"})
    foreign, _ = await tags.create_tag(runtime.ctx, admin("default"), "lead", elsewhere.status.id)
    page = await boss.get(f"/recordings/{public_id}")
    assert f'name="tag_id" value="{billing.status.id}">' in page.text and "lead" not in page.text

    page = await boss.get(f"/recordings/{public_id}")
    resp = await boss.post(f"/recordings/{public_id}/tags", content=f"csrf={csrf(page)}&tag_id={billing.status.id}"
                           "&new_tag=Call+back", headers={"Content-Type": "application/x-www-form-urlencoded"})
    saved = await follow(boss, resp)
    assert notice(saved) == "Tags saved."
    made = {t.spec.name: t.status.id for t in tags.list_tags(runtime.ctx, admin("default"), support)}
    assert (await rest(api, call, public_id)).json()["data"]["tag_ids"] == sorted([made["billing"], made["Call back"]])
    assert re.findall(r'<ul class="tags" id="tags".*?</ul>', saved.text, re.S)[0].count("<li>") == 2

    refused = await post(boss, public_id, "tags", tag_id=str(foreign.status.id))
    assert refused.status_code == 422 and "are not tags of project" in problem(refused)
    assert ' id="tags-action" open' in refused.text
    cleared = await follow(boss, await post(boss, public_id, "tags"))  # nothing ticked: no tags
    assert notice(cleared) == "Tags saved." and (await rest(api, call, public_id)).json()["data"]["tag_ids"] == []


async def test_a_reanalysis_is_queued_followed_and_refused_twice(runtime, boss, call, support) -> None:
    public_id = await call(LINES, support)
    queued = await follow(boss, await post(boss, public_id, "reanalyse"))
    assert notice(queued).startswith("Queued to be analysed again with the project's current settings.")
    assert "Analysing this call again" in queued.text and 'data-reanalysing="true"' in queued.text
    assert 'id="reanalyse"' not in queued.text  # no second one while it is under way
    state = (await boss.get(f"/recordings/{public_id}/state", headers={"Accept": "application/json"})).json()
    assert state["reanalysing"] is True and state["stage_name"] == "Waiting to be analysed again"
    assert await _jobs(runtime, public_id) == [("reanalyze", "queued")]

    twice = await post(boss, public_id, "reanalyse")  # a form left open in another tab
    assert twice.status_code == 409 and problem(twice).startswith("This call is being analysed already")

    await analyse(runtime, public_id, result(LINES))  # the dispatcher's part: the new results stored
    done = await boss.get(f"/recordings/{public_id}", params={"done": "reanalysis"})
    assert notice(done) is None and "Analysing this call again" not in done.text and 'id="reanalyse"' in done.text
    state = (await boss.get(f"/recordings/{public_id}/state", headers={"Accept": "application/json"})).json()
    assert state["reanalysing"] is False and state["status"] == "completed"

    await runtime.ctx.catalog.write(lambda s: s.execute(
        update(Recording).where(Recording.public_id == public_id).values(processing_restricted=True)))
    restricted = await post(boss, public_id, "reanalyse")
    assert restricted.status_code == 409 and "restricted" in problem(restricted)


async def test_deletion_is_asked_first_then_back_to_the_list_as_it_was(runtime, boss, call, support, api) -> None:
    public_id = await call(LINES, support, name="Refund: Mr <Smith>")
    page = await boss.get(f"/recordings/{public_id}", params={"from": "status=completed"})
    asked = await boss.post(f"/recordings/{public_id}/delete", data={"csrf": csrf(page), "back": "status=completed"})
    assert asked.status_code == 200 and "Delete “Refund: Mr &lt;Smith&gt;”?" in asked.text
    assert 'id="confirm-delete"' in asked.text
    assert f'href="/recordings/{public_id}?from=status%3Dcompleted"' in asked.text  # Cancel: the page as it was
    assert (await rest(api, call, public_id)).status_code == 200  # asking deleted nothing

    gone = await boss.post(f"/recordings/{public_id}/delete", data={"csrf": csrf(asked), "back": "status=completed",
                                                                   "confirmed": "yes"})
    assert gone.status_code == 303 and gone.headers["location"] == "/recordings?status=completed&deleted=1"
    listed = await boss.get(gone.headers["location"])
    assert "The recording was deleted" in listed.text and public_id not in listed.text
    assert (await rest(api, call, public_id)).status_code == 404
    assert (await boss.get(f"/recordings/{public_id}")).status_code == 404


async def test_an_admin_removes_a_share_and_the_page_keeps_the_lists_filters(boss, call, support, api) -> None:
    public_id = await call(LINES, support)
    shared = await boss.post(f"/recordings/{public_id}/share",
                             data={"csrf": csrf(await boss.get(f"/recordings/{public_id}")), "to": MEMBER,
                                   "back": "status=completed&page=2"})
    location = urlsplit(shared.headers["location"])
    assert parse_qs(location.query)["from"] == ["status=completed&page=2"]
    page = await boss.get(shared.headers["location"])
    assert unescape(re.search(r'<p class="back"><a href="([^"]+)"', page.text)[1]) == \
        "/recordings?status=completed&page=2"
    [share] = (await rest(api, call, public_id, "/shares")).json()["data"]
    removed = await follow(boss, await post(boss, public_id, "unshare", share_id=str(share["id"])))
    assert notice(removed) == "The share was removed."
    assert (await rest(api, call, public_id, "/shares")).json()["data"] == []
    missing = await post(boss, public_id, "unshare", share_id=str(share["id"]))
    assert missing.status_code == 404


async def _jobs(runtime, public_id: str) -> list[tuple[str, str]]:
    def read(session):
        return [tuple(row) for row in session.execute(
            select(Job.kind, Job.state).join(Recording, Recording.id == Job.recording_id)
            .where(Recording.public_id == public_id, Job.state.in_(("queued", "running"))))]
    return await runtime.ctx.catalog.read(read)
