"""errors.Problems: the one collector of problems that are reported together."""

from __future__ import annotations

import pytest

from dgl_chunked.errors import (
    MISSING,
    ChunkMismatchError,
    ChunkReadError,
    MetadataError,
    Problems,
)


def test_no_problem_raises_nothing():
    problems = Problems("metadata.json")
    assert len(problems) == 0 and problems.error() is None
    problems.raise_if_any()


def test_add_formats_expected_found_fix_and_cuts_long_values():
    problems = Problems("the chunk spec", prefix="spec ")
    problems.add("node_types", "an object", MISSING, "add it")
    problems.add("x", "a short value", "y" * 200)
    assert problems.messages[0] == "spec node_types: expected an object, found nothing (key missing); add it"
    assert problems.messages[1] == "spec x: expected a short value, found '" + "y" * 76 + "..."
    with pytest.raises(MetadataError) as info:
        problems.raise_if_any()
    assert str(info.value) == "2 problems in the chunk spec:\n  - " + "\n  - ".join(problems.messages)
    assert info.value.problems == problems.messages


def test_one_problem_is_its_own_message_with_problems_attribute():
    problems = Problems("metadata.json")
    problems.note("graph_name: expected a string, found 3")
    err = problems.error()
    assert type(err) is MetadataError
    assert str(err) == "graph_name: expected a string, found 3"
    assert err.problems == ["graph_name: expected a string, found 3"]


def test_run_keeps_the_error_raised_and_the_class_of_the_first():
    problems = Problems("the raw inputs", error=ChunkMismatchError)
    missing = ChunkReadError("file 'a.npy' does not exist")

    def fail() -> int:
        raise missing

    assert problems.run(lambda: 7) == 7
    assert problems.run(fail) is None
    assert problems.error() is missing  # a single caught error is raised as it was
    problems.note("edges: expected 10 rows, found 9")
    with pytest.raises(ChunkReadError) as info:
        problems.raise_if_any()
    assert str(info.value) == (
        "2 problems in the raw inputs:\n  - file 'a.npy' does not exist\n  - edges: expected 10 rows, found 9"
    )


def test_run_does_not_swallow_bugs():
    problems = Problems("x")
    with pytest.raises(ZeroDivisionError):
        problems.run(lambda: 1 / 0)
    assert len(problems) == 0


def test_note_can_name_its_class():
    problems = Problems("x")
    problems.note("rows differ", ChunkMismatchError)
    problems.note("bad key")
    with pytest.raises(ChunkMismatchError, match="2 problems in x"):
        problems.raise_if_any()
