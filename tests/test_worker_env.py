"""The environment Ray workers start with: streamed big copies and their niceness."""

from __future__ import annotations

import os

import pytest

import spartan
from spartan.backend.streaming_copies import THRESHOLD_TUNABLE, glibc_tunables


def test_big_copies_stream_unless_the_user_set_the_threshold():
    assert glibc_tunables(4 << 20, None) == f"{THRESHOLD_TUNABLE}=0x400000"
    mine = "glibc.malloc.arena_max=2"
    assert glibc_tunables(1 << 20, mine) == f"{mine}:{THRESHOLD_TUNABLE}=0x100000"
    assert glibc_tunables(4 << 20, f"{mine}:{THRESHOLD_TUNABLE}=0x10") is None
    assert glibc_tunables(0, None) is None


def test_worker_env_sets_niceness_and_copies_when_opted_in():
    pytest.importorskip("ray")
    from spartan.backend.ray_backend import worker_env

    with spartan.config.set(worker_niceness=None, worker_streaming_copy_bytes=None):
        assert worker_env({}) == {}  # the defaults (docs/tuning.md)
    with spartan.config.set(worker_niceness=0, worker_streaming_copy_bytes=4 << 20):
        env = worker_env({})
        assert env["RAY_worker_niceness"] == "0"
        assert env["GLIBC_TUNABLES"] == f"{THRESHOLD_TUNABLE}=0x400000"
        assert "RAY_worker_niceness" not in worker_env({"RAY_worker_niceness": "5"})


def test_opted_in_ray_workers_run_at_the_drivers_niceness_not_rays_15(_ray_session):
    from spartan.backend.ray_backend import RayBackend

    with spartan.config.set(worker_niceness=0):
        be = RayBackend(num_workers=1, num_cpus_per_worker=0)  # (the session's hold the CPUs)
    try:
        assert os.getpriority(os.PRIO_PROCESS, be.pids[0]) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        be.shutdown()
