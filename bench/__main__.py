"""Run a benchmark by name, from the repository root.

python -m bench apps --quick        # the same as: python bench/apps.py --quick
python -m bench                     # the names
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAMES = sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in NAMES:
        print(f"usage: python -m bench NAME [ARGS...]; NAME: {' '.join(NAMES)}", file=sys.stderr)
        return 2
    path = HERE / f"{argv[0]}.py"
    sys.argv = [str(path), *argv[1:]]
    sys.path.insert(0, str(HERE))  # as when the script is run by its path
    runpy.run_path(str(path), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
