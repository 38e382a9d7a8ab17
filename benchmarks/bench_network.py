"""Scale-out, measured: the pipeline on a simulated cluster whose network is the bottleneck.

Each host is a network namespace with its own capped link (``tc`` token bucket, both
directions), a private ``/tmp`` (its own disk) and one ``dask worker`` process; an S3
server (moto) is the shared storage in a namespace of its own, and the scheduler and
the client share a third. All of them are joined by one switch (``benchmarks/netns.py``);
no traffic leaves these namespaces. The input is written once to the object store; then,
for each host count, ``run`` (partition + dispatch) reads it from there and writes its
staging and output there, and the benchmark prints, per step, the time, the bytes every
host sent and received (interface counters) and what ``forecast_run`` forecasts for the
same cluster, side by side.

Usage (as root)::

    python benchmarks/bench_network.py [--hosts 1 2 4 8] [--rate 10mbit] [--nodes 200000]
        [--edges 2000000] [--feat-dim 16] [--num-parts 8] [--method random]
        [--save-orig-ids] [--partitions-dir] [--trace-s3] [--json out.json]

Without root (or without ``ip``/``tc``) it prints why and exits 0 having done nothing.
Every namespace is removed at the end, also on failure or Ctrl-C; a run killed with
SIGKILL leaves them behind, and the next run removes them first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netns import Endpoint, Topology, netns_problem, remove_stale, topology  # noqa: E402

BUCKET = "bench"
S3_PORT = 5000
SCHEDULER_PORT = 8786
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
BIN = Path(sys.executable).parent


def _storage_options(endpoint: str) -> dict[str, Any]:
    return {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }


TRACE_ENV: dict[str, str] = {}
"""With ``--trace-s3``: what makes every process log its S3 requests (``s3trace/sitecustomize.py``)."""


def _worker_env() -> dict[str, str]:
    from dgl_chunked.cluster import WORKER_ENVIRONMENT

    return {**os.environ, **KEYS, **WORKER_ENVIRONMENT, "OMP_NUM_THREADS": "1", **TRACE_ENV}


# ---------------------------------------------------------------- the processes


def _private_tmp(argv: list[str]) -> list[str]:
    """``argv`` in a mount namespace of its own with a private tmpfs over /tmp (the host's disk)."""
    script = 'set -e; mount -t tmpfs tmpfs /tmp; exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]


class Processes:
    """Child processes, terminated (then killed) on exit."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


def _wait_port(ep: Endpoint, port: int, what: str, timeout: float = 60) -> None:
    code = f"import socket; socket.create_connection(('{ep.address}', {port}), timeout=1).close()"
    deadline = time.monotonic() + timeout
    while subprocess.run(ep.exec([sys.executable, "-c", code]), capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not listen on {ep.address}:{port} within {timeout:.0f} s")
        time.sleep(0.3)


@contextmanager
def cluster(topo: Topology, hosts: int, logs: Path, memory_limit: str) -> Any:
    """A scheduler in the client's namespace and one worker process per host namespace."""
    procs = Processes()
    client_ep = topo.endpoints["client"]
    scheduler = f"tcp://{client_ep.address}:{SCHEDULER_PORT}"
    try:
        procs.start(
            client_ep.exec([str(BIN / "dask"), "scheduler", "--host", client_ep.address, "--port",
                            str(SCHEDULER_PORT), "--no-dashboard"]),
            logs / "scheduler.log",
        )  # fmt: skip
        _wait_port(client_ep, SCHEDULER_PORT, "the dask scheduler")
        for i in range(hosts):
            ep = topo.endpoints[f"h{i}"]
            argv = [str(BIN / "dask"), "worker", scheduler, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                    "--name", f"h{i}", "--host", ep.address, "--memory-limit", memory_limit,
                    "--local-directory", "/tmp/dask-worker"]  # fmt: skip
            procs.start(ep.exec(_private_tmp(argv)), logs / f"worker-h{i}.log", env=_worker_env())
        yield scheduler
    finally:
        procs.stop()


@contextmanager
def object_store(topo: Topology, logs: Path) -> Any:
    ep = topo.endpoints["s3"]
    procs = Processes()
    try:
        procs.start(ep.exec([str(BIN / "moto_server"), "-H", ep.address, "-p", str(S3_PORT)]), logs / "s3.log")
        _wait_port(ep, S3_PORT, "the S3 server")
        yield f"http://{ep.address}:{S3_PORT}"
    finally:
        procs.stop()


# ---------------------------------------------------------------- the client side


def _in_client(topo: Topology, args: list[str], logs: Path, what: str) -> dict[str, Any]:
    """Run this script's ``--client`` mode in the client's namespace; its JSON result."""
    result = logs / f"{what}.json"
    argv = topo.endpoints["client"].exec([sys.executable, __file__, "--client", str(result), *args])
    with open(logs / f"{what}.log", "ab") as log:
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **KEYS, **TRACE_ENV})
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}); see {logs / (what + '.log')}")
    return json.loads(result.read_text())  # type: ignore[no-any-return]


class _StageClock(logging.Handler):
    """Counters and time at every dispatch step's start (the runner logs each one)."""

    def __init__(self, topo: Topology) -> None:
        super().__init__(logging.INFO)
        self.topo = topo
        self.marks: list[tuple[str, float, dict[str, tuple[int, int]]]] = []

    def mark(self, name: str) -> None:
        self.marks.append((name, time.time(), self.topo.counters()))

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(("dispatch step: ", "run step: ")):  # run's: write assignment (--partitions-dir)
            self.mark(message.split(" step: ", 1)[1].split(" (")[0])


def _graph_arguments(parser: argparse.ArgumentParser) -> None:
    """The graph and the run, the same for the benchmark and its client mode."""
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=2_000_000)
    parser.add_argument("--feat-dim", type=int, default=16)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--num-parts", type=int, default=8)
    parser.add_argument("--method", default="random")
    parser.add_argument("--save-orig-ids", action="store_true")
    parser.add_argument(
        "--partitions-dir", action="store_true", help="run --partitions-dir on the object store (and its forecast)"
    )
    parser.add_argument(
        "--task-size", default=None, help="read task size (--task-size of the CLI): small enough for a task per worker"
    )


def client_main(result_path: str, argv: list[str]) -> None:
    """Inside the client namespace: one synth or one measured run."""
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["synth", "run"])
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--switch", required=True)
    parser.add_argument("--ports", required=True, help="JSON {endpoint: [netns, address, port]}")
    parser.add_argument("--in-dir", required=True)
    parser.add_argument("--out-dir")
    _graph_arguments(parser)
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--rate", default=None)
    a = parser.parse_args(argv)
    from distributed import Client

    import dgl_chunked as dglc

    topo = Topology(a.switch, {k: Endpoint(k, v[0], v[1], v[2], None) for k, v in json.loads(a.ports).items()})
    so = _storage_options(a.endpoint)
    with Client(a.scheduler) as client:
        if a.mode == "synth":
            spec = dglc.SynthSpec.homogeneous(
                num_nodes=a.nodes, num_edges=a.edges, feat_dim=a.feat_dim, num_chunks=a.chunks, seed=0
            )
            dglc.write_synthetic_graph(a.in_dir, spec, storage_options=so, overwrite=True)
            Path(result_path).write_text("{}")
            return
        opts = dglc.DispatchOptions(save_orig_nids=a.save_orig_ids, save_orig_eids=a.save_orig_ids)
        assign = f"{a.out_dir}-assignment" if a.partitions_dir else None
        planned = dglc.open_chunked_graph(a.in_dir, storage_options=so, task_bytes=a.task_size)
        plan = dglc.forecast_run(  # on a handle of its own: the run's opening is measured
            planned, a.out_dir, num_parts=a.num_parts, method=a.method, options=opts, storage_options=so,
            workers=1, hosts=a.hosts, bandwidth=a.rate, partitions_dir=assign,
        )  # fmt: skip
        clock = _StageClock(topo)
        logging.getLogger("dgl_chunked").addHandler(clock)
        logging.getLogger("dgl_chunked").setLevel(logging.INFO)
        clock.mark("start")
        graph = dglc.open_chunked_graph(a.in_dir, storage_options=so, task_bytes=a.task_size)
        result = dglc.run(
            graph, a.out_dir, num_parts=a.num_parts, method=a.method, options=opts,
            storage_options=so, client=client, partitions_dir=assign,
        )  # fmt: skip
        clock.mark("end")
        rss = client.run(_peak_rss_mb)
        Path(result_path).write_text(
            json.dumps(
                {
                    "marks": clock.marks,
                    "worker_peak_rss_mb": rss,
                    "steps_s": result.step_seconds,
                    "forecast": dataclasses.asdict(plan.network) if plan.network else None,
                }
            )
        )


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# ---------------------------------------------------------------- figures


def step_bytes(marks: list[Any], hosts: int) -> list[dict[str, Any]]:
    """Per step: seconds, and bytes received / sent by every host and by the store."""
    rows = []
    for (name, t0, c0), (_, t1, c1) in zip(marks, marks[1:], strict=False):
        per = {k: (c1[k][0] - c0[k][0], c1[k][1] - c0[k][1]) for k in c0}
        hosts_rx = [per[f"h{i}"][0] for i in range(hosts)]
        hosts_tx = [per[f"h{i}"][1] for i in range(hosts)]
        rows.append(
            {
                "step": "partition" if name == "start" else name,
                "seconds": t1 - t0,
                "hosts_rx": hosts_rx,
                "hosts_tx": hosts_tx,
                "store_rx": per["s3"][0],
                "store_tx": per["s3"][1],
                "client_rx": per["client"][0],
                "client_tx": per["client"][1],
            }
        )
    return rows


def _mb(b: float) -> str:
    return f"{b / 1e6:8.1f}"


def table(hosts: int, rate: str, rows: list[dict[str, Any]], forecast: dict[str, Any] | None) -> str:
    """Measured against forecast, per step: MB down and up at the store, the busiest host, seconds."""
    lines = [f"== {hosts} host(s), {rate} per host link; measured / forecast (ratio measured:forecast)"]
    lines.append(f"{'step':<26}{'MB down':>22}{'MB up':>22}{'busiest host MB rx/tx':>24}{'seconds':>18}")
    predicted = {s["name"]: s for s in (forecast or {}).get("stages", [])}
    for r in rows:
        f = predicted.get(r["step"]) or (predicted.get(next(iter(predicted), "")) if r["step"] == "partition" else None)
        down, up = r["store_tx"], r["store_rx"]
        busiest = max(range(hosts), key=lambda i: r["hosts_rx"][i] + r["hosts_tx"][i])
        host = f"{_mb(r['hosts_rx'][busiest]).strip()}/{_mb(r['hosts_tx'][busiest]).strip()}"
        if f:
            host += f" | {f['host_down_bytes'] / 1e6:.1f}/{f['host_up_bytes'] / 1e6:.1f}"
        lines.append(
            f"{r['step']:<26}{_pair(down, f and f['down_bytes'])}{_pair(up, f and f['up_bytes'])}{host:>24}"
            f"{_pair(r['seconds'], f and f['seconds'], unit=1)}"
        )
    total = sum(r["seconds"] for r in rows)
    expected = sum(s["seconds"] or 0 for s in predicted.values()) if predicted else None
    lines.append(f"{'total':<26}{'':>44}{'':>24}{_pair(total, expected, unit=1)}")
    return "\n".join(lines)


def _pair(measured: float, forecast: float | None, unit: float = 1e6) -> str:
    if forecast is None:
        return f"{measured / unit:>22.1f}"
    ratio = measured / forecast if forecast else float("nan")
    return f"{measured / unit:>9.1f} /{forecast / unit:>6.1f} ({ratio:4.2f})"


def _kind(key: str) -> str:
    """What an S3 key holds: input, staging array, scratch, output file, marker."""
    parts = key.split("/")
    if parts[0] == "graph":
        return "input " + (parts[1] if len(parts) > 2 else parts[-1])
    rest = parts[1:]
    if not rest:
        return "out (dir)"
    if rest[0] == "_staging":
        if len(rest) > 3 and rest[1] in ("nodes", "edges", "node_feat", "edge_feat"):
            leaf = rest[3] if rest[1] == "nodes" else (rest[4] if rest[1] == "edges" and len(rest) > 4 else rest[-2])
            return f"staging {rest[1]}/{leaf}"
        return "staging " + rest[1]
    if rest[0].startswith("dglc-run-"):
        return "scratch " + "/".join(rest[1:2])
    if rest[0].startswith("part") or rest[0].startswith("_tmp_part"):
        return "output " + rest[-1]
    return "out " + rest[0]


def trace_table(trace_dir: Path, marks: list[Any], forecast: dict[str, Any] | None = None) -> str:
    """Requests and bytes per step and kind of data, from the processes' S3 request logs,
    and per step the requests against the forecast's."""
    records = [json.loads(line) for f in trace_dir.glob("*.jsonl") for line in f.read_text().splitlines()]
    bounds = [(name if name != "start" else "partition", t) for name, t, _ in marks]
    lines = [f"{'step':<26}{'data':<34}{'requests':>9}{'MB down':>9}{'MB up':>9}"]
    predicted = {s["name"]: s["requests"] for s in (forecast or {}).get("stages", [])}
    first = next(iter(predicted), "")
    for (step, t0), (_, t1) in zip(bounds, bounds[1:], strict=False):
        acc: dict[str, list[int]] = {}
        for r in records:
            if t0 <= r["t"] < t1:
                row = acc.setdefault(_kind(r["key"]), [0, 0, 0])
                row[0] += 1
                row[1] += r["received"]
                row[2] += r["sent"]
        for kind, (n, down, up) in sorted(acc.items()):
            lines.append(f"{step:<26}{kind:<34}{n:>9}{down / 1e6:>9.2f}{up / 1e6:>9.2f}")
        want = predicted.get(first if step == "partition" else step)
        lines.append(f"{step:<26}{'all (forecast ' + str(want) + ')':<34}{sum(a[0] for a in acc.values()):>9}")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rate", default="10mbit", help="cap of every host's link, each direction (tc rate)")
    _graph_arguments(parser)
    parser.add_argument("--memory-limit", default="2GiB")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--logs", help="keep the processes' logs here (default: a temporary directory)")
    parser.add_argument(
        "--trace-s3", action="store_true", help="log every S3 request and print bytes per step and kind of data"
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminated)  # so that the namespaces are removed on kill too
    problem = netns_problem()
    if problem:
        print(f"bench_network: skipped: {problem}")
        return
    stale = remove_stale()
    if stale:
        print(f"removed {len(stale)} namespace(s) left by an earlier run: {', '.join(stale)}")
    results: dict[str, Any] = {"args": vars(args), "runs": []}
    endpoints: list[tuple[str, str | None]] = [("s3", None), ("client", None)]
    endpoints += [(f"h{i}", args.rate) for i in range(max(args.hosts))]
    with ExitStack() as stack:
        logs = (
            Path(args.logs) if args.logs else Path(stack.enter_context(tempfile.TemporaryDirectory(dir="/var/tmp")))
        )  # outside the hosts' private /tmp
        logs.mkdir(parents=True, exist_ok=True)
        if args.trace_s3:
            (logs / "s3trace").mkdir(exist_ok=True)
            TRACE_ENV.update(
                PYTHONPATH=str(Path(__file__).resolve().parent / "s3trace"), DGLC_TRACE_S3=str(logs / "s3trace")
            )
        topo = stack.enter_context(topology(endpoints))
        endpoint = stack.enter_context(object_store(topo, logs))
        _make_bucket(topo, endpoint)
        ports = json.dumps({k: [e.netns, e.address, e.port] for k, e in topo.endpoints.items()})
        graph = f"s3://{BUCKET}/graph"
        common = ["--endpoint", endpoint, "--switch", topo.switch, "--ports", ports, "--in-dir", graph]
        sizes = ["--nodes", str(args.nodes), "--edges", str(args.edges), "--feat-dim", str(args.feat_dim),
                 "--chunks", str(args.chunks)]  # fmt: skip
        with cluster(topo, max(args.hosts), logs, args.memory_limit) as scheduler:
            start = time.perf_counter()
            _in_client(topo, ["synth", "--scheduler", scheduler, *common, *sizes], logs, "synth")
            print(f"input written to the object store in {time.perf_counter() - start:.1f} s")
        for hosts in args.hosts:
            with cluster(topo, hosts, logs, args.memory_limit) as scheduler:
                _wait_workers(topo, scheduler, hosts)
                out = f"s3://{BUCKET}/out-{hosts}"
                run_args = ["run", "--scheduler", scheduler, *common, "--out-dir", out,
                            "--num-parts", str(args.num_parts), "--method", args.method]  # fmt: skip
                run_args += ["--save-orig-ids"] if args.save_orig_ids else []
                run_args += ["--partitions-dir"] if args.partitions_dir else []
                run_args += ["--hosts", str(hosts), "--rate", args.rate]
                run_args += ["--task-size", args.task_size] if args.task_size else []
                measured = _in_client(topo, run_args, logs, f"run-{hosts}")
            rows = step_bytes(measured["marks"], hosts)
            print(table(hosts, args.rate, rows, measured.get("forecast")))
            print(f"peak RSS per worker (MB): {sorted(round(v) for v in measured['worker_peak_rss_mb'].values())}")
            if args.trace_s3:
                print(trace_table(logs / "s3trace", measured["marks"], measured.get("forecast")))
            results["runs"].append(
                {
                    "hosts": hosts,
                    "steps": rows,
                    "worker_peak_rss_mb": measured["worker_peak_rss_mb"],
                    "forecast": measured.get("forecast"),
                }
            )
    print(summary(results["runs"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def summary(runs: list[dict[str, Any]]) -> str:
    """Per host count: total time, speed-up over the first (fewest hosts), peak RSS per worker."""
    if not runs:
        return ""
    lines = [f"{'hosts':>5}{'seconds':>9}{'forecast':>10}{'speed-up':>10}{'max RSS/worker MB':>19}{'vs first':>9}"]
    base_s = sum(r["seconds"] for r in runs[0]["steps"])
    base_rss = max(runs[0]["worker_peak_rss_mb"].values())
    for run in runs:
        seconds = sum(r["seconds"] for r in run["steps"])
        forecast = sum(s["seconds"] or 0 for s in (run.get("forecast") or {}).get("stages", []))
        rss = max(run["worker_peak_rss_mb"].values())
        speed_up, rss_ratio = base_s / seconds, rss / base_rss
        lines.append(f"{run['hosts']:>5}{seconds:>9.1f}{forecast:>10.1f}{speed_up:>10.2f}{rss:>19.0f}{rss_ratio:>9.2f}")
    return "\n".join(lines)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(f"bench_network: terminated by signal {signum}")


def _make_bucket(topo: Topology, endpoint: str) -> None:
    code = (
        f"import boto3; boto3.client('s3', endpoint_url={endpoint!r}, aws_access_key_id='testing', "
        f"aws_secret_access_key='testing', region_name='us-east-1').create_bucket(Bucket={BUCKET!r})"
    )
    subprocess.run(topo.endpoints["client"].exec([sys.executable, "-c", code]), check=True)


def _wait_workers(topo: Topology, scheduler: str, n: int) -> None:
    code = f"from distributed import Client; Client({scheduler!r}, timeout=60).wait_for_workers({n}, timeout=120)"
    subprocess.run(topo.endpoints["client"].exec([sys.executable, "-c", code]), check=True, capture_output=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--client":
        client_main(sys.argv[2], sys.argv[3:])
    else:
        main()
