"""build_blob_store: the store the settings ask for."""

from __future__ import annotations

import pytest

from callscope.blobs import BlobStore, build_blob_store
from callscope.blobs.filesystem import FilesystemBlobStore
from callscope.blobs.s3 import S3BlobStore
from callscope.config import Settings


def test_filesystem_is_the_default(tmp_path):
    store = build_blob_store(Settings(data_dir=tmp_path))
    assert isinstance(store.inner, FilesystemBlobStore) and isinstance(store, BlobStore)
    assert store.root == tmp_path / "blobs"


def test_s3(tmp_path):
    settings = Settings(
        data_dir=tmp_path,
        blob_store="s3",
        s3_bucket="audio",
        s3_endpoint_url="http://127.0.0.1:9000",
        s3_region="eu-west-1",
        s3_access_key_id="id",
        s3_secret_access_key="secret",
        s3_prefix="/calls/",
        s3_part_size_mb=16,
        s3_addressing_style="path",
    )
    store = build_blob_store(settings)
    assert isinstance(store.inner, S3BlobStore) and isinstance(store, BlobStore)
    assert (store.bucket, store.prefix, store.part_size) == ("audio", "calls/", 16 * 1024 * 1024)
    assert store.spool_dir == tmp_path / "spool"
    assert store.s3_key("accounts/a/x.mp3") == "calls/accounts/a/x.mp3"
    assert store.client.meta.endpoint_url == "http://127.0.0.1:9000"
    store.close()
    spooled = build_blob_store(settings.model_copy(update={"blob_spool_dir": tmp_path / "elsewhere"}))
    assert spooled.spool_dir == tmp_path / "elsewhere"


def test_s3_needs_a_bucket(tmp_path):
    with pytest.raises(ValueError, match="CALLSCOPE_S3_BUCKET"):
        build_blob_store(Settings(data_dir=tmp_path, blob_store="s3"))


def test_part_size_bounds():
    with pytest.raises(ValueError):
        Settings(s3_part_size_mb=4)
