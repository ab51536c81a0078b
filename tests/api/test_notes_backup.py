"""A recording's notes are kept by `callscope backup` and `restore` (the backup reflects the catalog's tables, notes'
among them): written through REST, backed up from a running service, restored into an empty data directory."""

from __future__ import annotations

from sqlalchemy import select

from callscope.backup.restore import restore_backup
from callscope.backup.take import take_backup
from callscope.catalog.db import Catalog
from callscope.catalog.tables import RecordingNote
from callscope.config import Settings
from tests.audio_samples import make_audio


async def test_notes_survive_a_backup_and_restore(client, admin, create_project, settings, tmp_path):
    project = await create_project()
    path = make_audio(tmp_path / "c.wav", "wav", seconds=1.0)
    recording = (await client.post("/recordings", files={"file": ("c.wav", path.read_bytes())},
                                   data={"project_id": str(project["id"])}, headers=admin)).json()["data"]
    for text in ("Promised a callback.", "Refund issued."):
        resp = await client.post(f"/recordings/{recording['public_id']}/notes", json={"text": text}, headers=admin)
        assert resp.status_code == 201
    archive = tmp_path / "backup.tar"
    await take_backup(settings, archive)

    restored = Settings(data_dir=tmp_path / "restored", log_level="WARNING")
    await restore_backup(restored, archive)
    catalog = Catalog(restored.catalog_url)
    try:
        with catalog.session() as session:
            notes = [(n.text, n.author_type) for n in session.scalars(select(RecordingNote).order_by(RecordingNote.id))]
    finally:
        catalog.dispose()
    assert notes == [("Promised a callback.", "api_key"), ("Refund issued.", "api_key")]
