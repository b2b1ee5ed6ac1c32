"""Who may drive a cluster spartan starts or joins.

``cluster_auth_mode`` asks a GCS the way an outsider would (no token); joining a cluster
that answers such a client on a network address warns (``InsecureClusterWarning``).
Spartan's own instance starts with no dashboard (nor its job server) unless asked.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import warnings

import pytest

from spartan.backend import session


@pytest.fixture
def probe(monkeypatch):
    """``cluster_auth_mode`` answering ``probe.mode``, and the addresses it was asked."""

    class Probe:
        mode = "disabled"
        asked: list[str] = []

    def fake(gcs_address, timeout=5.0):
        Probe.asked.append(gcs_address)
        return Probe.mode

    monkeypatch.setattr(session, "cluster_auth_mode", fake)
    return Probe


def test_joining_an_open_cluster_on_a_network_address_warns(probe):
    with pytest.warns(session.InsecureClusterWarning, match="RAY_AUTH_TOKEN") as got:
        session.check_cluster_security("auto", "10.1.2.3:6379")
    assert "10.1.2.3:6379" in str(got[0].message) and probe.asked == ["10.1.2.3:6379"]
    assert issubclass(session.InsecureClusterWarning, RuntimeWarning)


@pytest.mark.parametrize(
    "mode, gcs",
    [
        ("token", "10.1.2.3:6379"),
        ("unknown", "10.1.2.3:6379"),
        ("disabled", "127.0.0.1:6379"),
        ("disabled", "[::1]:6379"),
        ("disabled", "localhost:6379"),
    ],
)
def test_no_warning_with_a_token_without_an_answer_or_on_loopback(probe, mode, gcs):
    probe.mode = mode
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session.check_cluster_security("auto", gcs)


def test_joining_goes_through_the_check_and_a_start_has_no_dashboard(monkeypatch):
    """``_ensure_ray``: a join is checked (with the GCS address Ray reports); an own
    start is not, and asks Ray for no dashboard unless the user does."""
    import ray

    calls, checked = [], []

    class Context:
        gcs_address = "10.9.8.7:6379"

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setattr(ray, "get_runtime_context", lambda: Context())
    monkeypatch.setattr(session, "_record_ray_processes", lambda: None)
    monkeypatch.setattr(session, "reap_dead_ray_instances", lambda *a: [])
    monkeypatch.setattr(session, "check_cluster_security", lambda *a: checked.append(a))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def args(address=None, **ray_options):
        return session._resolve(address, None, "ray", None, 1.0, ray_options)

    assert session._ensure_ray(args("10.9.8.7:6379"))
    assert checked == [("10.9.8.7:6379", "10.9.8.7:6379")]
    assert "include_dashboard" not in calls[-1]  # Ray's own default when joining
    assert session._ensure_ray(args())
    assert calls[-1]["address"] == "local" and calls[-1]["include_dashboard"] is False
    assert session._ensure_ray(args(include_dashboard=True, log_to_driver=False))
    assert calls[-1]["include_dashboard"] is True and calls[-1]["log_to_driver"] is False
    assert len(checked) == 1


def test_the_probe_reads_this_session_s_cluster(_ray_session):
    """Against a real GCS: the test session's Ray instance, whose mode this process set."""
    import ray
    from ray._raylet import AuthenticationMode, get_authentication_mode

    expected = "token" if get_authentication_mode() == AuthenticationMode.TOKEN else "disabled"
    assert session.cluster_auth_mode(ray.get_runtime_context().gcs_address) == expected


def test_the_probe_says_unknown_where_nothing_answers():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: the connection is refused
        assert session.cluster_auth_mode(f"127.0.0.1:{port}", timeout=5) == "unknown"


def test_an_instance_without_authentication_is_seen_open():
    """A real Ray instance started with RAY_AUTH_MODE=disabled answers a client with no
    token; joining it from another address than loopback warns."""
    script = textwrap.dedent(
        """
        import warnings
        import ray
        from spartan.backend import session

        ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
        gcs = ray.get_runtime_context().gcs_address
        print(session.cluster_auth_mode(gcs))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            session.check_cluster_security("auto", gcs)
        open_to_others = not session._is_loopback(gcs.rsplit(":", 1)[0])
        assert [w.category for w in got] == [session.InsecureClusterWarning] * open_to_others
        print("checked")
        """
    )
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.split() == ["disabled", "checked"], done.stdout + done.stderr[-3000:]
