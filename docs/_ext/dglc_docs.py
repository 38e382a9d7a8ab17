"""Sphinx glue for the dgl_chunked site: pages generated from the code at build time.

On ``config-inited`` this writes ``docs/_generated/`` (git-ignored):

- ``api/index.rst`` and one page per name in ``dgl_chunked.__all__``;
- ``cli/index.rst`` and one page per command of the ``dgl-chunked`` click group;
- ``chunk_spec.rst``: the module docstring of :mod:`dgl_chunked.chunk`;
- ``notebooks/*.ipynb``: copies of ``notebooks/*.ipynb`` (executed by myst-nb).

Nothing is listed by hand, so names and commands added later appear without
editing the docs; :func:`site_problems` checks a built site for exactly that.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
REPO = DOCS.parent
GENERATED = DOCS / "_generated"

__all__ = ["api_names", "cli_commands", "generate", "setup", "site_problems"]


def api_names() -> list[str]:
    """Every public name of ``dgl_chunked`` (``__all__``) that gets an API page."""
    import dgl_chunked

    return [n for n in dgl_chunked.__all__ if n != "__version__"]


def cli_commands() -> dict[str, Any]:
    """Every command of the ``dgl-chunked`` group, by name (nested groups stay groups)."""
    import click

    from dgl_chunked.cli import cli

    ctx = click.Context(cli, info_name="dgl-chunked")
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def _api_page(name: str) -> str:
    import dgl_chunked

    obj = getattr(dgl_chunked, name)
    title = f"{name}\n{'=' * len(name)}\n\n"
    if isinstance(obj, types.ModuleType):
        return f"{title}.. automodule:: {obj.__name__}\n   :members:\n   :show-inheritance:\n"
    head = f"{title}.. currentmodule:: dgl_chunked\n\n"
    if inspect.isclass(obj):
        return f"{head}.. autoclass:: {name}\n   :members:\n   :show-inheritance:\n"
    return f"{head}.. autofunction:: {name}\n"


def _api_index(names: list[str]) -> str:
    import dgl_chunked

    lines = [
        "API reference",
        "=============",
        "",
        "Every public name of ``dgl_chunked`` (its ``__all__``), generated from the docstrings.",
        f"This is version {dgl_chunked.__version__}. Import the package as ``import dgl_chunked as dglc``.",
        "",
        ".. currentmodule:: dgl_chunked",
        "",
        ".. autosummary::",
        "",
    ]
    lines += [f"   {n}" for n in names]
    lines += ["", ".. toctree::", "   :hidden:", ""] + [f"   {n}" for n in names]
    return "\n".join(lines) + "\n"


def _cli_page(name: str) -> str:
    # sphinx-click's own section ("dgl-chunked NAME") is the page title.
    return f".. click:: dglc_docs_cli:{name.replace('-', '_')}\n   :prog: dgl-chunked {name}\n   :nested: full\n"


def _cli_index(names: list[str]) -> str:
    lines = [
        "CLI reference",
        "=============",
        "",
        "Every command of ``dgl-chunked``, generated from its click definitions (the same text as ``--help``).",
        "Errors in the input print one ``error:`` line naming the file, key or row, and exit with status 1.",
        "",
        ".. click:: dgl_chunked.cli:cli",
        "   :prog: dgl-chunked",
        "   :nested: none",
        "",
        "One page per command:",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    lines += [f"   {n}" for n in names]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Write only when the text changes, so Sphinx does not re-read unchanged pages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _sync_dir(folder: Path, wanted: set[str]) -> None:
    """Remove generated pages whose name or command no longer exists."""
    for old in folder.glob("*"):
        if old.name not in wanted:
            old.unlink()


def generate(out_dir: str | Path = GENERATED) -> None:
    """Write every generated page under ``out_dir`` (the build uses ``docs/_generated/``).

    Parameters
    ----------
    out_dir
        Folder to write ``api/``, ``cli/``, ``notebooks/`` and ``chunk_spec.rst`` into.
    """
    import dgl_chunked.chunk

    out = Path(out_dir)
    names = api_names()
    for name in names:
        _write(out / "api" / f"{name}.rst", _api_page(name))
    _write(out / "api" / "index.rst", _api_index(names))
    _sync_dir(out / "api", {f"{n}.rst" for n in names} | {"index.rst"})

    commands = sorted(cli_commands())
    for name in commands:
        _write(out / "cli" / f"{name}.rst", _cli_page(name))
    _write(out / "cli" / "index.rst", _cli_index(commands))
    _sync_dir(out / "cli", {f"{n}.rst" for n in commands} | {"index.rst"})

    title = "The chunk spec reference"
    _write(out / "chunk_spec.rst", f"{title}\n{'=' * len(title)}\n\n{inspect.getdoc(dgl_chunked.chunk)}\n")

    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    for nb in notebooks:
        _write(out / "notebooks" / nb.name, nb.read_text())
    _sync_dir(out / "notebooks", {nb.name for nb in notebooks})


def site_problems(html_dir: str | Path) -> list[str]:
    """What a built HTML site lacks: API and CLI pages, notebook images and tables.

    Parameters
    ----------
    html_dir
        The ``sphinx-build -b html`` output folder.

    Returns
    -------
    list of str
        One line per problem; empty when every name in ``dgl_chunked.__all__`` and every
        ``dgl-chunked`` command has a rendered page and every notebook page shows at
        least one ``<img>`` and one ``<table>``.
    """
    html = Path(html_dir)
    problems = []
    for name in api_names():
        page = html / "_generated" / "api" / f"{name}.html"
        if not page.is_file():
            problems.append(f"{page}: missing (API page of dgl_chunked.{name})")
        elif not {f'id="dgl_chunked.{name}"', f'id="module-dgl_chunked.{name}"'} & _ids(page.read_text()):
            problems.append(f"{page}: has no rendered entry for dgl_chunked.{name}")
    for name in cli_commands():
        page = html / "_generated" / "cli" / f"{name}.html"
        if not page.is_file():
            problems.append(f"{page}: missing (CLI page of dgl-chunked {name})")
        elif f"dgl-chunked {name}" not in page.read_text():
            problems.append(f"{page}: does not show the usage of dgl-chunked {name}")
    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    if not notebooks:
        problems.append(f"{REPO / 'notebooks'}: no notebooks found")
    for nb in notebooks:
        page = html / "_generated" / "notebooks" / f"{nb.stem}.html"
        text = page.read_text() if page.is_file() else ""
        if not text:
            problems.append(f"{page}: missing (page of notebooks/{nb.name})")
            continue
        if "<img" not in text:
            problems.append(f"{page}: no plot (<img>) among the notebook outputs")
        if "<table" not in text:
            problems.append(f"{page}: no table (<table>) among the notebook outputs")
    return problems


def _ids(html: str) -> set[str]:
    return set(re.findall(r'id="[^"]*"', html))


def _on_config_inited(app: Any, config: Any) -> None:
    generate()


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point: generate the pages before the sources are read."""
    sys.path.insert(0, str(Path(__file__).parent))
    app.connect("config-inited", _on_config_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # python docs/_ext/dglc_docs.py docs/_build/html
    found = site_problems(sys.argv[1])
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    if found:
        sys.exit(1)
    print(
        f"site complete: {len(api_names())} API pages, {len(cli_commands())} CLI pages, notebooks with plots and tables"
    )
