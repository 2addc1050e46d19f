"""The rules every public chart keeps, checked on the gallery's charts (realistic shipped data)
through their Vega-Lite specs and the SVG vl-convert renders from them.

Each rule failed on the charts before issue 32: legends listing states absent from the data,
panels on different scales, a matrix's diagonal setting the colour scale, zero scores drawing
nothing, points half-clipped at a domain edge, truncated labels, axes titled "rows" or
"value", one colour meaning two things, titles that do not say what is shown.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("altair")
vl_convert = pytest.importorskip("vl_convert")

import polars as pl  # noqa: E402 - after the skips

import rubrictools as rt  # noqa: E402 - after the skips
from rubrictools.charts.gallery import gallery_charts  # noqa: E402 - after the skips

from ..vega import walk  # noqa: E402 - after the skips

# colours shared on purpose across panels of one chart, because they mean the same thing
SAME_MEANING = [{"new call", "spent"}, {"cache hit", "saved by cache"}]


@pytest.fixture(scope="module")
def charts() -> dict[str, dict[str, Any]]:
    return {name: chart.to_dict() for name, (_call, chart) in gallery_charts().items()}


@pytest.fixture(scope="module")
def svgs(charts) -> dict[str, str]:
    return {name: vl_convert.vegalite_to_svg(spec) for name, spec in charts.items()}


def colour_scales(spec: dict[str, Any]) -> list[tuple[list[Any], list[Any]]]:
    out = []
    for node in walk(spec):
        colour = node.get("color") if isinstance(node.get("color"), dict) else None
        scale = (colour or {}).get("scale") or {}
        if isinstance(scale.get("domain"), list) and isinstance(scale.get("range"), list):
            out.append((scale["domain"], scale["range"]))
    return out


VIEWS = {"mark", "layer", "hconcat", "vconcat", "facet", "spec"}


def titles(spec: dict[str, Any]) -> list[str]:
    """The titles of the chart and its views (not axis or legend titles)."""
    found = []
    for node in walk(spec):
        t = node.get("title")
        t = t.get("text") if isinstance(t, dict) else t
        if isinstance(t, str) and VIEWS & set(node):
            found.append(t)
    return found


def positional_scales(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for node in walk(spec):
        for channel in ("x", "y"):
            enc = node.get(channel)
            if isinstance(enc, dict) and enc.get("type") == "quantitative" and isinstance(enc.get("scale"), dict):
                out.append(enc["scale"])
    return out


def data_values(spec: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for node in walk(spec):
        if isinstance(node.get("values"), list):
            rows += [r for r in node["values"] if isinstance(r, dict)]
    for ds in spec.get("datasets", {}).values():
        rows += ds
    return rows


def test_every_public_chart_is_in_the_gallery(charts) -> None:
    import rubrictools as rt

    drawn = {name.split("_compare")[0] for name in charts}
    public = set(rt.charts.__all__) - {
        "offline",
        "save",
        "table",
        "palette",
    }  # table: a Great Tables table (tests/charts/test_table.py); palette: colours (tests/test_palette.py)
    assert public <= drawn, public - drawn


def test_no_label_or_legend_entry_is_truncated(svgs) -> None:
    cut = {name: svg.count("…") for name, svg in svgs.items() if "…" in svg}
    assert not cut, f"truncated text (an ellipsis) in {cut}"


def test_legends_name_only_what_the_chart_shows(charts) -> None:
    for name in ("verdicts", "run_summary"):
        shown = {str(v) for row in data_values(charts[name]) for v in row.values()}
        for domain, _range in colour_scales(charts[name]):
            absent = [d for d in domain if str(d) not in shown]
            assert not absent, f"{name}: legend lists {absent}, which the data does not hold"


def test_one_colour_means_one_thing_within_a_chart(charts) -> None:
    for name, spec in charts.items():
        meaning: dict[str, set[str]] = {}
        for domain, rng in colour_scales(spec):
            for label, colour in zip(domain, rng, strict=False):
                meaning.setdefault(str(colour).lower(), set()).add(str(label))
        for colour, labels in meaning.items():
            ok = len(labels) == 1 or any(labels <= group for group in SAME_MEANING)
            assert ok, f"{name}: colour {colour} stands for {sorted(labels)}"


def test_panels_the_text_compares_share_a_scale(charts) -> None:
    assert charts["forest"]["resolve"]["scale"]["x"] == "shared"


def test_a_matrix_diagonal_is_out_of_the_colour_scale_and_values_are_printed(charts) -> None:
    spec = charts["judge_agreement"]
    rows = data_values(spec)
    diagonal = [r for r in rows if r["judge_a"] == r["judge_b"]]
    assert diagonal and all(r["kappa"] is None for r in diagonal)  # not in the colour domain
    assert all(r["label"] for r in rows)  # every cell prints its value ("self" on the diagonal)
    assert any(layer["mark"].get("type", layer["mark"]) == "text" for layer in spec["layer"] if "mark" in layer)
    for name in ("win_matrix", "confusion"):
        marks = [n["mark"] for n in walk(charts[name]) if "mark" in n]
        assert any((m if isinstance(m, str) else m.get("type")) == "text" for m in marks), name


def test_zero_scores_stay_visible(charts) -> None:
    labels = {r["submission"]: r["label"] for r in data_values(charts["verdicts"]) if "label" in r}
    scores = {r["submission"]: r["score"] for r in data_values(charts["verdicts"]) if "score" in r}
    zeros = [s for s, v in scores.items() if v == 0]
    assert zeros, "the gallery's verdict chart should hold a score of 0"
    assert all(labels[s] == "0.000" for s in zeros)


def test_rate_scales_end_at_0_and_100_percent_and_edge_points_are_not_clipped(charts) -> None:
    """Before: a padded [0, 1] domain drew the axis from about -10% to 110% (round 10)."""
    for name in ("met_rates", "reliability"):
        rates = [s for s in positional_scales(charts[name]) if s.get("domain") == [0, 1]]
        assert rates and all(not s.get("padding") for s in rates), (name, rates)
        marks = [n["mark"] for n in walk(charts[name]) if isinstance(n.get("mark"), dict)]
        assert not [m for m in marks if m.get("clip")], name  # a point at 0 or 1 is drawn whole
    forest = [s for s in positional_scales(charts["forest"]) if "zero" in s]
    assert forest and all(s.get("padding", 0) > 0 for s in forest)  # an open axis keeps its edge points inside


def test_the_reliability_diagram_compares_like_labels(charts) -> None:
    """Before: the gallery compared human "3" with judge "3.0": observed frequency 0 in every bin."""
    rows = [r for r in data_values(charts["reliability"]) if "accuracy" in r]
    assert rows and max(r["accuracy"] for r in rows) > 0.2


def test_axis_titles_name_the_unit(charts) -> None:
    vague = {"rows", "value", "len", "count"}
    for name, spec in charts.items():
        for node in walk(spec):
            for channel in ("x", "y"):
                enc = node.get(channel)
                if isinstance(enc, dict) and enc.get("type") == "quantitative" and "title" in enc:
                    title = enc["title"]  # a list is a title of several lines
                    title = " ".join(title) if isinstance(title, list) else title
                    assert title not in vague, f"{name}: axis titled {title!r}"


def test_titles_name_what_is_shown(charts) -> None:
    must = {
        "verdicts": "scripted",
        "confusion": "polite",
        "win_matrix": "relevance",
        "ppi_widths": "polite",
        "forest_compare": "Cohen's kappa",
        "judge_agreement": "kappa",
    }
    for name, spec in charts.items():
        text = " ".join(titles(spec))
        assert text.strip(), f"{name} has no title"
        if name in must:
            assert must[name] in text, f"{name}: title {text!r} does not name {must[name]!r}"


def _ticks(svg: str) -> list[str]:
    import re

    return [t.replace("\u2212", "-") for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_rate_axes_print_only_0_to_100_percent(svgs) -> None:
    """Before: rate axes padded to -0.1..1.1 printed those ticks."""
    import re

    for name in ("met_rates", "reliability", "position_bias"):
        ticks = _ticks(svgs[name])
        shares = [float(t[:-1]) for t in ticks if re.fullmatch(r"-?\d+(\.\d+)?%", t)]
        assert shares and min(shares) >= 0 and max(shares) <= 100, (name, shares)
        assert not [t for t in ticks if re.fullmatch(r"-0\.\d+|1\.[1-9]", t)], name


def test_forests_name_metrics_in_words_and_mark_chance(charts, svgs) -> None:
    """Before: panels titled cohen_kappa / gwet_ac1, an axis titled 'value', no line at chance."""
    for name in ("forest", "forest_compare"):
        text = " ".join(_ticks(svgs[name]))
        assert "cohen_kappa" not in text and "gwet_ac1" not in text, name
        assert "Cohen's kappa" in text, name
        assert not any(t.startswith("value (") for t in _ticks(svgs[name])), name
        zero_rules = [n for n in walk(charts[name]) if n.get("x") == {"datum": 0}]
        assert zero_rules, f"{name}: no reference line at chance (0)"


def _hue(colour: str) -> tuple[float, float] | None:
    import colorsys

    c = colour.lstrip("#")
    if len(c) != 6:
        return None
    r, g, b = (int(c[i : i + 2], 16) / 255 for i in (0, 2, 4))
    h, _l, sat = colorsys.rgb_to_hls(r, g, b)
    return h * 360, sat


def test_no_chart_opposes_red_and_green(charts) -> None:
    """Red against green as the only cue fails for colour-blind readers (before: the verdict
    heatmap and the improve chart)."""
    for name, spec in charts.items():
        for _domain, rng in colour_scales(spec):
            hues = [h for h in map(_hue, map(str, rng)) if h is not None and h[1] > 0.35]
            red = any(h < 20 or h > 340 for h, _ in hues)
            green = any(80 < h < 160 for h, _ in hues)
            assert not (red and green), f"{name}: red and green in one colour scale {rng}"


def test_every_public_charts_legend_names_only_what_it_shows(charts) -> None:
    """The legend rule, on every chart whose colour scale lists categories."""
    for name, spec in charts.items():
        shown = {str(v) for row in data_values(spec) for v in row.values()}
        for domain, _range in colour_scales(spec):
            if all(isinstance(d, str) for d in domain):
                absent = [d for d in domain if d not in shown]
                assert not absent, f"{name}: legend lists {absent}, which the data does not hold"


def test_score_histograms_use_few_enough_bins_to_show_the_shape_and_mark_the_means(charts) -> None:
    """Before: 20 jagged bins for 140 scores, and no mark of the bias between the means."""
    starts = {
        r["bin_start"]
        for r in data_values(charts["score_distributions"])
        if r.get("who") == "human" and "bin_start" in r
    }
    assert 5 <= len(starts) <= 12, sorted(starts)
    # round edges that meet the axis ticks (before: 1/9-wide bins starting at 0.111)
    assert all(abs(x * 20 - round(x * 20)) < 1e-9 for x in starts), sorted(starts)
    means = [r for r in data_values(charts["score_distributions"]) if "mean" in r]
    assert {r["who"] for r in means} == {"human", "judge"}


def test_points_told_apart_by_colour_also_differ_in_shape(charts) -> None:
    """Colour alone separates the judge's points from the humans' (before: met_rates, red against
    blue dots): a reader who cannot tell the hues apart needs a second cue."""
    lonely = []
    for name, spec in charts.items():
        for node in walk(spec):
            mark = node.get("mark")
            kind = mark.get("type") if isinstance(mark, dict) else mark
            enc = node.get("encoding") or {}
            colour = enc.get("color") if isinstance(enc.get("color"), dict) else {}
            if kind in ("point", "circle") and colour.get("type") == "nominal" and "shape" not in enc:
                lonely.append(name)
    assert not lonely, f"points told apart by colour only in {sorted(set(lonely))}"


def test_no_rule_carries_a_shape(charts) -> None:
    """A rule mark given a shape encoding draws a stray point at its start (before: forest compare
    and ceiling charts showed a dot at every interval's lower end)."""
    shaped = [
        name
        for name, spec in charts.items()
        for node in walk(spec)
        if (node.get("mark") == "rule" or (isinstance(node.get("mark"), dict) and node["mark"].get("type") == "rule"))
        and "shape" in (node.get("encoding") or {})
    ]
    assert not shaped, f"rules with a shape in {sorted(set(shaped))}"


def test_a_win_matrix_legend_reads_in_percent_as_its_cells_do(charts) -> None:
    """Before: the legend ran 0.0-1.0 beside cells printed as 70% (win matrix, confusion)."""
    for name, field in (("win_matrix", "win_rate"), ("confusion", "row_share")):
        colours = [n["color"] for n in walk(charts[name]) if isinstance(n.get("color"), dict)]
        assert [c for c in colours if c.get("field") == field and (c.get("legend") or {}).get("format") == "%"], name


def test_confusion_cells_with_no_pair_print_0_and_tiny_shares_do_not_print_0_percent() -> None:
    """Before: a cell with no pair was blank, and 2 of 797 printed "0%" (round 11)."""
    import polars as pl

    import rubrictools as rt

    labels = ["MET"] * 400 + ["UNMET"] * 4
    v = pl.DataFrame({"id": range(404), "criterion": "c", "verdict": ["MET"] * 398 + ["UNMET"] * 2 + ["MET"] * 4})
    h = pl.DataFrame({"id": range(404), "criterion": "c", "label": labels})
    cells = {(r["human"], r["judge"]): r["label"] for r in data_values(rt.charts.confusion(v, h).to_dict())}
    assert cells[("MET", "UNMET")] == "2\n<1%" and cells[("UNMET", "UNMET")] == "0\n0%"


def test_no_axis_label_is_dropped_for_overlap(svgs) -> None:
    """Before: the forest's narrow panels lost every other tick label (0.00 among them) to Vega's
    overlap rule. A label drawn transparent is a label the reader cannot see."""
    import re

    for name, svg in svgs.items():
        axis_groups = re.findall(r'<g class="mark-text role-axis-label"[^>]*>(.*?)</g>', svg, re.S)
        labels = [label for g in axis_groups for label in re.findall(r"<text([^>]*)>([^<]*)</text>", g)]
        hidden = [text for attrs, text in labels if 'opacity="0"' in attrs]
        assert not hidden, (name, hidden)


def test_position_bias_zooms_the_win_rate_and_draws_agreement_on_its_whole_scale() -> None:
    """Before: both panels ran 0-100%, so a win rate of 52% [51%, 54%] was drawn as one dot on
    the 50% line (round 3). Now the win rate is zoomed symmetrically about 50%, and the agreement
    runs 0-100% (a zoomed agreement axis, with no mark of its cut, made 63% look like a collapse
    beside 90%: round 23), each domain inside [0, 1], unpadded, its marks unclipped."""
    bias = pl.DataFrame({
        "criterion": ["a", "b"], "pairs": [40, 40], "positional_agreement": [0.94, 0.9],
        "agreement_ci_low": [0.9, 0.85], "agreement_ci_high": [0.97, 0.95], "inconsistent": [2, 4],
        "decisive": [70, 60], "first_win_rate": [0.52, 0.47], "first_ci_low": [0.51, 0.44],
        "first_ci_high": [0.54, 0.5],
    })  # fmt: skip
    spec = rt.charts.position_bias(bias).to_dict()
    domains = [s["domain"] for s in positional_scales(spec) if "domain" in s]
    assert [0.4, 0.6] in domains and [0.0, 1.0] in domains, domains
    assert all(0 <= lo < hi <= 1 for lo, hi in domains)
    assert not [n["mark"] for n in walk(spec) if isinstance(n.get("mark"), dict) and n["mark"].get("clip")]


def test_the_judge_and_people_keep_one_colour_across_charts(charts) -> None:
    """Before: blue meant the judge in the forest and the humans in the MET-rate chart, where the
    judge was red (round 3). Now the judge is blue and people grey wherever both are drawn."""
    for name in ("score_distributions", "met_rates"):
        mapping = {d: r for domain, rng in colour_scales(charts[name]) for d, r in zip(domain, rng, strict=False)}
        assert mapping.get("judge") == "#4c78a8", (name, mapping)
        human = mapping.get("human")
        assert human is not None and len({human[1:3], human[3:5], human[5:7]}) == 1, (name, human)  # a grey


def test_position_bias_ticks_include_each_panels_reference_line() -> None:
    """Before: a zoomed win-rate axis ticked 15/35/55/75%, none at its 50% line (round 4)."""
    bias = pl.DataFrame({
        "criterion": ["a"], "pairs": [40], "positional_agreement": [0.55], "agreement_ci_low": [0.4],
        "agreement_ci_high": [0.7], "inconsistent": [18], "decisive": [60], "first_win_rate": [0.75],
        "first_ci_low": [0.65], "first_ci_high": [0.84],
    })  # fmt: skip
    spec = rt.charts.position_bias(bias).to_dict()
    ticks = [n["axis"]["values"] for n in walk(spec) if isinstance(n.get("axis"), dict) and "values" in n["axis"]]
    assert len(ticks) == 2 and 1.0 in ticks[0] and 0.5 in ticks[1], ticks


def test_no_interval_is_drawn_in_a_bare_rules_black(svgs) -> None:
    """A rule with no colour draws black: the forest plot's and position bias's intervals were
    black beside charts that draw the judge's intervals in blue (notebooks 02, 09)."""
    black = {name: len(re.findall(r'stroke="(?:#000|#000000|black)"', svg)) for name, svg in svgs.items()}
    assert not {name: n for name, n in black.items() if n}, black
