"""The documentation site: generated pages cover the public API, every CLI command and
every notebook, the site check catches what is missing, and (slow) the real build.

The build test runs ``sphinx-build -W`` as ``scripts/docs.sh`` does (notebooks executed),
into ``tmp_path``; it needs the ``docs`` extra and is skipped without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import dgl_chunked

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "_ext"))

import dglc_docs  # noqa: E402


def test_api_names_are_all_public_names() -> None:
    assert set(dglc_docs.api_names()) == set(dgl_chunked.__all__) - {"__version__"}


def test_cli_commands_are_the_click_group_commands() -> None:
    from dgl_chunked.cli import cli

    commands = dglc_docs.cli_commands()
    assert set(commands) == set(cli.commands)
    assert {"chunk", "dispatch", "partition", "run", "verify"} <= set(commands)


def test_generate_writes_one_page_per_name_command_and_notebook(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "removed_name.rst").write_text("stale")  # a name that no longer exists
    dglc_docs.generate(tmp_path)

    api = {p.stem for p in (tmp_path / "api").glob("*.rst")}
    assert api == set(dglc_docs.api_names()) | {"index"}
    assert ".. autofunction:: dispatch" in (tmp_path / "api" / "dispatch.rst").read_text()
    assert ".. autoclass:: DispatchOptions" in (tmp_path / "api" / "DispatchOptions.rst").read_text()
    assert ".. automodule:: dgl_chunked.errors" in (tmp_path / "api" / "errors.rst").read_text()
    index = (tmp_path / "api" / "index.rst").read_text()
    assert all(f"   {name}\n" in index for name in dglc_docs.api_names())

    cli = {p.stem for p in (tmp_path / "cli").glob("*.rst")}
    assert cli == set(dglc_docs.cli_commands()) | {"index"}
    page = (tmp_path / "cli" / "parmetis-export.rst").read_text()
    assert ".. click:: dglc_docs_cli:parmetis_export" in page
    assert ":prog: dgl-chunked parmetis-export" in page

    import dglc_docs_cli

    for name, command in dglc_docs.cli_commands().items():
        assert getattr(dglc_docs_cli, name.replace("-", "_")) is command
    with pytest.raises(AttributeError, match="no-such"):
        dglc_docs_cli.no_such  # noqa: B018

    spec = (tmp_path / "chunk_spec.rst").read_text()
    assert "self_loop_fill" in spec and "Spec format" in spec
    notebooks = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    assert notebooks and sorted(p.name for p in (tmp_path / "notebooks").iterdir()) == notebooks


def _fake_site(root: Path, *, notebook_html: str) -> None:
    for name in dglc_docs.api_names():
        page = root / "_generated" / "api" / f"{name}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f'<dt id="dgl_chunked.{name}"></dt><span id="module-dgl_chunked.{name}"></span>')
    for name in dglc_docs.cli_commands():
        page = root / "_generated" / "cli" / f"{name}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<pre>dgl-chunked {name} [OPTIONS]</pre>")
    for nb in (REPO / "notebooks").glob("*.ipynb"):
        page = root / "_generated" / "notebooks" / f"{nb.stem}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(notebook_html)


def test_site_check_passes_a_complete_site(tmp_path: Path) -> None:
    _fake_site(tmp_path, notebook_html="<table></table><img src='x.png'>")
    assert dglc_docs.site_problems(tmp_path) == []


def test_site_check_names_every_missing_piece(tmp_path: Path) -> None:
    _fake_site(tmp_path, notebook_html="<p>code only</p>")
    (tmp_path / "_generated" / "api" / "dispatch.html").unlink()
    (tmp_path / "_generated" / "api" / "run.html").write_text("<p>no entry</p>")
    (tmp_path / "_generated" / "cli" / "verify.html").unlink()
    problems = dglc_docs.site_problems(tmp_path)
    assert any("api/dispatch.html: missing" in p for p in problems)
    assert any("api/run.html: has no rendered entry for dgl_chunked.run" in p for p in problems)
    assert any("cli/verify.html: missing (CLI page of dgl-chunked verify)" in p for p in problems)
    notebooks = list((REPO / "notebooks").glob("*.ipynb"))
    assert sum("no plot (<img>)" in p for p in problems) == len(notebooks)
    assert sum("no table (<table>)" in p for p in problems) == len(notebooks)
    assert len(problems) == 3 + 2 * len(notebooks)


@pytest.mark.slow
def test_site_builds_without_warnings_and_is_complete(tmp_path: Path) -> None:
    """The site built here, or the one ``$DGLC_BUILT_SITE`` names: ``.ci/run`` builds it
    with ``scripts/docs.sh`` (the same ``sphinx-build -W``) before the suite, and the
    site is not built twice."""
    html = Path(os.environ.get("DGLC_BUILT_SITE") or _built_site(tmp_path))
    assert dglc_docs.site_problems(html) == []
    # The pages a reader starts from exist and link the generated references.
    index = (html / "index.html").read_text()
    assert "_generated/api/index.html" in index and "_generated/cli/index.html" in index
    assert (html / "_images" / "benchmark_scaling.png").is_file()


def _built_site(tmp_path: Path) -> Path:
    """``docs/`` built into ``tmp_path / "html"`` as ``scripts/docs.sh`` builds it
    (warnings as errors, notebooks executed)."""
    for module in ("sphinx", "myst_nb", "sphinx_click", "numpydoc", "furo"):
        pytest.importorskip(module, reason="needs the docs extra: pip install -e .[docs]")
    env = {k: v for k, v in os.environ.items() if k not in ("DGL_CHUNKED_DATA", "MPLBACKEND")}
    env["TMPDIR"] = str(tmp_path)  # the notebooks' scratch folders
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    html = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    cmd += ["-d", str(tmp_path / "doctrees"), str(REPO / "docs"), str(html)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
    return html
