"""Catalog operations that know no HTTP: the shared basics (naming, paging, one service per catalog) at the top,
one subpackage per concern below (operations, security, tables, views, storage, federation, vending)."""
