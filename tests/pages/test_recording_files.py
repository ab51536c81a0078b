"""The recording page's actions beside the transcript, in process on SQLite and PostgreSQL: its downloads (the
transcript as text, SubRip and WebVTT with the speakers named as the page names them, the results as the API's
JSON) for a member of the account only; the goals' tally at the top; and the way back to the list as it was left."""

from __future__ import annotations

import json
import re
from html import unescape

LINES = [("agent", "Thank you for calling, how can I help?", "calm"),
         ("customer", "My bill says <twice> & I want --> a refund", "angry")]


async def test_a_member_downloads_the_transcript_and_results(runtime, member, call, support, api) -> None:
    public_id = await call(LINES, support, name="Billing: call #7")
    page = await member.get(f"/recordings/{public_id}")
    links = re.findall(rf'href="(/recordings/{public_id}/files/[^"]+)" download', page.text)
    assert [link.rsplit("/", 1)[1] for link in links] == ["transcript.txt", "transcript.srt", "transcript.vtt",
                                                           "results.json"]

    text = await member.get(links[0])
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert 'filename="Billing_ call _7 transcript.txt"' in text.headers["content-disposition"]
    assert text.text == ("[00:00:00] Agent: Thank you for calling, how can I help?\n"
                         "[00:00:05] Customer: My bill says <twice> & I want --> a refund\n")
    srt = (await member.get(links[1])).text
    assert srt.startswith("1\n00:00:00,000 --> 00:00:04,500\nAgent: Thank you for calling")
    assert "2\n00:00:05,000 --> 00:00:09,500\nCustomer: My bill" in srt
    vtt = await member.get(links[2])
    assert vtt.headers["content-type"].startswith("text/vtt") and vtt.text.startswith("WEBVTT\n")
    assert "<v Customer>My bill says &lt;twice&gt; &amp; I want --&gt; a refund" in vtt.text  # no cue can break

    results = await member.get(links[3])
    key = {"Authorization": f"Bearer {call.keys['default']['Authorization'].split()[1]}"}
    assert json.loads(results.text) == (await api.get(f"/recordings/{public_id}/results", headers=key)).json()["data"]


async def test_files_are_for_the_accounts_members_and_analysed_calls_only(runtime, member, call, support,
                                                                         pages) -> None:
    theirs = await call(LINES, await _project_of(runtime, "other"), account="other")
    assert (await member.get(f"/recordings/{theirs}/files/transcript.txt")).status_code == 404
    ours = await call(LINES, support)
    assert (await member.get(f"/recordings/{ours}/files/passwd")).status_code == 404
    await member.post("/sign-out", data={"csrf": _csrf(await member.get(f"/recordings/{ours}"))})
    signed_out = await member.get(f"/recordings/{ours}/files/transcript.txt")
    assert signed_out.status_code in (303, 401) and "Agent:" not in signed_out.text


async def test_the_tally_and_the_way_back_to_the_list_as_it_was(member, call, support) -> None:
    public_id = await call(LINES, support, goals={1: True})
    listed = await member.get("/recordings", params={"status": "completed", "page": "1"})
    [link] = re.findall(rf'href="(/recordings/{public_id}\?[^"]+)"', listed.text)
    page = await member.get(unescape(link))
    assert unescape(re.search(r'<p class="back"><a href="([^"]+)"', page.text)[1]) == "/recordings?status=completed"
    assert 'id="tally">1 of 1 goals met<' in page.text
    forged = await member.get(f"/recordings/{public_id}", params={"from": "view=evil&status=nope"})
    assert '<p class="back"><a href="/recordings">' in forged.text


def _csrf(page) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page.text)[1]


async def _project_of(runtime, account: str) -> int:
    from callscope.services import projects
    from tests.pages.conftest import admin

    made = await projects.create_project(runtime.ctx, admin(account), {"name": "Theirs", "language": "en"})
    return made.status.id
