"""Tables below the catalog: the table service, commits and their limits, metadata files, format v3, property
runs, server-side rebase of concurrent appends, and retries."""
