"""Execute every notebook in ``notebooks/`` with nbclient (outputs are not kept).

Notebooks are picked up by glob, so new ones are tested automatically. Each runs in
a scratch working directory (also its ``TMPDIR``) with ``DGL_CHUNKED_DATA`` unset
(synthetic data) and the Agg matplotlib backend. The ``python3`` kernel resolves to this interpreter:
jupyter_client replaces a kernelspec's ``python`` with ``sys.executable``.

Where ``$DGLC_BUILT_SITE`` names a site that ``scripts/docs.sh`` built from this checkout
(``.ci/run`` builds it before the suite), the notebooks already ran there, each in a
temporary folder with any error failing the build (``docs/conf.py``): the test checks
that build's page of the notebook instead of running it a second time (40 s of a CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def _kernel_name() -> str:
    """``python3`` when a kernelspec is installed, else register this interpreter's."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:  # pragma: no cover - depends on the environment
        from ipykernel.kernelspec import install

        install(user=True, kernel_name="python3", prefix=None)
    return "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DGL_CHUNKED_DATA", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' scratch folders go with tmp_path
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path.name}: strip outputs"
    built = os.environ.get("DGLC_BUILT_SITE")
    if built:
        page = Path(built) / "_generated" / "notebooks" / f"{path.stem}.html"
        assert page.is_file(), f"{page}: the built site has no page for {path.name}"
        html = page.read_text()
        # executed there: its code cells' outputs are on the page, and none is a traceback
        assert "cell_output" in html and "Traceback" not in html, page
        return
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name=_kernel_name(),
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
