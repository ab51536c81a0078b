"""One analysed recording, read two ways: the analysis sections of its recording.analyzed event are the bodies GET
/recordings/{id}/transcription and /summary answer, and the goals, categories and extracted data of /results.

A real analysis: a synthetic stereo call (espeak-ng) uploaded through the API, analysed inline by the dispatcher
with the embedded models; a scripted language model writes the summary (the embedded one takes minutes)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from callscope.analysis import stored
from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import ModelUsed
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.stages.asr import transcriber_from_settings
from callscope.api import presenters
from callscope.api.app import create_app
from callscope.api.pages.views import recording_view
from callscope.catalog.tables import Recording, WebhookEvent
from callscope.config import Settings
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import Category, ExtractedField, Goal, Webhook
from callscope.runtime import Runtime
from callscope.services import keys as key_service
from callscope.services import recordings
from callscope.services.context import Principal
from callscope.services.objects import create_with_id
from callscope.workers.dispatch import Dispatcher, InlineExecutor
from tests.analysis import speech

pytestmark = [pytest.mark.timeout(300), pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

API = "http://callscope.test/api/v1/public"
AGENT = "Thank you for calling customer service. Please hold while I look that up for you."
CUSTOMER = "I would like to change the address on my account."
SUMMARY = "The customer asked to change the address on the account."
SECTIONS = ["metadata", "summary", "transcription", "goals", "categories", "extracted_data"]


class Summariser:
    """A language model that only writes the summary: the other stages' questions fail, as a model's may."""

    info = ModelUsed(stage="language-model", name="scripted", version="0")
    context_tokens = 8192

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 256) -> dict:
        if "reason" not in schema["properties"]:  # the summary's brief of a service call (summary.SERVICE_SLOTS)
            raise LanguageModelError("this model only summarises")
        # the same sentence in every slot: the summary keeps it once (summary.distinct)
        return {slot: SUMMARY for slot in schema["properties"]}

    def yes_probabilities(self, head: str, questions: list[str]) -> list[float]:
        return [1.0] * len(questions)  # the claim judge finds its sentence stated


@pytest.fixture
async def runtime(tmp_path: Path):
    settings = Settings(data_dir=tmp_path / "data", log_level="WARNING", store_poll_interval=0.05,
                        analysis_executor="inline", job_retry_base_seconds=0)
    rt = Runtime(settings)
    await rt.start(background=False)
    yield rt
    await rt.stop()


def stereo_call(path: Path) -> Path:
    agent, customer = speech.make_call([0.4, AGENT, 3.6]), speech.make_call([4.0, CUSTOMER, 0.4])
    n = max(len(agent.samples), len(customer.samples))
    return speech.write(path, [speech.pad_to(agent.samples, n), speech.pad_to(customer.samples, n)])


async def analyse(ctx, recording_id: int) -> None:
    pipeline = Pipeline(ctx.settings, transcriber=transcriber_from_settings(ctx.settings), llm=Summariser())
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline))

    def status() -> str:
        with ctx.catalog.session() as session:
            return session.get(Recording, recording_id).status

    while status() not in ("completed", "failed") or dispatcher.running:
        await dispatcher.tick()
        await asyncio.sleep(0.05)


async def test_the_webhook_sections_are_the_rest_read_outs(runtime, tmp_path, monkeypatch) -> None:
    ctx = runtime.ctx
    spec = ProjectSpec(
        name="Support", language="en",
        goals=[Goal(id=1, name="greeting", description="The agent thanks the caller.",
                    phrases=["thank you for calling"])],
        categories=[Category(name="address change", keywords=["address"])],
        fields=[ExtractedField(name="callback_number", type="phone", description="The customer's phone number."),
                ExtractedField(name="topic", type="enum", description="What the call is about.",
                               values=["address", "billing"])],
        webhook=Webhook(url="https://hooks.example.com/callscope", sections=SECTIONS))
    project = await create_with_id(ctx, Project, "default", "support", spec)
    await ctx.store.sync()
    _, key = await key_service.create_key(ctx, "default", "readouts", ["read", "write"], None, None, None)
    app = create_app(ctx, runtime.usage, runtime.limiter)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=API,
                                 headers={"Authorization": f"Bearer {key}"}) as client:
        with stereo_call(tmp_path / "call.wav").open("rb") as audio:
            resp = await client.post("/recordings", files={"file": ("call.wav", audio, "audio/wav")},
                                     data={"project_id": str(project.status.id)})
        assert resp.status_code == 201, resp.text
        public_id = resp.json()["data"]["public_id"]
        with ctx.catalog.session() as session:
            recording_id = session.scalar(select(Recording.id).where(Recording.public_id == public_id))

        await asyncio.wait_for(analyse(ctx, recording_id), 240)

        rest = {name: (await client.get(f"/recordings/{public_id}/{name}")).json()["data"]
                for name in ("results", "transcription", "summary")}
    with ctx.catalog.session() as session:
        [event] = session.scalars(select(WebhookEvent).where(WebhookEvent.recording_id == recording_id)).all()
        data = json.loads(event.payload)["data"]

    assert data["status"] == rest["results"]["status"] == "completed"
    assert data["transcription"] == rest["transcription"]
    assert data["summary"] == rest["summary"]
    for section in ("goals", "categories", "extracted_data"):
        assert data[section] == rest["results"][section]
    # and they hold the analysis: roles on the segments, the goal, the category, the summary
    roles = {s["speaker"]: s["role"] for s in data["transcription"]["segments"]}
    assert roles == {"speaker-1": "agent", "speaker-2": "customer"}
    assert data["goals"][0]["met"] and data["categories"][0]["matched"]
    assert [f["name"] for f in data["extracted_data"]] == ["callback_number", "topic"]
    assert data["summary"]["summary"] == SUMMARY and data["summary"]["language"] == "en"
    assert data["metadata"]["dialogues_count"] == len(data["transcription"]["segments"])

    # the recording page shows the same read-outs, from the stored analysis read and validated once
    reads, read = [], stored.read
    monkeypatch.setattr(presenters.stored, "read", lambda *args: reads.append(args) or read(*args))
    principal = Principal(account="default", key_name="page", key_uid="page", permissions=frozenset({"read"}))
    view = await recording_view(ctx, principal, await recordings.get_recording(ctx, principal, public_id))
    assert len(reads) == 1
    assert view.summary == SUMMARY and len(view.segments) == len(data["transcription"]["segments"])
    assert [g.goal_name for g in view.goals] == [g["goal_name"] for g in data["goals"]]
