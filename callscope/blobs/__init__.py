"""Blob storage of uploaded call audio: the filesystem (embedded mode) or S3-compatible object storage.

See callscope.blobs.base for the interface, callscope.blobs.factory.build_blob_store for the configured
store, and callscope.blobs.signing for the URLs the embedded server signs for the filesystem store.
"""

from callscope.blobs.base import (
    BlobStore,
    BlobStream,
    BlobWriter,
    ByteRange,
    RangeNotSatisfiable,
    content_disposition,
    validate_key,
    validate_prefix,
)
from callscope.blobs.factory import build_blob_store

__all__ = [
    "BlobStore",
    "BlobStream",
    "BlobWriter",
    "ByteRange",
    "RangeNotSatisfiable",
    "build_blob_store",
    "content_disposition",
    "validate_key",
    "validate_prefix",
]
