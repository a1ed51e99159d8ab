"""Catalogs served for others or forwarded to an upstream: serving, forwarding and remote catalogs."""
