"""The object store under a catalog's warehouse: allowed locations, bounded reads of metadata files, the
occupancy of table locations, and purging files."""
