"""bench/netem_cluster.py's emulated network: namespaces joined by shaped veths, a byte
crossing from one to another, and nothing left behind. Needs root and ``ip``/``tc``."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# loaded from its file: bench/ on sys.path would shadow packages (bench/sklearn.py)
_spec = importlib.util.spec_from_file_location(
    "netem_cluster", Path(__file__).resolve().parent.parent / "bench" / "netem_cluster.py"
)
assert _spec is not None and _spec.loader is not None
netem_cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(netem_cluster)

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"),
    reason="creating network namespaces needs root and the ip and tc tools",
)

SERVER = """
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 7777))
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
c.sendall(b"across")
c.close()
"""

CLIENT = """
import socket, sys
c = socket.create_connection((sys.argv[1], 7777), timeout=10)
print(c.recv(16).decode())
"""


def test_rates_parse() -> None:
    assert netem_cluster._bits("1gbit") == 10**9
    assert netem_cluster._bits("200mbit") == 2 * 10**8
    with pytest.raises(ValueError, match="rate like"):
        netem_cluster._bits("fast")


@needs_root
def test_a_byte_crosses_the_shaped_link_and_nothing_is_left() -> None:
    net = netem_cluster.EmulatedNetwork(2)
    with net:
        spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        assert all(ns in spaces.stdout for ns in net.names)
        net.shape("100mbit")
        qdisc = subprocess.run(
            ["tc", "-n", net.names[0], "qdisc", "show", "dev", "eth0"],
            capture_output=True,
            text=True,
        )
        assert "tbf" in qdisc.stdout and "100Mbit" in qdisc.stdout
        server = subprocess.Popen(
            ["ip", "netns", "exec", net.names[1], sys.executable, "-c", SERVER, net.addresses[1]],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "listening"
        got = subprocess.run(
            ["ip", "netns", "exec", net.names[0], sys.executable, "-c", CLIENT, net.addresses[1]],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert got.stdout.strip() == "across", got.stderr
        assert server.wait(timeout=30) == 0
        # the server was the namespace's only process
        assert net.pids(net.names[1]) == []
    assert net.leftovers() == []
