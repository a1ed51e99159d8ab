"""The operations above the catalog, one module per family (namespaces, tables, table loads, views, trash,
scan planning, management), and what they share: the authorization rules (policy), storage access delegation,
replays, the objects an audit record names, and backfill."""
