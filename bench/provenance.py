"""Where and how a benchmark ran: the first line of every results file.

>>> from bench.provenance import run_header
>>> run_header("python bench/small.py --quick", "median of 3")   # doctest: +SKIP
'2026-11-27 10:00 UTC; machine: 2-core x86_64, 24 GB, load average 1.0; HEAD ...'
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git_state() -> str:
    """The checkout's short HEAD, and whether it has uncommitted changes."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True, text=True
        )
        return out.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" with uncommitted changes" if git("status", "--porcelain") else "")


def memory_gb() -> float:
    """This machine's memory in GB (NaN where /proc/meminfo cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            return int(f.readline().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def run_header(command: str, extra: str) -> str:
    """Date, machine, load, HEAD and command of this run, then ``extra``."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{when}; machine: {os.cpu_count()}-core {platform.machine()}, {memory_gb():.0f} GB, "
        f"load average {os.getloadavg()[0]:.1f}; HEAD {git_state()}; "
        f"command: `{command.strip()}`; {extra}"
    )


def write_report(name: str, title: str, header: str, report: str, notes: str, save: bool) -> Path:
    """Print ``report`` and ``notes``, and write the results file ``<name>.md`` (title,
    provenance ``header``, table, notes): into ``bench/results/`` with ``--save``, else
    into the ignored ``bench/out/``. Returns the path written."""
    print("\n" + report + "\n" + notes)
    out = ROOT / "bench" / ("results" if save else "out") / f"{name}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# {title}\n\n{header}\n\n{report}\n{notes}", encoding="utf-8")
    print(f"written to {out.relative_to(ROOT)}")
    return out


def seconds(t: float | None) -> str:
    """A time in a results table: ``1.23 s``, or ``-`` where there is none."""
    return "-" if t is None else f"{t:.2f} s"
