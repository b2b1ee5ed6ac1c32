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


def test_worker_env_sets_niceness_and_copies_unless_told_otherwise(monkeypatch):
    pytest.importorskip("ray")
    from spartan.backend.ray_backend import worker_env

    env = worker_env({})
    assert env["RAY_worker_niceness"] == "0"
    assert env["GLIBC_TUNABLES"] == f"{THRESHOLD_TUNABLE}=0x400000"
    assert "RAY_worker_niceness" not in worker_env({"RAY_worker_niceness": "5"})
    monkeypatch.setattr(spartan.config, "worker_niceness", None)
    monkeypatch.setattr(spartan.config, "worker_streaming_copy_bytes", None)
    assert worker_env({}) == {}


def test_ray_workers_run_at_the_drivers_niceness_not_rays_15(ray_backend):
    assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in ray_backend.pids] == [
        os.getpriority(os.PRIO_PROCESS, 0)
    ] * ray_backend.nworkers
