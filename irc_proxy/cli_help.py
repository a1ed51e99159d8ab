"""How every ``irc-proxy`` command is declared: a one-line summary, a description and examples in its ``--help``.

Kept free of imports beyond argparse: building the parser is what ``irc-proxy --help`` costs, so nothing here
(or in the modules that declare commands) may import the server's libraries at module level.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any

CONFIG_HELP = "TOML configuration file (default: $IRC_PROXY_CONFIG, else built-in defaults and IRC_PROXY_* variables)"
NAMESPACE_RULE = (
    "Namespaces are typed as sales.eu, sales:eu or sales%%1Feu: ':' or '%%1F' split levels (then %%XX escapes are "
    "decoded: new%%2Edb is the one level 'new.db'); '.' splits only when there is no ':' and no '%%'."
)
"""The rule ``handling.naming.typed_namespace`` applies (``%%`` because argparse %-formats help texts)."""


def formatter(prog: str) -> argparse.HelpFormatter:
    """Descriptions and examples as written (their line breaks kept), argument help wrapped as usual."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def command(
    commands: Any,
    name: str,
    summary: str,
    description: str,
    examples: Sequence[str],
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """Add sub-command ``name``: ``summary`` in its parent's list, ``description`` and ``examples`` in its help."""
    lines = "\n".join(f"  {example}" for example in examples)
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, 100),
        epilog=f"examples:\n{lines}" if examples else None,
        formatter_class=formatter,
        parents=list(parents),
    )
    return parser


def group(commands: Any, name: str, summary: str, description: str, examples: Sequence[str], dest: str) -> Any:
    """Add command ``name`` whose actions are sub-commands (``irc-proxy trash list``); returns their holder."""
    parser = command(commands, name, summary, description, examples)
    return parser.add_subparsers(dest=dest, required=True, metavar="ACTION")


def config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
