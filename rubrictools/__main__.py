"""``python -m rubrictools``: the command line (:mod:`rubrictools.cli`)."""

from __future__ import annotations

import sys

from rubrictools.cli import main

if __name__ == "__main__":
    sys.exit(main())
