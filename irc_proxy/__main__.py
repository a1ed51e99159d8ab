"""``python -m irc_proxy`` runs the command line."""

from irc_proxy.cli import main

raise SystemExit(main())
