"""Nothing in the repository points outside it, and every citation of the format
specification names a page (and section) that exists in ``docs/spec/``.

Scans every text file of the checkout that git would track (the root ``.gitignore``
patterns and directories whose own ``.gitignore`` ignores everything, as tool caches
have, are skipped; binary files are skipped). The patterns are assembled from pieces so
that they do not match their own source; the strings the pattern tests feed them are
assembled the same way.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "docs" / "spec"

_SLASH = "/"
OUTSIDE = {
    "a path into the shared folder beside the checkout": re.compile(re.escape(".." + _SLASH + "shared")),
    "the external spec file": re.compile(r"shared" + _SLASH + r"spec|dgl-formats\.md"),
    "an absolute path of this machine": re.compile(r"(?<![\w}\]>/.-])" + _SLASH + r"(?:work|root)" + _SLASH),
    "a section number without its spec page": re.compile(
        r"\bspec(?:s)?\s+(?:sec" + r"tions?\s+)?\d|\bspec\s+sec" + r"tions?\b|\u00a7\s*\d", re.IGNORECASE
    ),
}
CITATION = re.compile(
    r"docs" + _SLASH + r"spec" + _SLASH + r"([\w-]+)\.md`{0,2}(?:(?:\s*[,:]\s*|\s*\(\s*)([\"'])(.{1,80}?)\2)?",
    re.DOTALL,
)
"""``docs/spec/<page>.md`` and, when a quoted title follows (after ``,``, ``:`` or ``(``), its section."""


def _ignored_patterns() -> list[str]:
    lines = (REPO / ".gitignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _ignores_all(directory: Path) -> bool:
    marker = directory / ".gitignore"
    return marker.is_file() and "*" in marker.read_text().split()


def _is_ignored(rel: str, name: str, patterns: list[str], is_dir: bool) -> bool:
    for pattern in patterns:
        if pattern.endswith("/") and not is_dir:
            continue
        bare = pattern.rstrip("/")
        if bare.startswith("/"):
            if fnmatch.fnmatch(rel, bare[1:]):
                return True
        elif fnmatch.fnmatch(name, bare) or fnmatch.fnmatch(rel, bare):
            return True
    return False


def repository_text_files() -> Iterator[tuple[str, str]]:
    """``(relative path, text)`` of every tracked-looking text file."""
    patterns = _ignored_patterns()
    stack = [REPO]
    while stack:
        directory = stack.pop()
        for entry in sorted(directory.iterdir()):
            rel = entry.relative_to(REPO).as_posix()
            if entry.name == ".git" or _is_ignored(rel, entry.name, patterns, entry.is_dir()):
                continue
            if entry.is_dir():
                if not _ignores_all(entry):
                    stack.append(entry)
                continue
            data = entry.read_bytes()
            if b"\0" in data:
                continue
            try:
                yield rel, data.decode("utf-8")
            except UnicodeDecodeError:
                continue


def _headings(page: Path) -> set[str]:
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            out.add(line.lstrip("#").strip().replace("`", ""))
    return out


def test_the_scan_sees_code_docs_and_tests() -> None:
    files = dict(repository_text_files())
    assert {"README.md", "docs/architecture.md", "dgl_chunked/io/dgl/binary.py", "tests/conftest.py"} <= set(files)
    assert "scripts/make-golden.py" in files and "docs/spec/index.md" in files
    assert not any(path.startswith((".venv/", "docs/_build/")) for path in files)


def test_no_file_refers_outside_the_repository() -> None:
    problems = []
    for path, text in repository_text_files():
        for what, pattern in OUTSIDE.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{path}:{line}: {what}: {match.group(0)!r}")
    assert not problems, "\n".join(problems)


def test_spec_citations_name_existing_pages_and_sections() -> None:
    pages = {p.stem: _headings(p) for p in SPEC.glob("*.md")}
    cited, problems = 0, []
    for path, text in repository_text_files():
        for match in CITATION.finditer(text):
            page, quote, section = match.group(1), match.group(2), " ".join((match.group(3) or "").split())
            line = text.count("\n", 0, match.start()) + 1
            cited += 1
            if page not in pages:
                problems.append(f"{path}:{line}: docs/spec/{page}.md does not exist")
            elif quote and section not in pages[page]:
                problems.append(f"{path}:{line}: docs/spec/{page}.md has no section {section!r}")
    assert not problems, "\n".join(problems)
    assert cited >= 20  # the modules cite the pages


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("see .." + _SLASH + "shared" + _SLASH + "spec/x.md", "a path into the shared folder beside the checkout"),
        ("bytes as in spec sec" + "tion 3.5", "a section number without its spec page"),
        ("(spec " + "1.2)", "a section number without its spec page"),
        ("python at " + _SLASH + "root" + _SLASH + ".cache/x", "an absolute path of this machine"),
        ("cd " + _SLASH + "work" + _SLASH + "main", "an absolute path of this machine"),
    ],
)
def test_the_patterns_catch_what_they_should(text: str, what: str) -> None:
    assert OUTSIDE[what].search(text)


@pytest.mark.parametrize(
    "text",
    ["ROOT" + _SLASH + "work" + _SLASH + "blocks", "s3://{bucket}" + _SLASH + "work" + _SLASH + "x", "the spec key"],
)
def test_the_patterns_let_through_what_is_not_a_path(text: str) -> None:
    assert not any(pattern.search(text) for pattern in OUTSIDE.values())
