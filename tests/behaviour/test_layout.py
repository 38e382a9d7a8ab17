"""The tests are laid out as the package: a test file names the module it tests.

``tests/<path>/test_<m>.py`` or ``tests/<path>/test_<m>_<aspect>.py`` tests the module
``dgl_chunked/<path>/<m>.py``, or the package ``dgl_chunked/<path>/`` itself when ``<m>`` is
the folder's own name (``tests/dispatch/test_dispatch_golden.py``). Tests of behaviour that
crosses packages (ownership, task keys, object stores, the docs, the architecture) live in
``tests/behaviour/``; the real-DGL tier (it needs DGL's virtualenv) in ``tests/realdgl/``.
Every folder is a package (``__init__.py``), so that two test files of one name in two
folders do not collide. Helpers (``conftest.py``, ``helpers.py``, ...) are not test files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "dgl_chunked"
CROSS_CUTTING = "behaviour"
TIERS = ("realdgl",)


def unplaced(tests: Path, package: Path) -> list[str]:
    """Every test file under ``tests`` that names no module of its mirrored package folder."""
    out = []
    for f in sorted(tests.rglob("*.py")):
        r = f.relative_to(tests)
        if r.parts[0] in (CROSS_CUTTING, *TIERS, "data"):
            continue
        if f.name.endswith("_test.py"):
            out.append(f"{r.as_posix()}: name it test_<module>.py")
            continue
        if not f.name.startswith("test_"):
            continue
        folder = package.joinpath(*r.parts[:-1])
        if not folder.is_dir():
            out.append(f"{r.as_posix()}: dgl_chunked has no package {'/'.join(r.parts[:-1])}")
            continue
        names = {m.stem for m in folder.glob("*.py") if m.stem != "__init__"}
        if r.parts[:-1]:
            names.add(r.parts[-2])
        stem = f.stem.removeprefix("test_")
        if not any(stem == m or stem.startswith(m + "_") for m in names):
            out.append(f"{r.as_posix()}: names no module of dgl_chunked/{'/'.join(r.parts[:-1])}")
    return out


def test_every_test_file_names_the_module_it_tests() -> None:
    assert unplaced(TESTS, PACKAGE) == []


def test_every_test_folder_is_a_package() -> None:
    folders = {f.parent for f in TESTS.rglob("test_*.py") if "data" not in f.relative_to(TESTS).parts}
    assert sorted(str(d.relative_to(TESTS)) for d in folders if not (d / "__init__.py").exists()) == []


@pytest.mark.parametrize(
    ("path", "placed"),
    [
        ("dispatch/test_ids.py", True),  # dispatch/ids.py
        ("dispatch/test_ids_wide.py", True),  # an aspect of dispatch/ids.py
        ("dispatch/test_dispatch_golden.py", True),  # the package itself
        ("dispatch/forecast/test_run.py", True),
        ("test_errors.py", True),  # dgl_chunked/errors.py
        ("behaviour/test_anything.py", True),
        ("realdgl/test_realdgl_anything.py", True),
        ("dispatch/helpers.py", True),  # not a test file
        ("dispatch/test_plan_forecast.py", True),  # names dispatch/plan.py: the rule cannot read intent
        ("test_task_size.py", False),  # cross-cutting, not in behaviour/
        ("dispatch/test_graphbolt_dispatch.py", False),  # no module graphbolt in dispatch/
        ("io/test_zarr_lookup.py", False),  # zarr_lookup is in storage/, not io/
        ("nowhere/test_x.py", False),  # no package nowhere/
        ("dispatch/ids_test.py", False),
    ],
)
def test_the_rule_on_made_up_files(tmp_path: Path, path: str, placed: bool) -> None:
    tests, package = tmp_path / "tests", tmp_path / "dgl_chunked"
    for module in (
        "errors.py",
        "dispatch/ids.py",
        "dispatch/plan.py",
        "dispatch/forecast/run.py",
        "storage/zarr_lookup.py",
    ):
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("")
    (package / "io").mkdir()
    (tests / path).parent.mkdir(parents=True, exist_ok=True)
    (tests / path).write_text("")
    assert (unplaced(tests, package) == []) is placed
