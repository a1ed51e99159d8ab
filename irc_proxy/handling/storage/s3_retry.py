"""The S3 retry strategy of client-driven reads, apart from ``storage_reads`` so that importing that module
does not import pyarrow (~0.3 s at start-up): pyiceberg imports this one by name, when it builds an S3 filesystem."""

from __future__ import annotations

from pyarrow.fs import AwsStandardS3RetryStrategy


class TwoAttempts(AwsStandardS3RetryStrategy):  # type: ignore[misc]
    """S3 retry strategy for client-driven reads: one retry, so a dead endpoint costs about two request timeouts.

    pyiceberg instantiates it by name (``s3.retry-strategy-impl``) without arguments.
    """

    def __init__(self) -> None:
        super().__init__(max_attempts=2)
