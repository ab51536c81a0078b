"""The recording page shows a first analysis's transcript as soon as it is final, before the later stages end
(callscope/services/draft_transcripts.py), on SQLite and PostgreSQL: the transcript with its speakers while the page
says the rest follows (no downloads yet), the state its script polls says so, and once the analysis is stored the
draft goes and the finished page stands; another account's member gets 404."""

from __future__ import annotations

from callscope.analysis.stored import completion, draft_document
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.services import accounts, draft_transcripts, keys
from callscope.workers import outcomes
from tests.audio_samples import make_audio
from tests.pages.conftest import browser_of
from tests.search.calls import result

LINES = [("agent", "Thank you for calling, how can I help?", "calm"),
         ("customer", "I want a refund for the second charge.", "angry")]


async def test_the_transcript_shows_before_the_rest_and_goes_when_the_analysis_is_stored(
        runtime, member, api, support, tmp_path) -> None:
    ctx = runtime.ctx
    _, key = await keys.create_key(ctx, "default", "draft", ["read", "write"], None, None, None)
    wav = make_audio(tmp_path / "call.wav", "wav", seconds=2.0)
    resp = await api.post("/recordings", headers={"Authorization": f"Bearer {key}"},
                          files={"file": ("call.wav", wav.read_bytes())}, data={"project_id": str(support)})
    assert resp.status_code == 201, resp.text
    public_id = resp.json()["data"]["public_id"]
    [claimed] = ctx.catalog.change(jobs.claim, 1, "test", 60, ctx.clock(), 3)
    row = ctx.catalog.query(recording_rows.by_id, claimed.recording_id)
    analysis = result(LINES)

    page = await member.get(f"/recordings/{public_id}")  # analysing, nothing to show yet
    assert "Analysing this call" in page.text and "I want a refund" not in page.text
    state = (await member.get(f"/recordings/{public_id}/state")).json()
    assert state["status"] == "processing" and state["transcript_ready"] is False

    await draft_transcripts.store(ctx, row, draft_document(analysis.segments, analysis.speakers))
    state = (await member.get(f"/recordings/{public_id}/state")).json()
    assert state["status"] == "processing" and state["transcript_ready"] is True
    page = await member.get(f"/recordings/{public_id}")
    assert page.status_code == 200 and 'data-draft="true"' in page.text
    assert "Analysing this call" in page.text and "The transcript below is final" in page.text
    assert "I want a refund for the second charge." in page.text and ">Customer<" in page.text
    assert "transcript.srt" not in page.text  # the downloads come with the stored analysis
    assert "No summary for this call." not in page.text and 'aria-label="Analysis"' not in page.text  # still to come

    await accounts.add_member(ctx, "other", "olga@example.com", "Olga", "admin")
    stranger = await browser_of(runtime, "olga@example.com")
    try:
        assert (await stranger.get(f"/recordings/{public_id}")).status_code == 404
        assert (await stranger.get(f"/recordings/{public_id}/state")).status_code == 404
    finally:
        await stranger.aclose()

    assert await outcomes.complete(ctx, claimed, completion(analysis, row))
    assert await draft_transcripts.read(ctx, row) is None
    page = await member.get(f"/recordings/{public_id}")
    assert 'data-draft="true"' not in page.text and "transcript.srt" in page.text
    assert 'aria-label="Analysis"' in page.text
    assert (await member.get(f"/recordings/{public_id}/state")).json()["transcript_ready"] is False
