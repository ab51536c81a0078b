"""Build the configured blob store from Settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from callscope.blobs.base import BlobStore
from callscope.blobs.filesystem import FilesystemBlobStore
from callscope.blobs.measured import MeasuredBlobStore

if TYPE_CHECKING:
    from callscope.config import Settings

MiB = 1024 * 1024


def build_blob_store(settings: Settings) -> BlobStore:
    """The filesystem store under ``<data_dir>/blobs`` or the S3 store, its failures counted (measured.py); creates
    no bucket (S3BlobStore.ensure_bucket)."""
    return MeasuredBlobStore(_built(settings))


def _built(settings: Settings) -> BlobStore:
    if settings.blob_store == "filesystem":
        return FilesystemBlobStore(settings.data_dir / "blobs")
    if settings.blob_store == "s3":
        from callscope.blobs.s3 import S3BlobStore  # boto3 loads only for S3 (start-up time of embedded mode)

        if not settings.s3_bucket:
            raise ValueError("CALLSCOPE_S3_BUCKET is required when CALLSCOPE_BLOB_STORE=s3")
        return S3BlobStore(
            settings.s3_bucket,
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            access_key=settings.s3_access_key_id,
            secret_key=settings.s3_secret_access_key,
            prefix=settings.s3_prefix,
            part_size=settings.s3_part_size_mb * MiB,
            spool_dir=settings.blob_spool_dir or settings.data_dir / "spool",
            addressing_style=settings.s3_addressing_style,
        )
    raise ValueError(f"unknown blob store {settings.blob_store!r}")
