"""What an Idempotency-Key replay of a table answer reads: the metadata file the answer named.

A stored table answer keeps its ``metadata-location``, not the metadata (up to ``max_metadata_bytes``); a
replay reads that file again through the catalog's bounded metadata reader (its cache first). Metadata
files are immutable, so the rebuilt answer is the one first given while the file exists.
"""

from __future__ import annotations

from irc_proxy.backends.base import Capability
from irc_proxy.errors import CommitStateUnknown, NotFound
from irc_proxy.handling.catalog import Catalog


def rebuildable(catalog: Catalog) -> bool:
    """Whether the catalog's table answers name metadata files this proxy reads (not a federated catalog's)."""
    return catalog.supports(Capability.TABLE_COMMITS)


async def metadata_json(catalog: Catalog, metadata_location: str) -> bytes:
    """The metadata file's JSON as table answers carry it.

    Raises:
        CommitStateUnknown: the file is gone (purged, or deleted after later commits): the request's
            outcome was stored, but its answer can no longer be given; load the table to see its state.
        CatalogError: the file cannot be read now (e.g. ServiceUnavailable): the replay may be retried.
    """
    try:
        return (await catalog.tables.files.load(metadata_location)).json
    except NotFound:
        raise CommitStateUnknown(
            "The request with this Idempotency-Key was applied, but its answer cannot be given again: the "
            "metadata file it named is gone. Load the table to see its current state."
        ) from None
