"""The ``boloop`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import boloop


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="boloop",
        description="Bayesian optimisation and active learning with people in the loop.",
    )
    parser.add_argument("--version", action="version", version=f"boloop {boloop.__version__}")
    parser.add_subparsers(dest="command")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
