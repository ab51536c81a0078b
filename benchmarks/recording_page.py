"""The recording page of a 60-minute call: its weight (HTML + JS + CSS bytes) and its time to interactive in headless
Chromium, measured on a real `callscope serve`.

The call's analysis is synthesized (about 150 words a minute, turns of 1.5 to 12 seconds, pauses, emotions, goals with
evidence, categories, fields) and stored through the real completion path (a claimed job, `outcomes.complete`), so
the page reads it back exactly as it would a real call's. Time to interactive is the moment the page's script has
wired the player and transcript (the `callscope-ready` performance mark), from navigation start; the first load is
cold (no cached CSS/JS), the median of the others warm. The baseline is the JSON the public API serves for the same
call (transcription + results + summary), which a client-side app would download before drawing anything.

    .venv/bin/python -P benchmarks/recording_page.py [--minutes 60] [--runs 5] [--screenshots /tmp]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # tests.live, tests.pages.site, tests.audio_samples

from callscope.analysis import stored  # noqa: E402
from callscope.analysis.result import (  # noqa: E402
    EMOTIONS,
    AnalysisResult,
    CallCharacteristics,
    CategoryResult,
    Evidence,
    ExtractedValue,
    GoalResult,
    IdentifiedSpeaker,
    ModelUsed,
    Pause,
    PauseRules,
    SpeakerTraits,
    TranscriptSegment,
    TranscriptWord,
)
from callscope.catalog import jobs  # noqa: E402
from callscope.catalog import recordings as recording_rows  # noqa: E402
from callscope.config import Settings  # noqa: E402
from callscope.runtime import opened  # noqa: E402
from callscope.workers import outcomes  # noqa: E402
from tests.audio_samples import make_audio  # noqa: E402
from tests.live import start_server  # noqa: E402
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, browser, make_site, sign_in, upload  # noqa: E402

WORDS = ("account billing internet router reset line evening connection technician appointment refund invoice "
         "contract upgrade plan speed outage password email address confirm number thank you please could would "
         "check system again today tomorrow morning afternoon minutes problem issue help sorry understand").split()
PHRASES = ["thank you for calling acme support", "is there anything else i can help with",
           "let me check that for you", "i would like a refund", "please hold for a moment"]


def say(line: str = "") -> None:
    print(line, flush=True)


def synthetic_call(minutes: float, stereo: bool, seed: int = 7) -> AnalysisResult:
    rng = random.Random(seed)
    duration = int(minutes * 60_000)
    roles = ("agent", "customer")
    segments, pauses, t, turn = [], [], 800, 0
    talk = [0, 0]
    words_by = [0, 0]
    while t < duration - 4000:
        speaker = turn % 2
        length = rng.randint(1500, 12000)
        end = min(t + length, duration - 500)
        n = max(2, (end - t) * 150 // 60_000)
        text_words = [rng.choice(WORDS) for _ in range(n)]
        if rng.random() < 0.08:
            text_words[:0] = rng.choice(PHRASES).split()
        step = (end - t) / len(text_words)
        words = [TranscriptWord(start_ms=int(t + i * step), end_ms=int(t + (i + 1) * step) - 20, text=w,
                                probability=round(rng.uniform(0.6, 1), 2)) for i, w in enumerate(text_words)]
        weights = [rng.random() ** 3 for _ in EMOTIONS]
        emotions = {e: round(w / sum(weights), 3) for e, w in zip(EMOTIONS, weights, strict=True)}
        segments.append(TranscriptSegment(id=len(segments), speaker=f"speaker-{speaker + 1}", role=roles[speaker],
                                          channel=speaker if stereo else 0, start_ms=t, end_ms=end,
                                          text=" ".join(text_words).capitalize() + ".", words=words,
                                          emotions=emotions))
        talk[speaker] += end - t
        words_by[speaker] += len(words)
        hold = not any(p.duration_ms > 120_000 for p in pauses) and t > duration // 2  # one hold, too long
        gap = 130_000 if hold else rng.choice([200, 300, 400, 500, 700, 900, 1200, 1600, 2500, 6500])
        if gap >= 1000:
            pauses.append(Pause(start_ms=end, end_ms=end + gap, duration_ms=gap, compliant=gap < 120_000,
                                after_dialogue_id=len(segments) - 1, long=gap >= 5000))
        t, turn = end + gap, turn + 1
    speakers = [IdentifiedSpeaker(label=f"speaker-{i + 1}", role=roles[i], role_confidence=0.9, talk_ms=talk[i],
                                  role_evidence=[], decided_by="channel" if stereo else "content") for i in range(2)]
    traits = [SpeakerTraits(speaker=f"speaker-{i + 1}", channel=i if stereo else 0, talk_time_ms=talk[i],
                            words=words_by[i], words_per_minute=round(words_by[i] / max(talk[i], 1) * 60_000, 1),
                            interruptions=rng.randint(0, 9)) for i in range(2)]

    def evidence(k: int) -> list[Evidence]:
        picked = rng.sample(segments, k)
        return [Evidence(dialogue_id=s.id, start_ms=s.start_ms, quote=" ".join(s.text.split()[:8])) for s in picked]

    goals = [GoalResult(goal_id=i + 1, goal_name=name, met=met, score=score, explanation=why, evidence=evidence(2))
             for i, (name, met, score, why) in enumerate([
                 ("Greeting", True, 0.97, "The agent greeted the customer and named the company."),
                 ("Verify identity", True, 0.81, "The agent confirmed the account number and address."),
                 ("Offer further help", False, 0.22, "The agent ended the call without asking for anything else.")])]
    return AnalysisResult(
        duration_ms=duration, channels=2 if stereo else 1, language="en", speakers=speakers, segments=segments,
        pauses=pauses, pause_rules=PauseRules(),
        characteristics=CallCharacteristics(duration_ms=duration, talk_time_ms=sum(talk),
                                            non_talk_time_ms=duration - sum(talk), speakers=traits),
        goals=goals,
        categories=[CategoryResult(name="Billing", matched=True, score=0.88, evidence=evidence(2)),
                    CategoryResult(name="Cancellation", matched=False, score=0.12, evidence=[])],
        extracted_data=[ExtractedValue(name="account_number", type="string", value="AC-20931", evidence=evidence(1)),
                        ExtractedValue(name="callback_date", type="date", value="2026-12-02", evidence=evidence(1)),
                        ExtractedValue(name="devices", type="number", value=None, evidence=[])],
        summary="The customer reported an internet line that drops every evening. The agent reset the line, "
                "checked the router and booked a technician for the next morning.",
        summary_language="en", models=[ModelUsed(stage="asr", name="synthetic", version="0")], stages=[])


async def complete_all(data_dir: Path, results: dict[str, AnalysisResult]) -> None:
    """Claim the pending jobs and complete each recording with its synthetic result, as the dispatcher would."""
    async with opened(Settings(data_dir=data_dir, log_level="WARNING")) as rt:
        ctx = rt.ctx
        claimed = await ctx.catalog.write(jobs.claim, len(results), "benchmark", 600, ctx.clock(), 3)
        for job in claimed:
            recording = await ctx.catalog.read(recording_rows.by_id, job.recording_id)
            assert await outcomes.complete(ctx, job, stored.completion(results[recording.public_id], recording))


def measure(driver, url: str) -> dict[str, float]:
    driver.get(url)
    return driver.execute_script("""
        const nav = performance.getEntriesByType('navigation')[0];
        const ready = performance.getEntriesByName('callscope-ready')[0];
        return {response: nav.responseEnd, interactive: nav.domInteractive, loaded: nav.loadEventEnd,
                ready: ready ? ready.startTime : null};""")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=5, help="page loads measured (the first is cold)")
    parser.add_argument("--screenshots", type=Path, help="save screenshots of a stereo and a mono call here, and of "
                        "the page opened at a search hit's moment (#t=)")
    args = parser.parse_args(argv)
    if NO_BROWSER:
        sys.exit(NO_BROWSER_REASON)
    tmp = Path(tempfile.mkdtemp(prefix="cs-page-bench-"))
    server = start_server(tmp / "data", dispatcher_enabled="false")
    try:
        site = make_site(server, tmp / "data", [("default", "ana@example.com", "Ana Reviewer")])
        stereo_id = upload(site, make_audio(tmp / "stereo.wav", "wav", seconds=5.0, channels=2), "Line drops (stereo)")
        mono_id = upload(site, make_audio(tmp / "mono.wav", "wav", seconds=5.0), "Refund request (mono)")
        results = {stereo_id: synthetic_call(args.minutes, stereo=True), mono_id: synthetic_call(4, stereo=False)}
        asyncio.run(complete_all(tmp / "data", results))
        client, _ = sign_in(site, "ana@example.com")
        page = f"/recordings/{stereo_id}"
        html = client.get(page, headers={"Accept-Encoding": "identity"}).content
        served = client.get(page, headers={"Accept-Encoding": "gzip"})
        assets = {name: client.get(name).content
                  for name in re.findall(r'(?:src|href)="(/static/[^"]+)"', html.decode())}
        api = [site.api("GET", f"/recordings/{stereo_id}/{part}").content
               for part in ("transcription", "results", "summary")]
        timings = []
        for _ in range(5):
            started = time.perf_counter()
            client.get(page)
            timings.append((time.perf_counter() - started) * 1000)
        result = results[stereo_id]
        say(f"call: {args.minutes:g} min stereo, {len(result.segments)} segments, "
            f"{sum(len(s.words) for s in result.segments)} words, {len(result.pauses)} pauses")
        weight = len(html) + sum(len(b) for b in assets.values())
        wire = served.num_bytes_downloaded + sum(len(b) for b in assets.values())
        say(f"page weight: {weight:,} bytes (HTML {len(html):,} + "
            + " + ".join(f"{n.split('?')[0].rsplit('/', 1)[1]} {len(b):,}" for n, b in assets.items())
            + f"); on the wire {wire:,} bytes (the HTML gzipped: {served.num_bytes_downloaded:,})")
        say(f"baseline: the API's JSON of the same call (transcription + results + summary): "
            f"{sum(map(len, api)):,} bytes (gzip {sum(len(gzip.compress(b)) for b in api):,}), before any app code")
        say(f"server: the page answered in {statistics.median(timings):.0f} ms (median of 5)")

        driver = browser()
        try:
            driver.get(f"{site.url}/static/pages.css")
            driver.add_cookie({"name": "callscope_session", "value": client.cookies["callscope_session"], "path": "/"})
            runs = [measure(driver, f"{site.url}{page}") for _ in range(max(args.runs, 2))]
            cold, warm = runs[0], runs[1:]
            for label, value in (("cold", cold), ("warm median", {k: statistics.median(r[k] for r in warm)
                                                                  for k in cold})):
                say(f"{label}: HTML received {value['response']:.0f} ms, DOM interactive {value['interactive']:.0f} "
                    f"ms, time to interactive (script ready) {value['ready']:.0f} ms, load {value['loaded']:.0f} ms")
            if args.screenshots:
                args.screenshots.mkdir(parents=True, exist_ok=True)
                for name, public_id in (("stereo", stereo_id), ("mono", mono_id)):
                    for width, height, kind in ((1280, 900, "desktop"), (390, 844, "phone")):
                        driver.set_window_size(width, height)
                        driver.get(f"{site.url}/recordings/{public_id}")
                        path = args.screenshots / f"recording-page-{name}-{kind}.png"
                        driver.save_screenshot(str(path))
                        say(f"screenshot: {path}")
                # a search hit's link (the page at its moment: player there, the segment marked and in view)
                [hit] = site.api("GET", "/search", params={"q": "refund", "mode": "keyword", "per_page": 1,
                                                           "project_id": site.project_id}).json()["data"]
                moment = hit["url"].split("/recordings/", 1)[1]
                for width, height, kind in ((1280, 900, "desktop"), (390, 844, "phone")):
                    driver.set_window_size(width, height)
                    driver.get("about:blank")  # a new load each time, not a move to the same page's #t=
                    driver.get(f"{site.url}/recordings/{moment}")
                    path = args.screenshots / f"recording-page-search-hit-{kind}.png"
                    driver.save_screenshot(str(path))
                    say(f"screenshot: {path} (search hit #t={hit['start']:g}: {hit['text'][:40]})")
        finally:
            driver.quit()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
