"""The one route from flags to typed options (``dgl_chunked/cli/flags.py``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import click
import pytest

import dgl_chunked
from dgl_chunked import ChunkedGraph, DispatchOptions
from dgl_chunked.cli import COMMANDS, cli, main
from dgl_chunked.cli.flags import split_list, split_lists
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.partition import PartitionOptions

NODE_TYPES = ["author", "institution", "paper"]  # of the golden tiny graph

# flags whose meaning is the command's own (what it writes, replaces, names or formats)
OWN_MEANING = {
    "--out-dir",
    "--overwrite",
    "--partitions-dir",
    "--name",
    "--json",
    "--format",
    "--num-chunks",
    "--edge-format",
    "--staging-dir",
    "--scratch-dir",  # one declaration; its help names the folder it defaults to
}


def _declarations() -> dict[str, dict[tuple[Any, ...], list[str]]]:
    """Flag -> each distinct declaration (help, type, default, kind) -> the commands using it."""
    ctx = click.Context(cli)
    seen: dict[str, dict[tuple[Any, ...], list[str]]] = defaultdict(dict)
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None
        for p in command.params:
            if isinstance(p, click.Option):
                key = (p.help, repr(p.type), repr(p.default), p.is_flag, p.multiple, p.hidden, tuple(p.secondary_opts))
                seen[p.opts[0]].setdefault(key, []).append(name)
    return seen


def test_a_flag_shared_by_commands_has_one_declaration() -> None:
    seen = _declarations()
    drift = {flag: list(v.values()) for flag, v in seen.items() if len(v) > 1 and flag not in OWN_MEANING | {"--seed"}}
    assert drift == {}
    # synth's --seed seeds the generator, not a partition method
    assert sorted(c for v in seen["--seed"].values() for c in v if c != "synth") == ["partition", "plan", "run"]
    assert len([v for v in seen["--seed"].values() if "synth" not in v]) == 1
    for flag in ("--scheduler", "--workers", "--memory-limit", "--in-dir", "--metadata-filename", "--task-size"):
        assert len(seen[flag]) == 1, flag
    every_cluster_command = next(iter(seen["--scheduler"].values()))
    assert sorted(every_cluster_command) == sorted(set(COMMANDS) - {"inspect"})  # inspect reads one file


@pytest.mark.parametrize("command", ["partition", "run", "plan"])
def test_every_partitioning_command_refuses_the_same_seeds(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [command, "--in-dir", "g", "--out-dir", "o", "--num-parts", "2", "--seed", "-1"]
    assert main(argv) == 2
    assert "--seed" in capsys.readouterr().err


def _captured(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> dict[str, Any]:
    """Replace ``target.name`` (the library call a command makes) by one that records its arguments."""
    got: dict[str, Any] = {}

    def record(*args: Any, **kwargs: Any) -> Any:
        got.update(kwargs, args=args)
        raise SystemExit(0)

    monkeypatch.setattr(target, name, record)
    return got


def test_dispatch_flags_become_one_dispatch_options(
    tiny_chunked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dgl_chunked.cli.running as running

    got = _captured(monkeypatch, running, "dispatch")
    argv = ["dispatch", "--in-dir", str(tiny_chunked), "--partitions-dir", "A", "--out-dir", str(tmp_path / "o")]
    argv += ["--memory-limit", "1GiB", "--workers", "2", "--graph-formats", "csc,coo", "--use-graphbolt"]
    argv += ["--no-store-eids", "--store-inner-edge", "--graphbolt-sort-memory", "2MiB", "--lookup-cache", "0"]
    argv += ["--halo-hops", "2", "--save-orig-nids", "--no-progress", "--node-id-features", "a/b,c/d=e"]
    monkeypatch.setattr(running, "command_client", _no_client)
    assert main(argv) == 0
    graph, assignment, out = got["args"]
    assert isinstance(graph, ChunkedGraph) and list(graph.metadata.node_types) == NODE_TYPES  # the opened graph
    assert (assignment, out) == ("A", str(tmp_path / "o"))
    assert got["options"] == DispatchOptions(
        save_orig_nids=True,
        graph_formats=("csc", "coo"),
        lookup_cache_bytes=0,
        halo_hops=2,
        memory_limit=1 << 30,  # the cluster's, parsed once
        graphbolt=GraphBoltOptions(store_eids=False, store_inner_edge=True, sort_bytes=2 << 20),
        node_id_features=("a/b", "c/d=e"),
        background_removal=True,  # the command waits for the staging's removal after its cluster closed
    )


def _no_client(cluster: ClusterOptions, paths: Any) -> Any:
    import contextlib

    _no_client.cluster = cluster  # type: ignore[attr-defined]
    return contextlib.nullcontext(None)


def test_run_flags_become_partition_cluster_and_dispatch_options(
    tiny_chunked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dgl_chunked.cli.running as running

    got = _captured(monkeypatch, dgl_chunked, "run")
    monkeypatch.setattr(running, "command_client", _no_client)
    argv = ["run", "--in-dir", str(tiny_chunked), "--out-dir", str(tmp_path / "o"), "--num-parts", "3"]
    argv += ["--method", "metis", "--seed", "18446744073709551615", "--balance-ntypes", "paper, train_mask"]
    argv += ["--balance-edges", "--max-memory", "1MiB", "--threads-per-worker", "2", "--scheduler", "tcp://h:1"]
    assert main(argv) == 0
    assert got["partition_options"] == PartitionOptions(
        seed=2**64 - 1, balance_ntypes=("paper", "train_mask"), balance_edges=True, max_memory=1 << 20
    )
    assert got["method"] == "metis" and got["num_parts"] == 3
    assert got["options"] == DispatchOptions(part_method="metis", progress=True, background_removal=True)
    assert _no_client.cluster == ClusterOptions(scheduler="tcp://h:1", threads_per_worker=2)  # type: ignore[attr-defined]


def test_store_flags_without_graphbolt_are_a_usage_error(
    tiny_chunked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["dispatch", "--in-dir", str(tiny_chunked), "--partitions-dir", "A", "--out-dir", "o", "--no-store-eids"]
    assert main(argv) == 2
    assert "--no-store-eids only apply with --use-graphbolt" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("texts", "names"),
    [
        (("a,b", "c"), ("a", "b", "c")),
        (("a,,b,", " "), ("a", "b")),  # empty and blank names dropped
        ((" a , b",), (" a ", " b")),  # the others kept as written
        ((), ()),
    ],
)
def test_split_lists_reads_a_repeatable_comma_flag(texts: tuple[str, ...], names: tuple[str, ...]) -> None:
    assert split_lists(texts) == names


def test_split_list_strips_and_reads_no_flag_as_none() -> None:
    assert split_list(" a, b,,c ") == ("a", "b", "c")
    assert split_list("") is None and split_list(None) is None
