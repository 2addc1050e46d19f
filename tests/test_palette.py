"""The palette is the only place a colour is written, and none of its colours is a pure red or green."""

from __future__ import annotations

import colorsys
import re
from pathlib import Path

import rubrictools.palette as palette

ROOT = Path(__file__).resolve().parents[1] / "rubrictools"
HEX = re.compile(r"""["']#[0-9a-fA-F]{3,8}["']""")
NAMED = re.compile(r"""color=["'](?!(?:white|shared|independent)["'])[a-z]+["']""")


def test_no_module_but_the_palette_writes_a_colour() -> None:
    """Before: colours were literals in a dozen chart modules, and one grey meant people in one
    chart and "nothing" in another."""
    found = [
        f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
        for path in sorted(ROOT.rglob("*.py"))
        if path.name != "palette.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if HEX.search(line) or NAMED.search(line)
    ]
    assert not found, "colours outside rubrictools/palette.py:\n" + "\n".join(found)


def _colours() -> dict[str, str]:
    return {name: getattr(palette, name) for name in palette.__all__ if isinstance(getattr(palette, name), str)}


def _hls(colour: str) -> tuple[float, float, float]:
    c = colour.lstrip("#")
    c = "".join(ch * 2 for ch in c) if len(c) == 3 else c
    r, g, b = (int(c[i : i + 2], 16) / 255 for i in (0, 2, 4))
    h, lightness, sat = colorsys.rgb_to_hls(r, g, b)
    return h * 360, lightness, sat


def test_no_palette_colour_is_a_saturated_red_or_green() -> None:
    """So no chart can oppose red and green, the pair the commonest colour-vision deficiencies
    cannot tell apart (the rule of tests/charts/test_chart_rules.py, for every colour at once)."""
    for name, colour in _colours().items():
        hue, _lightness, sat = _hls(colour)
        if sat > 0.35:
            assert not (hue < 20 or hue > 340), f"{name} {colour} is red"
            assert not (80 < hue < 160), f"{name} {colour} is green"


def test_the_roles_keep_their_colours_and_categories_never_repeat() -> None:
    assert (palette.JUDGE, palette.PEOPLE, palette.CALIBRATED) == ("#4c78a8", "#9e9e9e", "#f58518")
    assert len(set(palette.CATEGORIES)) == len(palette.CATEGORIES)
    assert palette.PEOPLE not in palette.CATEGORIES  # grey is kept for people


def test_the_rule_catches_a_literal(tmp_path: Path) -> None:
    """The scan fails on the kinds of literal it was written for."""
    assert HEX.search('mark_rule(color="#888")') and HEX.search("range=['#4c78a8']")
    assert NAMED.search('mark_line(color="gray")') and not NAMED.search('mark_text(color="white")')
