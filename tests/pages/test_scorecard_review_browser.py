"""Review on the recording page in a real headless Chromium against a real `callscope serve`: a reviewer sees the
call's scorecard beside the transcript, plays an answer's evidence (the player seeks to the quote), overrides an
answer with a comment and sees the total change and the answer's history, then marks the call reviewed; Trends
then shows the team's figures, the reviewer's change in the question's agreement.

The form is made through REST and the call analysed with a hand-written result through the worker's own completion,
by a runtime of this process on the server's data directory (the server runs no dispatcher), as
test_recording_actions_browser.py does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from callscope.analysis import stored
from callscope.analysis.result import Evidence
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.config import Settings
from callscope.runtime import opened
from callscope.workers import outcomes
from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, by_css, make_site, shoot, upload, wait_for
from tests.pages.site import browser_sign_in as sign_in
from tests.search.calls import SECONDS, result

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

REVIEWER = "rita@example.com"
LINES = [("agent", "Thank you for calling, my name is Ana.", "calm"),
         ("customer", "I was charged twice on my invoice.", "angry"),
         ("agent", "I am sorry, I will refund the second charge today.", "neutral"),
         ("customer", "Thank you, that is all.", "calm")]
PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en",
                    "goals": [{"id": 1, "name": "Greeting", "description": "The agent gives their name."}],
                    "categories": [{"name": "billing", "description": "Invoices and payments."}]}}
FORM = [{"name": "Opening", "weight": 40, "questions": [
            {"id": "greeting", "text": "Did the agent give their name?", "type": "yes_no", "weight": 100,
             "answer": {"source": "goal", "goal_id": 1}}]},
        {"name": "Handling", "weight": 60, "questions": [
            {"id": "billing", "text": "Was billing discussed?", "type": "yes_no", "weight": 100,
             "answer": {"source": "category", "name": "billing"}}]}]
QUOTE_MS = SECONDS * 2  # the third line's


async def _complete(data_dir: Path, public_id: str) -> None:
    """The call's analysis, its greeting met with a quote of the third line, billing found."""
    analysis = result(LINES, goals={1: True}, categories=("billing",))
    analysis.goals[0].evidence = [Evidence(dialogue_id=2, start_ms=QUOTE_MS, quote="I will refund the second charge")]
    async with opened(Settings(data_dir=data_dir, log_level="WARNING")) as rt:
        ctx = rt.ctx
        [job] = await ctx.catalog.write(jobs.claim, 1, "test", 600, ctx.clock(), 3)
        recording = await ctx.catalog.read(recording_rows.by_id, job.recording_id)
        assert await outcomes.complete(ctx, job, stored.completion(analysis, recording))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("scorecard-review") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        site = make_site(server, data_dir, [], PROJECT)
        server.cli("members", "add", "--email", REVIEWER, "--name", "Rita Reviewer", "--role", "reviewer")
        made = site.api("POST", "/scorecards", json={"name": "Support QA", "project_ids": [site.project_id],
                                                     "sections": FORM})
        assert made.status_code == 201, made.text
        site.form_id = made.json()["data"]["id"]  # type: ignore[attr-defined]
        audio = make_audio(data_dir.parent / "call.wav", "wav", seconds=len(LINES) * SECONDS / 1000)
        site.recording = upload(site, audio, "Charged twice")
        asyncio.run(_complete(data_dir, site.recording))
        yield site
    finally:
        server.stop()


def test_a_reviewer_overrides_an_answer_and_sees_the_total_and_the_history(site, driver):
    page = f"{site.url}/recordings/{site.recording}"
    sign_in(driver, site, REVIEWER, page)
    form = site.form_id
    total = f"#sc-total-{form}"
    assert by_css(driver, total).text == "100%"
    assert by_css(driver, f"#scorecard-{form}").location["x"] > by_css(driver, "#segments").location["x"]

    # the evidence plays its moment
    by_css(driver, f"#sc-{form}-greeting .evidence .quote").click()
    wait_for(driver, lambda d: abs(d.execute_script("return document.getElementById('audio').currentTime")
                                   - QUOTE_MS / 1000) < 1.0, what="the player at the quote")

    # an override with a comment: the total recomputed, the history shown
    answer = f"#sc-{form}-greeting"
    by_css(driver, f"{answer} .sc-override summary").click()
    by_css(driver, f"{answer} select[name=answer] option[value=no]").click()
    by_css(driver, f"{answer} textarea[name=comment]").send_keys("No name given.")
    by_css(driver, f"{answer} .sc-save").click()
    wait_for(driver, lambda d: by_css(d, total).text == "60%", what="the total recomputed")
    assert by_css(driver, "#action-notice").text == "Scorecard saved."
    entry = by_css(driver, f"{answer} .sc-history li").text
    assert entry.startswith(f"{REVIEWER}, ") and "yes → no" in entry and "No name given." in entry
    assert by_css(driver, f"{answer} .sc-value").text == "no"

    by_css(driver, ".sc-mark-reviewed").click()
    wait_for(driver, lambda d: by_css(d, f"#scorecard-{form} .sc-reviewed").text.startswith(
        f"Reviewed by {REVIEWER}"), what="marked reviewed")
    shoot(driver, "scorecard-review")
    [card] = site.api("GET", f"/recordings/{site.recording}/scorecard").json()["data"]
    assert (card["score"], card["reviewed_by"]) == (60.0, REVIEWER)

    # the team's figures on Trends: the reviewer changed the one reviewed greeting (agreement 0 %), kept billing
    driver.get(f"{site.url}/trends")
    assert "0% (1 changed)" in by_css(driver, f"#sc-q-{form}-greeting").text
    assert by_css(driver, f"#sc-q-{form}-billing").text.endswith("1 100%")
    shoot(driver, "trends-scorecards")  # fits a phone's width too
