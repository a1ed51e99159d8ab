"""irc-proxy: an Apache Iceberg REST catalog server and proxy."""

__version__ = "0.1.0"
