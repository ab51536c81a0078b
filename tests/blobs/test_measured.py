"""The object store's failures are counted by operation (callscope_object_storage_errors_total), on S3 (moto's
server) and the filesystem; what a store answers on purpose (a missing blob) is no failure."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from callscope.blobs import build_blob_store
from callscope.config import Settings
from callscope.errors import NotFound


def errors(operation: str) -> float:
    return REGISTRY.get_sample_value("callscope_object_storage_errors_total", {"operation": operation}) or 0


async def test_a_bucket_that_is_gone_counts_each_failed_operation(s3_endpoint, tmp_path) -> None:
    store = build_blob_store(Settings(data_dir=tmp_path, blob_store="s3", s3_bucket="no-such-bucket",
                                      s3_endpoint_url=s3_endpoint, s3_region="us-east-1", s3_access_key_id="testing",
                                      s3_secret_access_key="testing", s3_addressing_style="path"))
    before = {op: errors(op) for op in ("list_keys", "commit", "write")}
    with pytest.raises(Exception):  # noqa: B017 - botocore's NoSuchBucket, whatever its class
        await store.list_keys("accounts/")
    with pytest.raises(Exception):  # noqa: B017
        async with store.writer("accounts/a/x.wav") as writer:
            await writer.write(b"RIFF" * 1024)
            await writer.commit()
    assert errors("list_keys") == before["list_keys"] + 1
    assert errors("commit") + errors("write") == before["commit"] + before["write"] + 1
    store.close()


async def test_a_missing_blob_is_an_answer_not_a_failure(tmp_path) -> None:
    store = build_blob_store(Settings(data_dir=tmp_path))
    before = errors("open")
    with pytest.raises(NotFound):
        await store.open("accounts/a/missing.wav")
    assert await store.size("accounts/a/missing.wav") is None
    assert errors("open") == before
