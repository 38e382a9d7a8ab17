"""The registry of file formats (``io/formats/registry.py``): what the docs list is what is
registered, and a result file is opened by the format its extension names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import numpy as np
import pytest

from dgl_chunked.errors import UnsupportedFormatError
from dgl_chunked.io.formats import format_of_path, formats_with, get_format, open_result
from dgl_chunked.io.formats.registry import Role

DOCS = Path(__file__).resolve().parents[3] / "docs"


def _section(page: Path, heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def documented_result_formats() -> dict[str, tuple[str, ...]]:
    """Format name -> extensions, from the table of ``docs/spec/results.md``'s result files."""
    out = {}
    for line in _section(DOCS / "spec" / "results.md", "## `remap` input: result files").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[0].startswith("`"):
            out[cells[0].strip("`")] = tuple(re.findall(r"`(\.[a-z0-9]+)`", cells[1]))
    return out


def test_every_result_extension_the_docs_list_is_registered() -> None:
    documented = documented_result_formats()
    assert {"numpy", "parquet", "orc", "zarr", "torch", "dgl"} <= set(documented)
    assert sorted(documented) == sorted(formats_with("results"))
    for name, extensions in documented.items():
        assert extensions, name
        assert get_format(name).extensions == extensions
        for ext in extensions:
            assert format_of_path(f"dir/rank-0{ext}", "results") == name
            assert format_of_path(f"dir/rank-0{ext.upper()}", "results") == name


def test_the_glossary_names_every_registered_format() -> None:
    glossary = (DOCS / "glossary.md").read_text(encoding="utf-8")
    row = next(line for line in glossary.splitlines() if line.startswith("| **file format**"))
    listed = re.findall(r"`([a-z]+)`", row.split("),", 1)[0])
    every = sorted({name for role in get_args(Role) for name in formats_with(role)})
    assert sorted(listed) == every


def test_an_unknown_result_extension_lists_the_registered_ones(tmp_path: Path) -> None:
    path = str(tmp_path / "pred.h5")
    np.save(tmp_path / "pred.npy", np.arange(3))
    expected = sorted(e for n in formats_with("results") for e in get_format(n).extensions)
    assert {".npy", ".parquet", ".pq", ".orc", ".zarr", ".pt", ".pth", ".dgl"} == set(expected)
    with pytest.raises(UnsupportedFormatError) as err:
        open_result(path)
    assert str(err.value) == f"{path}: cannot tell the format from the extension '.h5'; expected one of {expected}"
    with pytest.raises(UnsupportedFormatError, match=r"extension '\(none\)'"):
        open_result(str(tmp_path / "pred"))
    assert open_result(str(tmp_path / "pred.npy")).read(1, 3).tolist() == [1, 2]
