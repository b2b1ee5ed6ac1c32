"""An emulated multi-node cluster: Ray nodes in their own network namespaces, with a
shaped network between them.

    sudo python bench/netem_cluster.py --quick                 # 2 nodes, 1 and 10 Gb/s
    sudo python bench/netem_cluster.py --nodes 3 --rates 200mbit 1gbit
    sudo python bench/netem_cluster.py --quick --save          # bench/results/netem_cluster.md

Needs root (it creates namespaces and interfaces) and the ``ip`` and ``tc`` tools.

Each node is a Linux network namespace holding one ``ray start`` node; a veth pair joins
it to a bridge in the host namespace (a bridge with no address: the host has no route
to the nodes), on a private /24 of its own (``10.231.T.0/24``, ``T`` picked so no
address on the host already uses it). Traffic between nodes leaves
each namespace through its veth, whose egress is shaped with ``tc``: ``tbf`` for the
bandwidth, and ``netem`` for latency when the kernel has it (``--delay``; the kernel of
the machine this was written on has no ``sch_netem``, so there the only latency is the
veth's own, and ``--delay`` says so and stops). The driver runs inside the first node's
namespace, so every byte between spartan workers on different nodes crosses the shaped
links, while pieces between workers of one node stay on that node.

What it shows, per bandwidth: each workload's median time next to the bytes spartan moved
between nodes (measured by the workers) and the optimizer's prediction; the time the
bytes alone account for at that bandwidth (``between nodes / rate``); and how much slower
each workload got from the faster to the slower link, against what its bytes between
nodes predict. Then, at the slowest rate, spartan's node-aware placement (a node's
workers get consecutive indices, so neighbouring tiles share a node) against the nodes
taking turns (``config.group_workers_by_node = False``). Then a recovery run: the last
node is killed (every process in its namespace) in the middle of a k-means, and the
answer must still equal NumPy's.

Only addresses inside the namespaces it made are used; the nodes run with
``RAY_AUTH_MODE=disabled`` because nothing outside them can reach those addresses. At the
end (also after an error or Ctrl-C) it stops every process in its namespaces, deletes the
namespaces, the veths and the bridge, and checks that none is left.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import ipaddress
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy

ROOT = Path(__file__).resolve().parent.parent

OUT = ROOT / "bench" / "out" / "netem_cluster.md"
SAVED = ROOT / "bench" / "results" / "netem_cluster.md"
HEAD_PORT = 6380  # inside the head's namespace: nothing else listens there


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def _tc(*args: str) -> None:
    done = subprocess.run(["tc", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"tc {' '.join(args)}: {done.stderr.strip()}")


def has_qdisc(kind: str) -> bool:
    """Whether this kernel offers the ``tc`` queueing discipline ``kind``."""
    probe = EmulatedNetwork(1)
    with probe:
        try:
            args = {"netem": ["netem", "delay", "1ms"], "tbf": ["tbf", "rate", "1gbit"]}[kind]
            if kind == "tbf":
                args += ["burst", "256kb", "latency", "50ms"]
            _tc("-n", probe.names[0], "qdisc", "replace", "dev", "eth0", "root", *args)
        except RuntimeError:
            return False
    return True


class EmulatedNetwork:
    """``n`` network namespaces joined by veth pairs to one bridge, removed on exit.

    Names carry this process's id, so two runs never touch each other's interfaces.
    """

    def __init__(self, n: int) -> None:
        tag = os.getpid() % 100_000
        self.names = [f"spnet{tag}-{i}" for i in range(n)]
        self.bridge = f"spbr{tag}"
        self.veths = [f"spv{tag}x{i}" for i in range(n)]
        self.subnet = _free_subnet()
        self.addresses = [str(h) for h in list(self.subnet.hosts())[10 : 10 + n]]

    def __enter__(self) -> EmulatedNetwork:
        try:
            # the bridge gets no address: the host has no route into the subnet, so no
            # process outside the namespaces can reach the nodes (which run without
            # token authentication)
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("link", "set", self.bridge, "up")
            for ns, veth, addr in zip(self.names, self.veths, self.addresses):
                _ip("netns", "add", ns)
                peer = veth.replace("spv", "spp")
                _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
                _ip("link", "set", peer, "netns", ns)
                _ip("-n", ns, "link", "set", peer, "name", "eth0")
                _ip("-n", ns, "addr", "add", f"{addr}/{self.subnet.prefixlen}", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("link", "set", veth, "master", self.bridge)
                _ip("link", "set", veth, "up")
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def shape(self, rate: str, delay: str | None = None) -> None:
        """Every node's outgoing link: ``rate`` (tc's units, e.g. ``1gbit``), plus ``delay``."""
        for ns in self.names:
            if delay:
                args = ["netem", "delay", delay, "rate", rate]
            else:
                # a burst of one millisecond at the rate (at least 64 KB) keeps tbf exact
                # for large transfers without capping short ones below the rate
                burst = max(64_000, _bits(rate) // 8 // 1000)
                args = ["tbf", "rate", rate, "burst", str(burst), "latency", "100ms"]
            _tc("-n", ns, "qdisc", "replace", "dev", "eth0", "root", *args)

    def pids(self, ns: str) -> list[int]:
        """The processes living in namespace ``ns``."""
        out = _ip("netns", "pids", ns, check=False).stdout
        return [int(p) for p in out.split()]

    def kill(self, ns: str, grace: float = 10.0) -> None:
        """Stop every process in ``ns``: SIGTERM, then SIGKILL what is left after ``grace``."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            pids = self.pids(ns)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while self.pids(ns) and time.monotonic() < deadline:
                time.sleep(0.2)  # (polling the namespace until it is empty)
            if not self.pids(ns):
                return

    def remove(self) -> None:
        """Stop the namespaces' processes and delete everything this network made."""
        for ns in self.names:
            if _ip("netns", "pids", ns, check=False).returncode == 0:
                self.kill(ns)
                if not self.pids(ns):  # (else kept, so leftovers() names what survived)
                    _ip("netns", "del", ns, check=False)  # (takes its end of the veth)
        for veth in self.veths:
            _ip("link", "del", veth, check=False)
        _ip("link", "del", self.bridge, check=False)

    def leftovers(self) -> list[str]:
        """What of this network still exists (empty after :meth:`remove`)."""
        spaces = _ip("netns", "list", check=False).stdout.split()
        links = _ip("-o", "link", "show", check=False).stdout
        left = [ns for ns in self.names if ns in spaces]
        left += [name for name in [*self.veths, self.bridge] if f" {name}:" in links]
        left += [f"pid {p}" for ns in self.names if ns in spaces for p in self.pids(ns)]
        return left


def _bits(rate: str) -> int:
    units = {"kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "bit": 1}
    for unit, scale in units.items():
        if rate.endswith(unit):
            return int(float(rate[: -len(unit)]) * scale)
    raise ValueError(f"a rate like 1gbit or 200mbit, not {rate!r}")


def _free_subnet() -> ipaddress.IPv4Network:
    used = _ip("-o", "-4", "addr", "show").stdout
    taken = [ipaddress.ip_interface(w).network for w in used.split() if "/" in w and "." in w]
    for t in range(2, 255):
        net = ipaddress.ip_network(f"10.231.{t}.0/24")
        if not any(net.overlaps(other) for other in taken):
            return net
    raise RuntimeError("no free 10.231.T.0/24 subnet for the emulated network")


@contextlib.contextmanager
def ray_nodes(net: EmulatedNetwork, cpus: int) -> Iterator[tuple[str, dict[str, str]]]:
    """A Ray head in the first namespace and a node in each other one; yields the head's
    address and the environment every process of the cluster (the driver too) runs with."""
    ray_bin = str(Path(sys.executable).with_name("ray"))
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_ACCEPT_TOOLS_WARNING="1")
    env.pop("RAY_ADDRESS", None)
    # the nodes' workers import spartan from this checkout, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    temp_dir = tempfile.mkdtemp(prefix="spartan-netem-")
    head = f"{net.addresses[0]}:{HEAD_PORT}"
    common = ["--num-cpus", str(cpus), "--disable-usage-stats"]
    try:
        for i, (ns, addr) in enumerate(zip(net.names, net.addresses)):
            where = (
                ["--head", f"--port={HEAD_PORT}", f"--temp-dir={temp_dir}",
                 "--include-dashboard=false"]
                if i == 0
                else [f"--address={head}"]
            )  # fmt: skip
            subprocess.run(
                ["ip", "netns", "exec", ns, ray_bin, "start", f"--node-ip-address={addr}",
                 *where, *common],
                env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
        yield head, env
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"a Ray node did not start:\n{e.stderr[-3000:]}") from None
    finally:
        for ns in reversed(net.names):
            net.kill(ns)
        shutil.rmtree(temp_dir, ignore_errors=True)


def run_driver(net: EmulatedNetwork, env: dict[str, str], *args: str) -> Any:
    """Run this script's driver part inside the head's namespace; its last line, parsed."""
    argv = ["ip", "netns", "exec", net.names[0], sys.executable, __file__, *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise RuntimeError(f"the driver failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- inside the cluster


def _driver_paths() -> None:
    """The examples (k-means) and bench/scaling.py for the driver, which runs as a
    script; importing this module (its tests do) leaves ``sys.path`` alone."""
    for path in (ROOT, ROOT / "examples", ROOT / "bench"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


def _workloads(quick: bool) -> dict[str, tuple[Any, Any]]:
    """name -> (program on an array module, inputs built with NumPy)."""
    import kmeans as km
    from harness import with_module

    rng = numpy.random.default_rng(0)
    side = 1500 if quick else 4000
    rows = 250_000 if quick else 2_000_000

    def square() -> tuple:
        return (rng.standard_normal((side, side)),)

    def points() -> tuple:
        return (rng.standard_normal((rows, 16)),)

    def kmeans_step(sp: Any, x: Any) -> Any:
        centers, _, inertia = with_module(km.kmeans, sp)(x, 8, 2)
        return centers, inertia

    return {
        "elementwise": (lambda sp, x: ((x * 2 + 1) ** 2).sum(), square),
        "stencil": (lambda sp, x: (x[2:] - 2 * x[1:-1] + x[:-2]).sum(axis=1), square),
        "transpose_add": (lambda sp, x: x + x.T, square),
        "matmul": (lambda sp, x: x @ x, square),
        "kmeans": (kmeans_step, points),
    }


def driver(address: str, per_node: int, quick: bool, repeats: int, grouped: bool) -> None:
    """``per_node`` spartan workers on each node, a node's workers consecutive
    (``grouped``) or the nodes taking turns; print each workload's row as JSON."""
    import ray
    from scaling import run_on_spartan

    import spartan

    ray.init(address=address, log_to_driver=False)
    spartan.config.group_workers_by_node = grouped
    be = spartan.init(backend="ray", num_workers=per_node * len(ray.nodes()))
    rows = []
    for name, (program, make) in _workloads(quick).items():
        inputs = make()
        secs, stats = run_on_spartan(program, inputs, repeats)
        rows.append(
            {
                "workload": name,
                "input": " x ".join(map(str, inputs[0].shape)),
                "seconds": secs,
                "moved": stats["bytes_moved"],
                "between_nodes": stats["bytes_moved_between_nodes"],
                "predicted": stats["predicted"],
                "cluster": f"{be.nworkers} workers / {len(set(be.nodes))} nodes",
                "order": "".join(str(sorted(set(be.nodes)).index(n)) for n in be.nodes),
            }
        )
    spartan.shutdown()
    ray.shutdown()
    print(json.dumps(rows))


def _lloyd(xp: Any, x: Any, k: int, iters: int, after: Any = None) -> Any:
    """``iters`` Lloyd steps from the first ``k`` points, each step's centers computed
    before the next starts; ``after(i)`` runs after step ``i``."""
    centers = x[:k]
    for i in range(iters):
        dist = (centers * centers).sum(axis=1) - 2 * (x @ centers.T)
        onehot = (dist.argmin(axis=1)[:, None] == xp.arange(k)).astype(x.dtype)
        counts = onehot.sum(axis=0)
        centers = xp.where(
            counts[:, None] > 0, (onehot.T @ x) / xp.maximum(counts, 1)[:, None], centers
        )
        centers = numpy.asarray(centers)
        if after is not None:
            after(i)
    return centers


def recovery_driver(address: str, victim: str, quick: bool) -> None:
    """k-means with the last node killed (every process in namespace ``victim``) after
    its second step: the answer must equal NumPy's."""
    import ray

    import spartan

    ray.init(address=address, log_to_driver=False)
    be = spartan.init(backend="ray", num_workers=len(ray.nodes()))
    nodes_before = len(set(be.nodes))
    x = numpy.random.default_rng(1).standard_normal((100_000 if quick else 1_000_000, 16))
    want = _lloyd(numpy, x, 8, 6)
    sx = spartan.asarray(x)
    spartan.evaluate(sx)

    def kill_node(step: int) -> None:
        if step == 1:
            pids = subprocess.run(["ip", "netns", "pids", victim], capture_output=True, text=True)
            for pid in map(int, pids.stdout.split()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    t0 = time.perf_counter()
    got = _lloyd(spartan, sx, 8, 6, after=kill_node)
    secs = time.perf_counter() - t0
    alive = sum(n["Alive"] for n in ray.nodes())
    spartan.shutdown()
    ray.shutdown()
    print(
        json.dumps(
            {
                "nodes_before": nodes_before,
                "nodes_alive_after": alive,
                "equal_to_numpy": bool(numpy.allclose(got, want)),
                "seconds": round(secs, 3),
            }
        )
    )


# ---------------------------------------------------------------- reporting


def _table(columns: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths]), *map(line, rows)])


def _mb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e6:,.2f}"


def report(
    by_rate: dict[str, list[dict[str, Any]]],
    turns: list[dict[str, Any]] | None,
    recovery: dict[str, Any] | None,
) -> str:
    """The tables: per rate, the slow-down from the fastest to the slowest rate, grouped
    workers against nodes taking turns (``turns``, at the slowest rate), recovery."""
    out = []
    columns = ["workload", "input", "cluster", "rate", "median s", "moved MB",
               "between nodes MB", "predicted MB", "bytes / rate s"]  # fmt: skip
    rows = []
    for rate, results in by_rate.items():
        for r in results:
            rows.append(
                [r["workload"], r["input"], r["cluster"], rate, f"{r['seconds']:.3f}",
                 _mb(r["moved"]), _mb(r["between_nodes"]), _mb(r["predicted"]),
                 f"{8 * r['between_nodes'] / _bits(rate):.3f}"]
            )  # fmt: skip
    out.append(_table(columns, rows))
    rates = sorted(by_rate, key=_bits)
    if len(rates) >= 2:
        slow, fast = rates[0], rates[-1]
        expect = 8 * (1 / _bits(slow) - 1 / _bits(fast))
        rows = []
        for s, f in zip(by_rate[slow], by_rate[fast]):
            grew, predicted = s["seconds"] - f["seconds"], s["between_nodes"] * expect
            rows.append(
                [s["workload"], _mb(s["between_nodes"]), f"{grew:+.3f}", f"{predicted:.3f}"]
            )
        out += [
            "",
            f"From {fast} to {slow}: how much slower each workload got, against the time its "
            f"bytes between nodes take at the slower rate less at the faster one.",
            "",
            _table(["workload", "between nodes MB", "measured s", "from bytes s"], rows),
        ]
    if turns is not None:
        slow = rates[0]
        rows = [
            [g["workload"], g["order"], t["order"], _mb(g["between_nodes"]),
             _mb(t["between_nodes"]), f"{g['seconds']:.3f}", f"{t['seconds']:.3f}"]
            for g, t in zip(by_rate[slow], turns)
        ]  # fmt: skip
        out += [
            "",
            f"Node-aware placement at {slow}: a node's workers consecutive (spartan's "
            "default), against the nodes taking turns (`config.group_workers_by_node = "
            "False`); `order` is each worker's node.",
            "",
            _table(
                [
                    "workload",
                    "grouped order",
                    "turns order",
                    "grouped MB between nodes",
                    "turns MB between nodes",
                    "grouped s",
                    "turns s",
                ],
                rows,
            ),  # fmt: skip
        ]
    if recovery is not None:
        out += [
            "",
            "Recovery: the last node killed (every process in its namespace) after the "
            "second of six k-means steps, each step's centers fetched:",
            "",
            "    " + json.dumps(recovery),
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small inputs")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--workers", type=int, default=2, help="spartan workers per node")
    p.add_argument("--rates", nargs="+", default=["1gbit", "10gbit"])
    p.add_argument("--delay", help="added latency per link, e.g. 0.5ms (needs sch_netem)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-recovery", action="store_true")
    p.add_argument("--save", action="store_true", help=f"write {SAVED.relative_to(ROOT)}")
    p.add_argument("--driver", metavar="ADDRESS", help=argparse.SUPPRESS)
    p.add_argument("--turns", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--recovery-driver", nargs=2, metavar=("ADDRESS", "NS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.driver or args.recovery_driver:
        _driver_paths()
    if args.driver:
        driver(args.driver, args.workers, args.quick, args.repeats, not args.turns)
        return 0
    if args.recovery_driver:
        recovery_driver(*args.recovery_driver, args.quick)
        return 0
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        p.error("needs root and the ip and tc tools (it creates network namespaces)")
    if args.delay and not has_qdisc("netem"):
        p.error("--delay needs tc's netem, which this kernel does not have (no sch_netem)")
    for rate in args.rates:
        _bits(rate)
    flags = ["--repeats", str(args.repeats), "--workers", str(args.workers)]
    flags += ["--quick"] if args.quick else []
    by_rate: dict[str, list[dict[str, Any]]] = {}
    turns = recovery = None
    net = EmulatedNetwork(args.nodes)
    try:
        # a spare CPU per node: a lost worker's replacement has somewhere to start
        with net, ray_nodes(net, args.workers + 1) as (head, env):
            for rate in sorted(args.rates, key=_bits, reverse=True):
                net.shape(rate, args.delay)
                by_rate[rate] = run_driver(net, env, "--driver", head, *flags)
                print(f"{rate}: done", flush=True)
            if args.workers > 1:  # (the slowest rate is still on)
                turns = run_driver(net, env, "--driver", head, "--turns", *flags)
                print("nodes taking turns: done", flush=True)
            if not args.no_recovery:
                recovery = run_driver(net, env, "--recovery-driver", head, net.names[-1], *flags)
    finally:
        left = net.leftovers()
        print("left behind:", ", ".join(left) if left else "nothing (checked)")
    text = report(by_rate, turns, recovery)
    print(text)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/netem_cluster.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = [
        "# Emulated multi-node cluster (network namespaces, shaped links)",
        "",
        f"Run: {when}; machine: {os.cpu_count()}-core {platform.machine()}; "
        f"command: `{command}`. Medians of {args.repeats} runs after a warm-up; every "
        "result checked against NumPy. `moved` and `between nodes` are measured by the "
        "workers; `predicted` is the optimizer's total for the plan; `bytes / rate` is "
        "the time the bytes between nodes take at the link's rate.",
        "",
    ]
    target = SAVED if args.save else OUT
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(header) + text + "\n")
    print(f"wrote {target.relative_to(ROOT)}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
