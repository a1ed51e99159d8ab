"""Shared test helpers: real proxy processes on real sockets."""
