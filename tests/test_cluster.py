"""A two-node Ray cluster on this machine: workers on both nodes, bytes between nodes
counted apart, and an example run unchanged through ``ray job submit``.

Each node runs ``ray start --block`` in its own process group, so the test stops just
its own cluster (``ray stop`` would also stop the test session's Ray).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

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
be = sp.init(address="127.0.0.1:{port}", num_workers=2)
assert len(set(be.nodes)) == 2, be.nodes
sp.config.tiles_per_worker = 1
a = sp.ones((64, 64), tiling="row")
b = sp.ones((64, 64), tiling="column")
c = a + b
assert float(c.sum()) == 2 * 64 * 64
s = sp.stats()
print("between nodes", s["bytes_moved_between_nodes"], "moved", s["bytes_moved"])
assert s["bytes_moved_between_nodes"] == s["bytes_moved"] > 0
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
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
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
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


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
    example = ["python", "examples/kmeans.py", "--n", "20000", "--iters", "2"]
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
