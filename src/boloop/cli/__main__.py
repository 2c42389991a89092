"""``python -m boloop.cli ...``: the same as ``boloop ...``."""

import sys

from boloop.cli import main

sys.exit(main())
