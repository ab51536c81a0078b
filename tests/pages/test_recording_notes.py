"""The recording page's notes, in process on SQLite and PostgreSQL: a member writes several (each shown with its
author and time, and through REST too), deletes their own; an admin deletes anyone's; someone else's note forged
anyway is refused (403); without the form's token nothing is done (400); another account's recording is 404 to both
actions; a blank or too long note is refused beside the form (422), its text kept in it."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

from callscope.services import accounts, projects
from tests.pages.conftest import admin, browser_of
from tests.pages.test_recording_actions import LINES, csrf, follow, post, problem, rest

ADMIN, COLLEAGUE = "ada@example.com", "cy@example.com"


@pytest.fixture
async def boss(runtime, member) -> httpx.AsyncClient:
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada Admin", "admin")
    http = await browser_of(runtime, ADMIN)
    yield http
    await http.aclose()


@pytest.fixture
async def colleague(runtime, member) -> httpx.AsyncClient:
    await accounts.add_member(runtime.ctx, "default", COLLEAGUE, "Cy")
    http = await browser_of(runtime, COLLEAGUE)
    yield http
    await http.aclose()


def shown(page: httpx.Response) -> list[tuple[str, str, bool]]:
    """Each note on the page: its text, its byline and whether it has a Delete button."""
    items = re.findall(r'<li id="note-\d+"><p class="note-text">(.*?)</p>\s*'
                       r'<div class="note-by"><span class="muted">(.*?), <time(.*?)</li>', page.text, re.S)
    return [(unescape(text), unescape(by), "delete-note" in rest_) for text, by, rest_ in items]


def notes_notice(page: httpx.Response) -> str | None:
    found = re.search(r'id="notes-notice">([^<]+)<', page.text)
    return found[1] if found else None


def note_ids(page: httpx.Response) -> list[int]:
    return [int(i) for i in re.findall(r'<li id="note-(\d+)">', page.text)]


async def test_members_write_notes_and_delete_their_own_an_admin_anyones(member, colleague, boss, call, support, api):
    public_id = await call(LINES, support)
    page = await follow(member, await post(member, public_id, "note", text="Promised a callback.\nMonday <b>10</b>"))
    assert notes_notice(page) == "Note added."
    await follow(colleague, await post(colleague, public_id, "note", text="Refund issued."))
    await api.post(f"/recordings/{public_id}/notes", json={"text": "From the CRM."}, headers=call.keys["default"])

    mine = await member.get(f"/recordings/{public_id}")
    assert [(t, b.split(" ")[0], d) for t, b, d in shown(mine)] == [
        ("Promised a callback.\nMonday <b>10</b>", "Ana", True),  # the text escaped, its lines kept
        ("Refund issued.", "Cy", False), ("From the CRM.", "pages", False)]
    assert "pages (API key)" in shown(mine)[2][1]
    first, second, third = note_ids(mine)
    forged = await post(member, public_id, "delete-note", note_id=str(second))
    assert forged.status_code == 403 and "Only its author or an admin of the account may delete a note" in unescape(
        forged.text)
    page = await follow(member, await post(member, public_id, "delete-note", note_id=str(first)))
    assert notes_notice(page) == "The note was deleted." and note_ids(page) == [second, third]

    as_admin = await boss.get(f"/recordings/{public_id}")
    assert [d for _, _, d in shown(as_admin)] == [True, True]
    await follow(boss, await post(boss, public_id, "delete-note", note_id=str(second)))
    listed = (await rest(api, call, public_id, "/notes")).json()["data"]
    assert [n["text"] for n in listed] == ["From the CRM."]
    missing = await post(boss, public_id, "delete-note", note_id=str(first))
    assert missing.status_code == 404


@pytest.mark.parametrize(("text", "why"), [
    ("   ", "text must not be empty"),
    ("x" * 4001, "text is too long (maximum is 4000 characters)"),
])
async def test_a_blank_or_too_long_note_is_refused_beside_the_form(member, call, support, api, text, why):
    public_id = await call(LINES, support)
    resp = await post(member, public_id, "note", text=text, back="status=completed")
    assert resp.status_code == 422 and problem(resp) == why
    assert 'aria-describedby="action-problem"' in resp.text
    assert '<p class="back"><a href="/recordings?status=completed">' in resp.text  # the list's filters kept
    assert f'aria-describedby="action-problem">{text}</textarea>' in resp.text  # what was typed is not lost
    assert (await rest(api, call, public_id, "/notes")).json()["data"] == []


async def test_without_the_forms_token_no_note_is_written_or_deleted(member, call, support, api):
    public_id = await call(LINES, support)
    await follow(member, await post(member, public_id, "note", text="Kept."))
    [note] = (await rest(api, call, public_id, "/notes")).json()["data"]
    for action, fields in (("note", {"text": "Forged"}), ("delete-note", {"note_id": str(note["id"])})):
        resp = await member.post(f"/recordings/{public_id}/{action}", data={"csrf": "forged", **fields})
        assert resp.status_code == 400 and "This form has expired" in resp.text, action
    assert [n["text"] for n in (await rest(api, call, public_id, "/notes")).json()["data"]] == ["Kept."]


async def test_another_accounts_recording_is_not_found_to_the_note_actions(runtime, member, call, api):
    other = await projects.create_project(runtime.ctx, admin("other"), {"name": "Theirs", "language": "en"})
    theirs = await call(LINES, other.status.id, account="other")
    await api.post(f"/recordings/{theirs}/notes", json={"text": "Theirs."}, headers=call.keys["other"])
    own = await member.get("/recordings")
    for action, fields in (("note", {"text": "Mine"}), ("delete-note", {"note_id": "1"})):
        resp = await member.post(f"/recordings/{theirs}/{action}", data={"csrf": csrf(own), **fields})
        assert resp.status_code == 404 and "<html" in resp.text, action
    listed = (await api.get(f"/recordings/{theirs}/notes", headers=call.keys["other"])).json()["data"]
    assert [n["text"] for n in listed] == ["Theirs."]


ODD = ["%00", "a%00b", "%1B", "%FF", "%C3%28", "%ED%A0%80", "%0D%0A", "x" * 5000, "99999999999999999999999", "-1",
       "1e3", "%F0%9F%98%80"]


async def test_no_note_field_answers_5xx(member, call, support):
    public_id = await call(LINES, support)
    token = csrf(await member.get(f"/recordings/{public_id}"))
    for value in ODD:
        for action, field in (("note", "text"), ("delete-note", "note_id"), ("note", "back"), ("delete-note", "back")):
            other = {"note": "text=Fine", "delete-note": "note_id=1"}[action] if field == "back" else ""
            body = f"csrf={token}&{field}={value}" + (f"&{other}" if other else "")
            resp = await member.post(f"/recordings/{public_id}/{action}", content=body.encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
            assert resp.status_code < 500 and ("<html" in resp.text or resp.status_code == 303), (action, field,
                                                                                                  value[:20])
