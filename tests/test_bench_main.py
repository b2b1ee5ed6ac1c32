"""`python -m bench NAME` runs bench/NAME.py (the benchmark spec's way to run one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_runs_the_named_script_with_its_arguments() -> None:
    done = _bench("core", "--help")
    assert done.returncode == 0, done.stderr
    assert "--gib" in done.stdout  # core.py's own option


def test_an_unknown_name_lists_the_names() -> None:
    done = _bench("nosuch")
    assert done.returncode == 2
    assert "apps" in done.stderr and "core" in done.stderr
