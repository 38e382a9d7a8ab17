"""Every ``dgl-chunked`` command as a module attribute, for sphinx-click's ``module:attr``.

``dglc_docs_cli.parmetis_export`` is the ``parmetis-export`` command, wherever it is defined.
"""

from __future__ import annotations

from typing import Any


def __getattr__(attr: str) -> Any:
    from dglc_docs import cli_commands

    for name, command in cli_commands().items():
        if name.replace("-", "_") == attr:
            return command
    raise AttributeError(f"dgl-chunked has no command {attr.replace('_', '-')!r}")
