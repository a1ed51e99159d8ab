"""Catalog operations that know no HTTP: naming, commits, one service per catalog."""
