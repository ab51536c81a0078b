"""Recordings against real back ends: the S3 blob store (moto's S3 server in a child process), a PostgreSQL
catalog, the statement count of the list, the orphan-blob sweep, and share emails through a real SMTP
server (aiosmtpd)."""

from __future__ import annotations

import asyncio
import email
import os
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.policy import default as default_policy
from pathlib import Path

import boto3
import httpx
import pytest
from botocore.config import Config
from sqlalchemy import delete, event, select

from callscope.catalog import recordings as recording_rows
from callscope.catalog.recordings import Scope
from callscope.catalog.tables import Recording, RecordingTag
from callscope.identifiers import uuid7
from callscope.services import accounts
from callscope.services.recordings import audio_key
from callscope.workers import loops
from tests.api.conftest import blob_files, count_rows
from tests.audio_samples import make_large_wav
from tests.live import free_port

ACCOUNT = "default"


# ----- shared helpers ---------------------------------------------------------------------------------

# ----- S3 (moto) --------------------------------------------------------------------------------------

@pytest.fixture
def s3(s3_endpoint):
    client = boto3.session.Session().client(
        "s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id="testing",
        aws_secret_access_key="testing", config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    yield client
    client.close()


@pytest.fixture
def bucket(s3) -> str:
    name = f"rec-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def object_keys(s3, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def multipart_uploads(s3, bucket: str) -> list[str]:
    return [u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


def spool_files(settings) -> list[Path]:
    spool = settings.blob_spool_dir or settings.data_dir / "spool"
    return [p for p in spool.rglob("*") if p.is_file()] if spool.exists() else []


class TestS3BlobStore:
    @pytest.fixture
    def settings_overrides(self, s3_endpoint, bucket) -> dict:
        return {"blob_store": "s3", "s3_bucket": bucket, "s3_endpoint_url": s3_endpoint, "s3_region": "us-east-1",
                "s3_access_key_id": "testing", "s3_secret_access_key": "testing", "s3_addressing_style": "path",
                "s3_part_size_mb": 5}

    async def test_upload_puts_the_audio_in_the_bucket_under_the_recordings_key(self, upload, wav, project, s3,
                                                                                 bucket, settings):
        resp = await upload(wav, project_id=project["id"])
        assert resp.status_code == 201, resp.text
        key = audio_key(ACCOUNT, resp.json()["data"]["public_id"])
        assert object_keys(s3, bucket) == [key]
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == wav.read_bytes()
        assert multipart_uploads(s3, bucket) == [] and spool_files(settings) == []
        assert blob_files(settings) == []  # nothing went to the filesystem store

    async def test_audio_url_is_a_presigned_s3_url_serving_the_original_bytes(self, client, admin, upload, wav,
                                                                               project, s3_endpoint, bucket):
        rec = (await upload(wav, project_id=project["id"])).json()["data"]
        resp = await client.get(f"/recordings/{rec['public_id']}/audio_url", headers=admin)
        assert resp.status_code == 200, resp.text
        url = resp.json()["data"]["url"]
        assert url.startswith(f"{s3_endpoint}/{bucket}/{audio_key(ACCOUNT, rec['public_id'])}?")
        assert "X-Amz-Signature=" in url and "X-Amz-Expires=3600" in url
        async with httpx.AsyncClient() as http:
            audio = await http.get(url)
        assert audio.status_code == 200 and audio.content == wav.read_bytes()
        assert audio.headers["content-type"] == "audio/wav"

    async def test_delete_removes_the_object_and_the_presigned_url_stops_working(self, client, admin, upload, wav,
                                                                                  project, s3, bucket):
        rec = (await upload(wav, project_id=project["id"])).json()["data"]
        url = (await client.get(f"/recordings/{rec['public_id']}/audio_url", headers=admin)).json()["data"]["url"]
        async with httpx.AsyncClient() as http:
            assert (await http.get(url)).status_code == 200
            assert (await client.delete(f"/recordings/{rec['public_id']}", headers=admin)).status_code == 204
            assert object_keys(s3, bucket) == []
            gone = await http.get(url)
        # S3 answers 404 NoSuchKey (403 without s3:ListBucket); moto answers a missing key with response-*
        # parameters 403 SignatureDoesNotMatch. Either way the audio is no longer served.
        assert gone.status_code in (403, 404) and gone.content != wav.read_bytes()

    async def test_oversize_upload_leaves_no_object_and_no_multipart_upload(self, upload, project, tmp_path, s3,
                                                                             bucket, runtime, settings, monkeypatch):
        # Past one 5 MiB part the writer has started a multipart upload; the 8 MB limit stops it mid-way.
        monkeypatch.setitem(settings.upload_limits_mb, "wav", 8)
        big = make_large_wav(tmp_path / "big.wav", 12_000_000)
        resp = await upload(big, project_id=project["id"])
        assert resp.status_code == 413, resp.text
        assert object_keys(s3, bucket) == [] and multipart_uploads(s3, bucket) == []
        assert spool_files(settings) == [] and count_rows(runtime, Recording) == 0

    async def test_bad_upload_leaves_no_object_and_no_multipart_upload(self, upload, project, tmp_path, s3, bucket,
                                                                        runtime, settings):
        bad = tmp_path / "noise.wav"
        bad.write_bytes(os.urandom(6 * 1024 * 1024))  # more than one part, and not audio
        resp = await upload(bad, project_id=project["id"])
        assert resp.status_code == 422, resp.text
        assert object_keys(s3, bucket) == [] and multipart_uploads(s3, bucket) == []
        assert spool_files(settings) == [] and count_rows(runtime, Recording) == 0

    async def test_orphan_sweep_deletes_old_orphans_and_keeps_recordings(self, upload, wav, project, s3, bucket,
                                                                         runtime, monkeypatch):
        rec = (await upload(wav, project_id=project["id"])).json()["data"]
        orphan = audio_key(ACCOUNT, str(uuid7()))
        writer = runtime.ctx.blobs.writer(orphan)
        await writer.write(b"left behind by a crash")
        await writer.commit()
        monkeypatch.setattr(loops, "ORPHAN_MIN_AGE", timedelta(seconds=-60))  # everything counts as old
        assert await loops.sweep_orphan_blobs(runtime.ctx) == 1
        assert object_keys(s3, bucket) == [audio_key(ACCOUNT, rec["public_id"])]


# ----- PostgreSQL catalog -----------------------------------------------------------------------------

@pytest.mark.postgres
class TestPostgresCatalog:
    @pytest.fixture
    def settings_overrides(self, emptied_postgres_url) -> dict:
        return {"database_url": emptied_postgres_url}

    async def test_racing_uploads_of_one_external_id_make_one_recording(self, upload, wav, project, runtime,
                                                                        settings):
        assert runtime.catalog.dialect == "postgresql"
        responses = await asyncio.gather(*(upload(wav, project_id=project["id"], external_id="race")
                                           for _ in range(5)))
        assert sorted(r.status_code for r in responses) == [200, 200, 200, 200, 201], [r.text for r in responses]
        assert len({r.json()["data"]["public_id"] for r in responses}) == 1
        assert count_rows(runtime, Recording) == 1
        winner = responses[[r.status_code for r in responses].index(201)].json()["data"]
        assert [p.relative_to(settings.data_dir / "blobs").as_posix() for p in blob_files(settings)] == [
            audio_key(ACCOUNT, winner["public_id"])]


    def test_a_change_that_races_a_delete_finds_nothing(self, runtime, project):
        # Found by schemathesis (PATCH /recordings/{id} while another request deleted the recording): the
        # change read the row, the delete committed, the UPDATE matched nothing and the request answered 500.
        seed_recordings(runtime, project["id"], [], 1)
        with runtime.catalog.session() as session:
            public_id = session.scalar(select(Recording.public_id))
        outcome: list = []

        def change() -> None:
            try:
                with runtime.catalog.session(write=True) as session:
                    outcome.append(recording_rows.change(session, Scope(ACCOUNT), public_id, {"name": "x"}, None,
                                                         False, datetime.now(UTC)))
            except Exception as exc:  # noqa: BLE001 - the failure this test is about
                outcome.append(exc)

        with runtime.catalog.session(write=True) as deleting:
            deleting.execute(delete(Recording).where(Recording.public_id == public_id))
            changer = threading.Thread(target=change)
            changer.start()
            time.sleep(0.5)  # the change now waits on the deleted row
        changer.join(10)
        assert outcome == [None]


# ----- list: no N+1 -----------------------------------------------------------------------------------

def seed_recordings(runtime, project_id: int, tag_ids: list[int], n: int) -> None:
    now = datetime.now(UTC)
    with runtime.catalog.session(write=True) as session:
        rows = []
        for i in range(n):
            public_id = str(uuid7())
            created = now - timedelta(seconds=i)
            rows.append(Recording(
                public_id=public_id, account=ACCOUNT, project_id=project_id, name=f"seeded {i}", language="en",
                status="pending", progress=0, duration_ms=1000 + i, audio_format="wav", size_bytes=32_044,
                blob_key=audio_key(ACCOUNT, public_id), dialogues_count=0, goals_evaluated=False, pauses_detected=0,
                processing_restricted=False, conversation_id=public_id, created_at=created, updated_at=created))
        session.add_all(rows)
        session.flush()
        session.add_all(RecordingTag(recording_id=r.id, tag_id=t) for r in rows for t in tag_ids)


async def test_list_runs_the_same_few_statements_whatever_the_page_size(client, admin, project, runtime):
    tags = [(await client.post("/tags", json={"name": n, "project_id": project["id"]}, headers=admin)).json()["data"]
            for n in ("vip", "billing")]
    tag_ids = sorted(t["id"] for t in tags)
    seed_recordings(runtime, project["id"], tag_ids, 60)
    statements: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    async def statements_for(per_page: int) -> int:
        statements.clear()
        resp = await client.get("/recordings", params={"per_page": per_page}, headers=admin)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert len(body["data"]) == per_page and body["meta"]["total_count"] == 60
        assert all(r["tag_ids"] == tag_ids for r in body["data"])
        return len(statements)

    event.listen(runtime.catalog.engine, "before_cursor_execute", count)
    try:
        small, large = await statements_for(5), await statements_for(50)
    finally:
        event.remove(runtime.catalog.engine, "before_cursor_execute", count)
    assert small == large, (small, large)
    assert small <= 4, statements


# ----- orphan sweep (filesystem store) ----------------------------------------------------------------

def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


async def write_blob(runtime, key: str, data: bytes = b"orphaned audio") -> Path:
    writer = runtime.ctx.blobs.writer(key)
    await writer.write(data)
    await writer.commit()
    return runtime.ctx.blobs.path(key)


async def test_sweep_deletes_an_old_blob_no_recording_points_at(runtime, settings):
    path = await write_blob(runtime, audio_key(ACCOUNT, str(uuid7())))
    age(path, loops.ORPHAN_MIN_AGE.total_seconds() + 60)
    assert await loops.sweep_orphan_blobs(runtime.ctx) == 1
    assert not path.exists() and blob_files(settings) == []


async def test_sweep_keeps_a_young_orphan(runtime, settings):
    path = await write_blob(runtime, audio_key(ACCOUNT, str(uuid7())))
    age(path, loops.ORPHAN_MIN_AGE.total_seconds() - 60)
    assert await loops.sweep_orphan_blobs(runtime.ctx) == 0
    assert path.exists()


async def test_sweep_keeps_old_blobs_of_recordings(upload, wav, project, runtime, settings):
    rec = (await upload(wav, project_id=project["id"])).json()["data"]
    kept = runtime.ctx.blobs.path(audio_key(ACCOUNT, rec["public_id"]))
    orphan = await write_blob(runtime, audio_key(ACCOUNT, str(uuid7())))
    for path in (kept, orphan):
        age(path, loops.ORPHAN_MIN_AGE.total_seconds() + 60)
    assert await loops.sweep_orphan_blobs(runtime.ctx) == 1
    assert blob_files(settings) == [kept] and kept.read_bytes() == wav.read_bytes()


async def test_sweep_deletes_old_temp_files_of_interrupted_writes(runtime, settings):
    writer = runtime.ctx.blobs.writer(audio_key(ACCOUNT, str(uuid7())))
    await writer.write(b"half an upload")
    age(writer.local_path, loops.ORPHAN_MIN_AGE.total_seconds() + 60)
    assert await loops.sweep_orphan_blobs(runtime.ctx) == 1
    assert blob_files(settings) == []
    await writer.abort()


# ----- share emails through SMTP ----------------------------------------------------------------------

class Collector:
    """aiosmtpd handler keeping every accepted message."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's hook name
        msg = email.message_from_bytes(envelope.original_content or envelope.content, policy=default_policy)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), msg))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp_server() -> Iterator[tuple[Collector, int]]:
    aiosmtpd = pytest.importorskip("aiosmtpd.controller")
    handler = Collector()
    controller = aiosmtpd.Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=5)
    controller.start()
    try:
        yield handler, controller.port
    finally:
        controller.stop()


@pytest.fixture
async def member(runtime) -> str:
    await accounts.add_member(runtime.ctx, ACCOUNT, "ann@example.com", "Ann Lee")
    return "ann@example.com"


def text_of(msg: email.message.EmailMessage) -> str:
    return "".join(part.get_content() for part in msg.walk() if part.get_content_type() == "text/plain")


class TestShareEmailOverSmtp:
    @pytest.fixture
    def settings_overrides(self, smtp_server) -> dict:
        return {"smtp_host": "127.0.0.1", "smtp_port": smtp_server[1], "smtp_starttls": False,
                "mail_from": "Callscope <noreply@callscope.example.com>"}

    async def test_share_sends_one_email_to_the_member_with_the_recording_url(self, client, admin, upload, wav,
                                                                             project, member, runtime, settings,
                                                                             smtp_server):
        rec = (await upload(wav, project_id=project["id"])).json()["data"]
        resp = await client.post(f"/recordings/{rec['public_id']}/shares", json={"email": member, "message": "2:10"},
                                 headers=admin)
        assert resp.status_code == 201, resp.text
        assert await runtime.mail.drain(5)
        handler, _ = smtp_server
        assert len(handler.messages) == 1
        sender, recipients, msg = handler.messages[0]
        assert (sender, recipients) == ("noreply@callscope.example.com", [member])
        assert member in msg["To"]
        url = f"{settings.base_url}/recordings/{rec['public_id']}"
        assert resp.json()["data"]["url"] == url
        assert url in text_of(msg) and "2:10" in text_of(msg)
        assert not (settings.data_dir / "outbox").exists()  # sent, not written to the outbox or failed/


class TestShareWithRefusingSmtp:
    @pytest.fixture
    def settings_overrides(self) -> dict:
        return {"smtp_host": "127.0.0.1", "smtp_port": free_port(), "smtp_starttls": False, "smtp_timeout": 5}

    async def test_refused_smtp_neither_fails_nor_slows_the_share(self, client, admin, upload, wav, project,
                                                                 member, runtime, settings):
        runtime.mail.backoff = 0.01  # retries quickly, so the email reaches failed/ within the test
        rec = (await upload(wav, project_id=project["id"])).json()["data"]
        started = time.monotonic()
        resp = await client.post(f"/recordings/{rec['public_id']}/shares", json={"email": member}, headers=admin)
        elapsed = time.monotonic() - started
        assert resp.status_code == 201, resp.text
        assert elapsed < 2.0, elapsed
        assert await runtime.mail.drain(10)
        failed = list((settings.data_dir / "outbox" / "failed").glob("*.eml"))
        assert len(failed) == 1 and member in email.message_from_bytes(failed[0].read_bytes())["To"]
