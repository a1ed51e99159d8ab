"""Table maintenance run by the catalog itself: expire snapshots, remove orphan files (``docs/maintenance.md``)."""
