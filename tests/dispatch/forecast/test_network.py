"""The network forecast of `plan` against the bytes a run really reads and writes.

The run's input, staging and output live on a filesystem that counts every byte read
from or written to it (an fsspec memory filesystem under the protocol ``countmem``),
so each stage's traffic to remote storage is known exactly; the forecast's payload
(its bytes less the per-request headers it adds) must be within 10% of it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest
from click.testing import CliRunner
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

import dgl_chunked as dglc
from dgl_chunked.cli import cli
from dgl_chunked.dispatch.forecast.network import REQUEST_DOWN_BYTES, REQUEST_UP_BYTES, parse_bandwidth
from dgl_chunked.errors import OptionError
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

COUNTS = {"down": 0, "up": 0}


class _CountingReader:
    """A stored file, read through: every byte returned is counted."""

    def __init__(self, f: MemoryFile) -> None:
        self._f = f

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        COUNTS["down"] += len(data)
        return data

    def readinto(self, buf: Any) -> int:
        n = self._f.readinto(buf)
        COUNTS["down"] += n
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> _CountingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._f)


class _CountingWriter(MemoryFile):
    def write(self, data: Any) -> int:
        n = super().write(data)
        COUNTS["up"] += n
        return n


class CountingFileSystem(MemoryFileSystem):
    """fsspec's memory filesystem, counting the bytes read and written."""

    protocol = ("countmem",)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kw: Any) -> bytes:
        data = super().cat_file(path, start=start, end=end, **kw)
        COUNTS["down"] += len(data)
        return bytes(data)

    def _open(self, path: str, mode: str = "rb", **kw: Any) -> Any:
        if mode == "wb":
            data = kw.get("data")
            COUNTS["up"] += len(data or b"")
            f = _CountingWriter(self, self._strip_protocol(path), data)
            f.commit()
            return f
        f = super()._open(path, mode, **kw)
        return _CountingReader(f) if "r" in mode else f


class _StageCounts(logging.Handler):
    """The counters at every dispatch step's start (the runner logs each one)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.marks: list[tuple[str, dict[str, int]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("dispatch step: "):
            self.marks.append((message.removeprefix("dispatch step: ").split(" (")[0], dict(COUNTS)))


@pytest.fixture
def counting_fs() -> Iterator[None]:
    fsspec.register_implementation("countmem", CountingFileSystem, clobber=True)
    yield
    CountingFileSystem.store.clear()
    CountingFileSystem.pseudo_dirs[:] = [""]


@pytest.mark.parametrize(
    ("spec", "num_parts", "options"),
    [
        (
            SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=4, edge_feat_dim=2, seed=0),
            3,
            dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True, block_rows=4096),
        ),
        (
            SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=4, edge_format="parquet", seed=0),
            2,
            dglc.DispatchOptions(block_rows=8192),
        ),
        (  # 4 node types, 5 edge types, features of many dtypes; CSV edges
            SynthSpec.heterogeneous(scale=20, seed=1),
            4,
            dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True, block_rows=4096),
        ),
    ],
    ids=["homogeneous-orig-ids", "parquet", "heterogeneous"],
)
def test_forecast_bytes_match_the_bytes_a_run_moves(counting_fs, spec, num_parts, options):
    write_synthetic_graph("countmem://g", spec)
    plan = dglc.forecast_run(
        dglc.open_chunked_graph("countmem://g", task_bytes="1MiB"),
        "countmem://out",
        num_parts=num_parts,
        options=options,
        hosts=2,
        workers=1,
    )
    assert plan.network is not None  # a remote output: the network forecast is made
    stages = logging.getLogger("dgl_chunked")
    handler, level = _StageCounts(), stages.level
    stages.addHandler(handler)
    stages.setLevel(logging.INFO)
    try:
        graph = dglc.open_chunked_graph("countmem://g", task_bytes="1MiB")
        dglc.run(graph, "countmem://out", num_parts=num_parts, options=options)
        handler.marks.append(("end", dict(COUNTS)))
    finally:
        stages.removeHandler(handler)
        stages.setLevel(level)
    measured = {
        name: (c1["down"] - c0["down"], c1["up"] - c0["up"])
        for (name, c0), (_, c1) in zip(handler.marks, handler.marks[1:], strict=False)
    }
    forecast = {
        s.name: (s.down_bytes - s.requests * REQUEST_DOWN_BYTES, s.up_bytes - s.requests * REQUEST_UP_BYTES)
        for s in plan.network.stages
    }
    assert list(measured) == ["stage assignment", "number nodes", "stage edges and features", "write partitions"]
    for name, (down, up) in measured.items():
        assert forecast[name][0] == pytest.approx(down, rel=0.1, abs=16 << 10), (name, "down")
        assert forecast[name][1] == pytest.approx(up, rel=0.1, abs=16 << 10), (name, "up")


def test_busiest_host_carries_less_with_more_hosts(tmp_path):
    spec = SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=8, seed=0)
    write_synthetic_graph(tmp_path / "g", spec)
    graph = dglc.open_chunked_graph(tmp_path / "g", task_bytes="512KiB")
    plans = [
        dglc.forecast_run(graph, tmp_path / "o", num_parts=8, hosts=h, workers=1, bandwidth="10mbit").network
        for h in (1, 2, 4, 8)
    ]
    assert all(p is not None for p in plans)
    writes = [next(s for s in p.stages if s.name == "write partitions") for p in plans if p]
    # the same bytes in total; each host writes its partitions: 8, 4, 2, 1 of them
    assert len({w.up_bytes for w in writes}) == 1
    assert [round(writes[0].host_up_bytes / w.host_up_bytes) for w in writes] == [1, 2, 4, 8]
    seconds = [p.seconds for p in plans if p]
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > 3 * seconds[-1]
    # processes of one host share its link: 2 hosts x 2 processes carry what 2 hosts x 1 do
    two_by_two = dglc.forecast_run(graph, tmp_path / "o", num_parts=8, hosts=2, workers=2).network
    assert two_by_two is not None
    write = next(s for s in two_by_two.stages if s.name == "write partitions")
    assert write.host_up_bytes == writes[1].host_up_bytes


@pytest.mark.parametrize(
    ("text", "rate"),
    [("1gbit", 125e6), ("100mbit", 12.5e6), ("125MB/s", 125e6), ("10mbps", 1.25e6), ("2e6", 2e6), (1000, 1000.0)],
)
def test_parse_bandwidth(text, rate):
    assert parse_bandwidth(text) == pytest.approx(rate)


@pytest.mark.parametrize("text", ["fast", "1 gigabit", "-5mbit", "0"])
def test_parse_bandwidth_refuses_what_is_not_a_rate(text):
    with pytest.raises(OptionError, match="bandwidth"):
        parse_bandwidth(text)


def test_plan_command_prints_the_network_forecast(tmp_path):
    write_synthetic_graph(tmp_path / "g", SynthSpec.homogeneous(2_000, 20_000, feat_dim=4, seed=0))
    args = ["plan", "--in-dir", str(tmp_path / "g"), "--out-dir", str(tmp_path / "o"), "--num-parts", "2"]
    result = CliRunner().invoke(cli, [*args, "--hosts", "2", "--bandwidth", "1gbit"])
    assert result.exit_code == 0, result.output
    assert "network (storage remote): 2 host(s) x 1 process(es), 1000 Mbit/s per host" in result.output
    assert "write partitions" in result.output.split("network (storage remote)")[1]
    bad = CliRunner().invoke(cli, [*args, "--bandwidth", "fast"])
    assert bad.exit_code != 0 and "error: bandwidth 'fast'" in bad.output


class _RecordingFileSystem(MemoryFileSystem):
    """fsspec's memory filesystem, recording the read-ahead asked of every open."""

    protocol = ("recmem",)
    opened: list[tuple[str, int | None]] = []

    def _open(self, path: str, mode: str = "rb", block_size: int | None = None, **kw: Any) -> Any:
        if mode == "rb":
            self.opened.append((path, block_size))
        return super()._open(path, mode, block_size=block_size, **kw)


def test_opening_a_remote_graph_reads_ahead_only_a_header(tmp_path):
    """s3fs reads ahead 50 MiB by default: a header read fetched the whole feature file."""
    from dgl_chunked.storage import fs

    fsspec.register_implementation("recmem", _RecordingFileSystem, clobber=True)
    try:
        write_synthetic_graph("recmem://h", SynthSpec.homogeneous(2_000, 20_000, feat_dim=4, num_chunks=2, seed=0))
        _RecordingFileSystem.opened.clear()
        graph = dglc.open_chunked_graph("recmem://h")
        graph.feature_info("node", "_N", "feat")
        headers = [(p, b) for p, b in _RecordingFileSystem.opened if p.endswith(".npy")]
        assert headers and all(b == fs.HEADER_BLOCK for _, b in headers), _RecordingFileSystem.opened
    finally:
        _RecordingFileSystem.store.clear()


def test_plan_forecasts_what_partitions_dir_adds(tmp_path):
    """`plan --partitions-dir` has a step of its own: the staged owners read (4 B per node),
    DGL's text files (2 B per node below 10 partitions) written, read back and joined when
    the directory is remote; only the owners when it is local."""
    import json

    write_synthetic_graph(tmp_path / "g", SynthSpec.homogeneous(20_000, 20_000, feat_dim=4, seed=0))
    args = ["plan", "--in-dir", str(tmp_path / "g"), "--out-dir", str(tmp_path / "o"), "--num-parts", "2"]
    args += ["--hosts", "1"]
    steps = {}
    for where in ("memory://assign", str(tmp_path / "assign"), None):
        extra = ["--partitions-dir", where] if where else []
        out = tmp_path / f"plan-{len(steps)}.json"
        result = CliRunner().invoke(cli, [*args, *extra, "--json", str(out)])
        assert result.exit_code == 0, result.output
        network = json.loads(out.read_text())["network"]["stages"]
        steps[where] = {s["name"]: s for s in network}
        assert ("write assignment" in result.output) == bool(where)
        assert "(MB = 10^6 bytes)" in result.output
    assert "write assignment" not in steps[None]
    remote, local = steps["memory://assign"]["write assignment"], steps[str(tmp_path / "assign")]["write assignment"]
    owners, text = 4 * 20_000, 2 * 20_000
    assert local["up_bytes"] - local["requests"] * REQUEST_UP_BYTES == 0
    assert local["down_bytes"] - local["requests"] * REQUEST_DOWN_BYTES == owners  # one block: a chunk of 20k rows
    assert remote["up_bytes"] - remote["requests"] * REQUEST_UP_BYTES == 2 * text + 2048
    assert remote["down_bytes"] - remote["requests"] * REQUEST_DOWN_BYTES == owners + text
    assert remote["requests"] > local["requests"]
