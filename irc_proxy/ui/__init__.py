"""The web console at /ui: server-rendered pages over the handling layer."""
