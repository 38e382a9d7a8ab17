"""Sphinx configuration of the dgl_chunked documentation (build: ``bash scripts/docs.sh``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import dgl_chunked  # noqa: E402

project = "dgl_chunked"
author = "dgl_chunked developers"
copyright = "dgl_chunked developers"
release = version = dgl_chunked.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_click",
    "myst_nb",
    "matplotlib.sphinxext.plot_directive",
    "dglc_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
root_doc = "index"

html_theme = "furo"
html_title = f"dgl_chunked {release}"

# API reference: numpydoc renders the docstrings; members are listed by autodoc.
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # signatures keep their annotations; numpydoc sections carry the prose
autodoc_default_options = {"exclude-members": "__init__, __new__"}
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Markdown pages and notebooks.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# Notebooks run at every build (fresh outputs against the code being documented); each in a
# temporary folder, failing the build on any error. DGLC_DOCS_EXECUTE=off skips them.
nb_execution_mode = os.environ.get("DGLC_DOCS_EXECUTE", "force")
nb_execution_in_temp = True
nb_execution_timeout = 600
# Their scratch folders (tempfile.mkdtemp: a graph, its partitions) go under _build, which
# scripts/docs.sh empties, instead of piling up in the system temp folder build after build.
_NOTEBOOK_TMP = DOCS / "_build" / "notebook-tmp"
_NOTEBOOK_TMP.mkdir(parents=True, exist_ok=True)
os.environ["TMPDIR"] = str(_NOTEBOOK_TMP)  # the kernels inherit it
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# Plots drawn at build time from committed benchmark results (benchmarks/results/*.json).
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]
plot_rcparams = {"figure.autolayout": True}

# Doctests in the rendered docstrings (sphinx-build -b doctest) see the public names, like a user.
doctest_global_setup = """
import numpy as np
import dgl_chunked as dglc
from dgl_chunked import *
from dgl_chunked.io import *
"""
plot_working_directory = str(DOCS.parent)  # the plots read benchmarks/results/*.json
