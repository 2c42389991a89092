"""``python -m boloop ...``: the same as ``boloop ...`` (where the console script is not on the
PATH, e.g. a ``pip install --user`` whose scripts directory is not on it)."""

import sys

from boloop.cli import main

if __name__ == "__main__":
    sys.exit(main())
