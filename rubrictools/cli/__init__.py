"""The ``rubrictools`` command line (also ``python -m rubrictools``); see :mod:`rubrictools.cli.main`."""

from __future__ import annotations

from rubrictools.cli.main import main, parser, read_table, write_table

__all__ = ["main", "parser", "read_table", "write_table"]
