"""Notebook prose is tested: a markdown cell that states a figure about the notebook's data
(a decimal, a percentage, a count with thousands separators, "N of M") comes right after a
code cell that asserts what it says, so ``pytest --nbmake`` fails the day words and data part.

A figure that is not this notebook's result (a paper's published number, a setting) is marked
in its cell with ``<!-- quoted: why -->``; a sentence rendered from computed values is a code
cell's ``Markdown(f"...")`` output and is not markdown at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

_N = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
FIGURE = re.compile(rf"(?<![\w.\-])({_N} of (?:the )?{_N}|\d+\.\d+|\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?\s?%)(?![\w])")
"""What reads as a measured figure: 0.71, 6,336, 97%, 234 of 6,336."""

QUOTED = re.compile(r"<!--\s*quoted:\s*\S.*?-->", re.S)


def _untested_claims(cells: list[dict]) -> list[tuple[int, list[str]]]:
    bad = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        if QUOTED.search(text):
            continue
        text = re.sub(r"`[^`]*`", "", text)  # code spans: names and settings, not claims
        figures = FIGURE.findall(text)
        if not figures:
            continue
        before = cells[i - 1] if i else None
        asserts = before is not None and before["cell_type"] == "code"
        if not (asserts and re.search(r"^\s*assert\b", "".join(before["source"]), re.M)):
            bad.append((i, figures))
    return bad


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_in_prose_follows_a_cell_that_asserts_it(path: Path) -> None:
    bad = _untested_claims(json.loads(path.read_text())["cells"])
    assert not bad, (
        f"{path.name}: markdown cells {[i for i, _ in bad]} state figures {[f for _, f in bad]} with no asserting code "
        "cell right before them (assert them there, render the sentence with Markdown(f'...'), or mark a figure "
        "that is not this notebook's result with <!-- quoted: why -->)"
    )


def test_the_rule_catches_an_unchecked_figure_and_accepts_a_checked_one() -> None:
    md = {"cell_type": "markdown", "source": ["The judge agrees on 97% of pairs (234 of 6,336 differ)."]}
    plain = {"cell_type": "code", "source": ["x = 1"]}
    checked = {"cell_type": "code", "source": ["x = 1\n", "assert x == 1\n"]}
    quoted = {"cell_type": "markdown", "source": ["The paper reports 0.313. <!-- quoted: the paper's figure -->"]}
    settings = {"cell_type": "markdown", "source": ["Run `grade(n=1.5)` on 10 folds."]}
    assert _untested_claims([plain, md]) == [(1, ["97%", "234 of 6,336"])]
    assert _untested_claims([checked, md]) == []
    assert _untested_claims([plain, quoted, settings]) == []
