"""The ``spartan`` command: facts about the installation and the cluster.

$ spartan info                 # versions, backend, workers and nodes
$ spartan info --address auto  # the same for a running Ray cluster
"""

from __future__ import annotations

import argparse
import platform
import sys


def info(args: argparse.Namespace) -> int:
    import numpy
    import ray

    import spartan

    print(f"spartan  {spartan.__version__}")
    print(f"python   {platform.python_version()}  numpy {numpy.__version__}  ray {ray.__version__}")
    be = spartan.init(address=args.address, backend=args.backend, num_workers=args.workers)
    nodes = sorted(set(be.nodes))
    print(f"backend  {be.name}: {be.nworkers} workers on {len(nodes)} node(s): {', '.join(nodes)}")
    spartan.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spartan", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="versions, backend, workers and nodes")
    p.add_argument("--address", default=None, help="Ray address ('auto', 'ray://host:port')")
    p.add_argument("--backend", default=None, choices=["ray", "local"])
    p.add_argument("--workers", type=int, default=None)
    p.set_defaults(func=info)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
