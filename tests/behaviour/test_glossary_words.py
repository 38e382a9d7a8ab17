"""The glossary's words keep one meaning in the code, the benchmarks' results and the docs.

``docs/glossary.md``: a *block* is an ID range (never a part of a file, a *piece*, nor of a
streamed array, a *span*); a *chunk* is one file of the chunked graph (what one task reads
is a *read task*, Zarr's unit a *Zarr chunk*); *stage* is a verb (a computation is a
*step*). The senses the issue 41 renames removed are checked here so that they do not come
back: each rule is a function of source text or JSON, tried on the repository and on
made-up examples both ways.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dgl_chunked"

SPAN_PACKAGES = ("io/dgl", "io/graphbolt", "io/formats", "chunk")
"""Where nothing is a block: streamed arrays (spans), the formats' and chunk's raw reads (read tasks, pieces)."""

BLOCK_EXEMPT = {
    # ArraySpans(blocks=...) and ArraySpans.blocks: the deprecated old names,
    # kept so that callers of the public ArraySpans keep working (they warn)
    ("io/dgl/spans.py", "blocks"),
}
BLOCK_NAMES_KEPT = {"HEADER_BLOCK", "block_size"}
"""DGL's own name of the 4096-byte header region of ``graph.dgl`` (``docs/spec/dgl-binary.md``), and
fsspec's ``open(..., block_size=)`` keyword, passed on under its own name."""


def identifiers(source: str) -> Iterator[tuple[int, str]]:
    """``(line, name)`` of every name a module binds, reads, defines or passes by keyword."""
    yield from sorted(_identifiers(ast.parse(source)))


def _identifiers(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.arg | ast.keyword) and node.arg:
            yield node.lineno, node.arg
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.lineno, node.name
        elif isinstance(node, ast.alias):
            yield node.lineno, (node.asname or node.name).split(".")[-1]


def names_a_block(name: str) -> bool:
    """True when one of the identifier's words is *block* or *blocks*."""
    return any(w in ("block", "blocks") for w in name.lower().split("_"))


def block_identifiers(source: str, rel: str) -> list[str]:
    """``rel:line: name`` of every identifier of ``source`` that names a block, bar the exemptions."""
    return [
        f"{rel}:{line}: {name}"
        for line, name in identifiers(source)
        if names_a_block(name) and name not in BLOCK_NAMES_KEPT and (rel, name) not in BLOCK_EXEMPT
    ]


def stage_nouns(source: str, rel: str) -> list[str]:
    """Names that use *stage* as a noun: a variable, argument or field called ``stage``/``stages``
    (a directory of staged data is a scratch directory; a list of tasks that stage is
    ``stage_tasks``), or one whose name holds the noun (``first_stage``, ``dispatch_stages_s``).
    Function names are verbs (``stage_edge_task``) and are not checked."""
    out = []
    for node in ast.walk(ast.parse(source)):
        bound: list[tuple[int, str]] = []
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.append((node.lineno, node.id))
        elif isinstance(node, ast.arg):
            bound.append((node.lineno, node.arg))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            bound.append((node.lineno, node.attr))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound.append((node.lineno, node.target.id))
        for line, name in bound:
            words = name.lower().strip("_").split("_")
            if words in (["stage"], ["stages"]) or "stages" in words or words[-1:] == ["stage"] and len(words) > 1:
                out.append(f"{rel}:{line}: {name}")
    return out


_COMMANDS = r"(?:dispatch|remap|lookup|chunk|verify|partition|compute|run)"
STEP_AS_STAGE = re.compile(rf"\b{_COMMANDS} stage\b(?!s)|\b{_COMMANDS} stages(?=\s*[(:.,;)])|\bstages?: ", re.I)
"""A command's computation called a stage: ``dispatch stage``, ``dispatch stages (s):``,
``stage: ``; not the verb (``dispatch stages the owners``)."""


def stage_strings(source: str, rel: str) -> list[str]:
    """String constants (log lines, messages, keys) that call a step a stage."""
    return [
        f"{rel}:{node.lineno}: {node.value!r}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and STEP_AS_STAGE.search(node.value)
        or isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"\w*stages?_s", node.value)
    ]


LP_PHASE_KEY = re.compile(r"(?:re)?stage(?:_task|_s|_cpu_s)?")
"""``lp``'s phase ``stage`` (its ``lp: phase stage`` log line) and its task functions
(``stage_task``, ``restage_task``), as ``lp``'s results name them."""


def stage_keys(data: Any, parent: str = "", *, lp: bool = False) -> list[str]:
    """JSON keys that name a step a stage; ``forecast.stages`` is ``plan --json``'s published
    key, and with ``lp`` the ``lp`` phase names (:data:`LP_PHASE_KEY`) are allowed."""
    out = []
    if isinstance(data, dict):
        for key, value in data.items():
            # keys with spaces are step names ("stage assignment") and dglc- keys Dask task
            # names ("dglc-stage-edges"): stage is the verb there
            named = " " not in key and not key.startswith("dglc-")
            allowed = (key == "stages" and parent == "forecast") or parent == "phases_s"
            allowed |= lp and LP_PHASE_KEY.fullmatch(key) is not None
            if named and "stage" in key and not allowed:
                out.append(f"{parent}/{key}")
            out += stage_keys(value, key, lp=lp)
    elif isinstance(data, list):
        for value in data:
            out += stage_keys(value, parent, lp=lp)
    return out


CHUNK_AS_TASK = re.compile(r"^(?:edge|node|feature)_chunk_(?:starts|counts)$|^stage_\w*chunk\w*$")
"""Identifiers that once called a read task a chunk (``edge_chunk_counts``, ``stage_edge_chunk``)."""


def chunk_identifiers(source: str, rel: str) -> list[str]:
    """Identifiers of ``source`` that call a read task a chunk."""
    return [f"{rel}:{line}: {name}" for line, name in identifiers(source) if CHUNK_AS_TASK.match(name)]


def modules(*folders: str) -> Iterator[tuple[str, str]]:
    for folder in folders:
        for f in sorted((PACKAGE / folder).rglob("*.py")):
            yield f.relative_to(PACKAGE).as_posix(), f.read_text()


# --- the repository --------------------------------------------------------------------


def test_streamed_arrays_and_chunks_raw_reads_name_no_block() -> None:
    found = [hit for rel, src in modules(*SPAN_PACKAGES) for hit in block_identifiers(src, rel)]
    assert found == []


def test_no_name_uses_stage_as_a_noun() -> None:
    skip = ("partition/lp/", "dispatch/forecast/")  # lp's phase names; the forecast's published `stages`
    found = [hit for rel, src in modules(".") if not rel.startswith(skip) for hit in stage_nouns(src, rel)]
    found += [hit for f in sorted((ROOT / "benchmarks").glob("*.py")) for hit in stage_nouns(f.read_text(), f.name)]
    assert found == []


def test_no_log_line_or_key_calls_a_step_a_stage() -> None:
    found = [hit for rel, src in modules(".") for hit in stage_strings(src, rel)]
    found += [hit for f in sorted((ROOT / "benchmarks").glob("*.py")) for hit in stage_strings(f.read_text(), f.name)]
    assert found == []


def test_benchmark_results_keep_steps_under_step_keys() -> None:
    found = {
        f.name: keys
        for f in sorted((ROOT / "benchmarks/results").glob("*.json"))
        if (keys := stage_keys(json.loads(f.read_text()), lp=f.name == "lp.json"))
    }
    assert found == {}


def test_a_read_task_is_never_called_a_chunk_in_names() -> None:
    assert [hit for rel, src in modules(".") for hit in chunk_identifiers(src, rel)] == []


@pytest.mark.parametrize(
    "page",
    ["docs/architecture.md", "docs/scaling.md", "docs/glossary.md", "docs/user-guide/input-files.md", "README.md"],
)
def test_docs_call_a_computation_a_step_and_a_raw_read_a_read_task(page: str) -> None:
    text = (ROOT / page).read_text()
    assert STEP_AS_STAGE.findall(text) == []
    assert re.findall(r"\bread blocks?\b|\bstages of (?:a|the) command\b|\bcommand's stages\b", text) == []


# --- the rules on made-up sources, both ways ---------------------------------------------


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ("for block in stream.blocks():\n    pass\n", ["m.py:1: block", "m.py:1: blocks"]),
        ("def _le_blocks(s):\n    return s\n", ["m.py:1: _le_blocks"]),
        ("x = ArraySpans(shape, dtype, blocks=f)\n", ["m.py:1: blocks"]),
        ("for span in stream.spans():\n    pass\n", []),
        ("HEADER_SPAN = 1\nblocky = 2\n", []),
    ],
)
def test_the_block_rule(source: str, hits: list[str]) -> None:
    assert block_identifiers(source, "m.py") == hits


def test_the_block_exemptions_are_per_file() -> None:
    assert block_identifiers("HEADER_BLOCK = 4096\n", "io/dgl/binary.py") == []  # DGL's name, anywhere
    assert block_identifiers("def blocks(self):\n    pass\n", "io/dgl/spans.py") == []  # the deprecated alias
    assert block_identifiers("def blocks(self):\n    pass\n", "io/graphbolt/csc.py") == [
        "io/graphbolt/csc.py:1: blocks"
    ]


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ("stage = fs.join(out, 'x')\n", ["m.py:1: stage"]),
        ("def f(job, stage: str):\n    pass\n", ["m.py:1: stage"]),
        ("self.stage = path\n", ["m.py:1: stage"]),
        ("def stage_table():\n    stages = {}\n", ["m.py:2: stages"]),
        ("first_stage = 1\n", ["m.py:1: first_stage"]),
        ("scratch = fs.join(out, 'x')\nstage_tasks = []\nstaged = 1\n", []),
        ("stage(plan, 'nodes', rows)\ndef stage(plan, name, rows):\n    pass\n", []),
    ],
)
def test_the_stage_noun_rule(source: str, hits: list[str]) -> None:
    assert stage_nouns(source, "m.py") == hits


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('log.info("dispatch stage: %s", name)\n', True),
        ('row = {"dispatch_stages_s": 1}\n', True),
        ('print(f"{g} dispatch stages (s): {x}")\n', True),
        ('"""Records when each dispatch stage starts."""\n', True),
        ('"""Whether dispatch stages the owner of every edge."""\n', False),
        ('log.info("%s step: %s (%d tasks)", cmd, step, n)\n', False),
        ('runner.compute(tasks, "stage edges and features")\n', False),
        ('row = {"dispatch_steps_s": 1}\n', False),
    ],
)
def test_the_stage_string_rule(source: str, found: bool) -> None:
    assert bool(stage_strings(source, "m.py")) is found


def test_the_stage_key_rule() -> None:
    assert stage_keys({"runs": [{"dispatch_stages_s": {}}]}) == ["runs/dispatch_stages_s"]
    assert stage_keys({"runs": [{"stages": [{"stage": "x"}]}]}) == ["runs/stages", "stages/stage"]
    assert stage_keys({"runs": [{"steps": [{"step": "x"}], "forecast": {"stages": [{"name": "stage edges"}]}}]}) == []
    assert stage_keys({"phases_s": {"stage": 1.9}, "dispatch_steps_s": {"stage assignment": 0.4}}) == []
    assert stage_keys({"kinds": {"dglc-stage-edges": 1.0}}) == []
    assert stage_keys({"task_s": {"stage_task": 1.0}}) == ["task_s/stage_task"]
    assert stage_keys({"task_s": {"stage_task": 1.0, "restage_task": 2.0}}, lp=True) == []
    assert stage_keys({"runs": [{"stage_s": 1.0}]}, lp=True) == []
    assert stage_keys({"runs": [{"stages_s": 1.0}]}, lp=True) == ["runs/stages_s"]


def test_the_chunk_rule() -> None:
    assert chunk_identifiers("edge_chunk_counts = 1\ndef stage_edge_chunk():\n    pass\n", "m.py") == [
        "m.py:1: edge_chunk_counts",
        "m.py:2: stage_edge_chunk",
    ]
    assert chunk_identifiers("edge_task_counts = 1\nread_edge_chunk(p)\nwrite_edges_chunk(p)\n", "m.py") == []
