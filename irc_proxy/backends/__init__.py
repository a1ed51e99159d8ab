"""Backends store namespaces and table pointers; they know no HTTP (never import Starlette)."""
