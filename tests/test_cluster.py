"""A two-node Ray cluster on this machine, started as the README says (token
authentication on, one token shared by every node, the dashboard on localhost): workers
on both nodes, bytes between nodes counted apart, an example run unchanged through
``ray job submit``, and clients without the token refused.

Each node runs ``ray start --block`` in its own process group, so the test stops just
its own cluster (``ray stop`` would also stop the test session's Ray).

Two drivers on one cluster: the second gets the CPUs the first left free, or says at once
how to share (it used to wait 120 s for the first driver's workers).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import pytest

from spartan.backend import session
from spartan.backend.ray_backend import free_workers, worker_slots

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DRIVER = """
import time, ray
ray.init(address="127.0.0.1:{port}")
deadline = time.time() + 90
while sum(n["Alive"] for n in ray.nodes()) < 2 and time.time() < deadline:
    time.sleep(1)
import spartan as sp
be = sp.init(address="127.0.0.1:{port}")  # joined: a worker per free CPU, 1 on each node
assert be.nworkers == 2 and len(set(be.nodes)) == 2, be.nodes
sp.config.tiles_per_worker = 1
a = sp.ones((64, 64), tiling="row")
b = sp.ones((64, 64), tiling="column")
c = a + b
assert float(c.sum()) == 2 * 64 * 64
s = sp.stats()
print("between nodes", s["bytes_moved_between_nodes"], "moved", s["bytes_moved"])
assert s["bytes_moved_between_nodes"] == s["bytes_moved"] > 0
# init again: the new default share counts the CPUs the old workers are giving back
be = sp.init(address="127.0.0.1:{port}")
assert be.nworkers == 2 and float(sp.ones(10).sum()) == 10, be.nworkers
"""


def _run_python(code: str, env: dict[str, str]) -> None:
    """Run ``code`` in a new interpreter; its output is in the error if it fails."""
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, timeout=150, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"the cluster did not come up:\n{done.stderr[-2000:]}")


@pytest.fixture(scope="module")
def cluster():
    if not os.path.exists(RAY):
        pytest.skip("the ray command line is not installed (pip install 'ray[default]')")
    # the README's recipe: token authentication on, every node and client given the token
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    port, dash = _free_port(), _free_port()
    common = ["--num-cpus=1", "--disable-usage-stats", "--block"]

    def agent_ports() -> list[str]:  # each node's agents on their own free ports
        return [
            f"--dashboard-agent-listen-port={_free_port()}",
            f"--dashboard-agent-grpc-port={_free_port()}",
            f"--runtime-env-agent-port={_free_port()}",
            f"--metrics-export-port={_free_port()}",
        ]

    procs = [
        subprocess.Popen(
            [
                RAY,
                "start",
                "--head",
                f"--port={port}",
                f"--dashboard-port={dash}",
                "--include-dashboard=true",
                *agent_ports(),
                *common,
            ],
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        # the head is up once a driver can join it (a fixed sleep was too short under load)
        _run_python(
            f"import ray, time; t = time.time() + 90\n"
            "while True:\n"
            "    try:\n"
            f"        ray.init(address='127.0.0.1:{port}'); break\n"
            "    except Exception:\n"
            "        if time.time() > t: raise\n"
            "        time.sleep(1)",
            env,
        )
        procs.append(
            subprocess.Popen(
                [RAY, "start", f"--address=127.0.0.1:{port}", *agent_ports(), *common],
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        wait = (
            f"import ray, time; ray.init(address='127.0.0.1:{port}'); t = time.time() + 90\n"
            "while sum(n['Alive'] for n in ray.nodes()) < 2 and time.time() < t: time.sleep(1)\n"
            "assert sum(n['Alive'] for n in ray.nodes()) == 2"
        )
        _run_python(wait, env)
        yield env, port, dash
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        # one shared grace period: a node still stopping after it is killed with its
        # whole process group (every process of a node is in its group)
        deadline = time.monotonic() + 8
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_workers_on_every_node_and_bytes_between_nodes(cluster):
    env, port, _ = cluster
    out = subprocess.run(
        [sys.executable, "-c", DRIVER.format(port=port)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "between nodes" in out.stdout


def test_example_runs_unchanged_under_ray_job_submit(cluster):
    env, _, dash = cluster
    submit = [RAY, "job", "submit", f"--address=http://127.0.0.1:{dash}", "--working-dir", "."]
    # the interpreter under test (a bare "python" is whichever is first on PATH)
    example = [sys.executable, "examples/kmeans.py", "--n", "20000", "--iters", "2"]
    for _attempt in range(15):  # the job agent may still be starting on a busy machine
        out = subprocess.run(
            [*submit, "--", *example],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=240,
        )
        if "No available agent" not in out.stdout + out.stderr:
            break
        time.sleep(10)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "k-means" in out.stdout and "succeeded" in out.stdout


def test_clients_without_the_token_are_refused(cluster):
    env, port, dash = cluster
    assert session.cluster_auth_mode(f"127.0.0.1:{port}") == "token"
    jobs = f"http://127.0.0.1:{dash}/api/jobs/"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(jobs, timeout=30)
    assert refused.value.code == 401  # (no token; a wrong one: 403)
    with_token = urllib.request.Request(
        jobs, headers={"Authorization": f"Bearer {env['RAY_AUTH_TOKEN']}"}
    )
    with urllib.request.urlopen(with_token, timeout=30) as answer:
        assert answer.status == 200


# ---- two drivers on one cluster -------------------------------------------------------


@pytest.fixture
def nodes(monkeypatch):
    """A fake cluster: ``nodes.total`` and ``nodes.free`` resources by node id."""
    import ray

    class Nodes:
        total = {"a": {"CPU": 4.0}, "b": {"CPU": 2.0}, "c": {"CPU": 2.0, "GPU": 2.0}}
        free = {"a": {"CPU": 4.0}, "b": {"CPU": 2.0}, "c": {"CPU": 2.0, "GPU": 2.0}}

    listed = lambda: [  # noqa: E731
        {"NodeID": k, "Alive": True, "Resources": v} for k, v in Nodes.total.items()
    ]
    monkeypatch.setattr(ray, "nodes", listed)
    monkeypatch.setattr(ray._private.state, "available_resources_per_node", lambda: Nodes.free)
    return Nodes


def test_the_default_share_is_what_is_free(nodes):
    assert free_workers(1, 0) == 8 and worker_slots(None, 1, 0) == [*"aaaabbcc"]
    nodes.free = {"a": {"CPU": 0.0}, "b": {"CPU": 1.5}, "c": {"CPU": 2.0, "GPU": 0.5}}
    assert free_workers(1, 0) == 3
    assert free_workers(0.5, 0) == 7
    assert free_workers(1, 1) == 0  # the GPUs are held
    # workers that fit in what is free go there, not behind the other driver's
    assert worker_slots(3, 1, 0) == [*"bcc"]
    # more than is free: spread over the totals (they wait for the rest)
    assert worker_slots(None, 1, 0) == [*"aaaabbcc"]
    # workers holding no CPU: one per core, wherever
    assert free_workers(0, 0) == 8


def test_nodes_take_turns_when_workers_are_not_grouped(nodes):
    assert worker_slots(None, 1, 0, grouped=False) == [*"abcabcaa"]
    assert sorted(worker_slots(None, 1, 0, grouped=False)) == worker_slots(None, 1, 0)


def test_no_free_cpu_says_how_to_share(nodes, monkeypatch):
    import ray

    nodes.free = {k: {"CPU": 0.0} for k in nodes.total}
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 8.0})
    monkeypatch.setattr(ray, "available_resources", lambda: {})
    with pytest.raises(RuntimeError, match="held by other drivers") as info:
        session._free_share(1, 0)
    for advice in ("8 of 8", "num_workers=", "cpus_per_worker=0", "stop the other drivers"):
        assert advice in str(info.value)


#: a second driver joining the test session's Ray instance, whose CPUs ray_backend holds
SECOND = textwrap.dedent(
    """
    import sys
    import spartan

    try:
        be = spartan.init(address=sys.argv[1], **eval(sys.argv[2]))
    except RuntimeError as e:
        print("refused:", e)
        raise SystemExit(0)
    x = spartan.arange(1000, dtype=float)
    assert float((x * 2).sum()) == 999000.0
    print("workers", be.nworkers)
    """
)


def test_a_second_driver_shares_the_cluster_or_says_how(ray_backend):
    import ray

    assert ray.available_resources().get("CPU", 0) == 0  # the first driver holds them all
    gcs = ray.get_runtime_context().gcs_address

    def second(**options) -> str:
        done = subprocess.run(
            [sys.executable, "-c", SECOND, gcs, repr(options)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=100,  # (a driver waiting for the CPUs gave up only after 120 s)
        )
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    refused = second()
    assert refused.startswith("refused:") and "cpus_per_worker=0" in refused, refused
    assert second(cpus_per_worker=0) == "workers 2"  # one a core, sharing them
    assert ray_backend.nworkers == 2  # the first driver is untouched
