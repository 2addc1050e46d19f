"""`rt.charts.table`: result tables formatted for reading (Great Tables), checked cell by cell."""

from __future__ import annotations

import re

import polars as pl
import pytest

import rubrictools as rt

pytest.importorskip("great_tables")


def _cells(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)]


def test_rates_p_values_counts_and_floats_are_formatted_for_reading():
    t = pl.DataFrame(
        {
            "criterion": ["polite", "answers_question"],
            "met_rate": [0.657143, 0.9],
            "ci_low": [0.6, 0.85],
            "ci_high": [0.7, 0.95],
            "kappa": [0.4412345, 0.69],
            "p_value": [1.1347e-16, 0.04231],
            "n": [126720, 12],
        }
    )
    cells = _cells(rt.charts.table(t).as_raw_html())
    assert cells[:7] == ["polite", "65.7%", "60.0%", "70.0%", "0.441", "&lt; 0.001", "126,720"]
    assert cells[7:] == ["answers_question", "90.0%", "85.0%", "95.0%", "0.690", "0.042", "12"]


def test_identifiers_are_never_broken_at_a_hyphen_and_sentences_still_wrap() -> None:
    """Before: notebook 15's narrow id column printed "export-" above "1"."""
    html = rt.charts.table(pl.DataFrame({"id": ["export-1", "export-22"], "note": ["a long sentence here", "x"]}))
    raw = html.as_raw_html()
    ids = re.findall(r"<td[^>]*>\s*export-\d+\s*</td>", raw)
    notes = re.findall(r"<td[^>]*>\s*a long sentence here\s*</td>", raw)
    assert len(ids) == 2 and all("nowrap" in cell for cell in ids) and notes and "nowrap" not in notes[0]


def test_p_values_and_their_header_never_wrap() -> None:
    """Before: a narrow p-value column printed "<" above "0.001" and "p-" above "value" (notebook 07)."""
    html = rt.charts.table(pl.DataFrame({"what": ["a b"], "p_value": [1e-9]})).as_raw_html()
    p_cells = re.findall(r"<td[^>]*>\s*&lt; 0.001\s*</td>", html)
    p_header = re.findall(r"<th[^>]*>\s*p-value\s*</th>", html)
    assert p_cells and p_header and all("white-space: nowrap" in tag for tag in p_cells + p_header)
    other = re.findall(r"<td[^>]*>\s*a b\s*</td>", html)
    assert other and "nowrap" not in other[0]


def test_text_is_left_aligned_and_nested_columns_read_as_text():
    t = pl.DataFrame({"name": ["a long value"], "tags": [["x", "y"]], "none": [[]], "value": [None]}, strict=False)
    html = rt.charts.table(t.with_columns(pl.col("value").cast(pl.Float64))).as_raw_html()
    assert _cells(html) == ["a long value", "x, y", "–", "–"]
    assert re.search(r"<td[^>]*text-align: left[^>]*>a long value", html) or "gt_left" in html


def test_a_long_table_shows_its_first_rows_and_says_how_many_are_left_out():
    t = pl.DataFrame({"i": list(range(100))})
    html = rt.charts.table(t, max_rows=10, title="Ten of them").as_raw_html()
    assert [c for c in _cells(html) if c.isdigit()] == [
        str(i) for i in range(10)
    ] and "90 more row(s) not shown" in html
    assert "Ten of them" in html


def test_explicit_percent_columns_and_bad_settings():
    t = pl.DataFrame({"x": [0.5], "y": [2.0]})
    assert _cells(rt.charts.table(t, percent=["x"]).as_raw_html()) == ["50.0%", "2.000"]
    with pytest.raises(ValueError, match=r"percent= names columns not in the table: \['z'\]"):
        rt.charts.table(t, percent=["z"])
    with pytest.raises(ValueError, match="max_rows must be >= 1"):
        rt.charts.table(t, max_rows=0)


def test_a_rate_named_column_outside_0_1_is_not_a_percentage():
    t = pl.DataFrame({"win_rate": [55.2]})
    assert _cells(rt.charts.table(t).as_raw_html()) == ["55.200"]


def test_nested_lists_and_prefixed_interval_bounds():
    """Before: a column of chat turns (a list of structs) crashed the table; bounds named
    agreement_ci_low stayed decimals beside their percentage."""
    t = pl.DataFrame({"turns": [[{"role": "user", "content": "hi"}]], "agreement": [0.5], "agreement_ci_low": [0.4]})
    cells = _cells(rt.charts.table(t).as_raw_html())
    assert "role" in cells[0] and cells[1:] == ["50.0%", "40.0%"]
    both = rt.charts.table(pl.DataFrame({"x": [0.5], "share": [0.25]}), percent=["x"]).as_raw_html()
    assert _cells(both) == ["50.0%", "25.0%"]  # percent= adds to the columns found by name


def test_whole_number_counts_in_float_columns_read_as_counts():
    """Before: Bradley-Terry's games and wins and a comparison's call counts printed 12.000."""
    t = pl.DataFrame({"games": [12.0, 1500.0], "wins": [1.5, 3.0], "n_labels": [10.0, 20.0], "gap": [1.0, 2.0]})
    assert _cells(rt.charts.table(t).as_raw_html()) == ["12", "1.500", "10", "1.000", "1,500", "3.000", "20", "2.000"]


def test_an_empty_table_shows_its_columns_and_says_so():
    html = rt.charts.table(pl.DataFrame(schema={"criterion": pl.String}), title="Nothing").as_raw_html()
    assert "criterion" in html and "no rows" in html


def test_a_result_object_display_uses_the_same_formatting():
    from rubrictools.tables import html_table

    html = html_table(pl.DataFrame({"met_rate": [0.657143], "p_value": [1e-16]}), title="Report", note="all columns")
    assert _cells(html) == ["Report", "65.7%", "&lt; 0.001", "all columns"]


def test_labels_a_constant_ci_level_and_all_zero_degenerate_resamples() -> None:
    t = pl.DataFrame({"system": ["a", "b"], "ci_low": [0.1, 0.2], "ci_level": [0.95, 0.95], "n_degenerate": [0, 0]})
    html = rt.charts.table(t, title="T", labels={"system": "model"}).as_raw_html()
    assert "95% intervals" in html and "ci_level" not in html and "n_degenerate" not in html
    assert ">model<" in html
    with pytest.raises(ValueError, match=r"labels= names columns not in the table: \['x'\]"):
        rt.charts.table(t, labels={"x": "y"})
    varied = t.with_columns(pl.Series("ci_level", [0.9, 0.95]), pl.Series("n_degenerate", [0, 3]))
    assert "ci_level" in rt.charts.table(varied).as_raw_html()


def test_rate_words_are_whole_words_and_small_values_keep_a_digit() -> None:
    """Before: a column named 'rater mean' in [0, 1] printed as a percentage, and a bound of
    0.00023 printed as 0.000."""
    t = pl.DataFrame({"rater_mean": [0.5], "ci_low": [0.00023], "noise": [1e-16]})
    assert _cells(rt.charts.table(t).as_raw_html()) == ["0.500", "0.0002", "0.000"]


def test_headers_are_words_unless_labelled() -> None:
    t = pl.DataFrame({"met_rate": [0.5], "ci_low": [0.4], "ci_high": [0.6], "p_value": [0.01], "n_excluded": [2]})
    html = rt.charts.table(t).as_raw_html()
    heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", html, re.S)]
    assert heads == ["met rate", "low", "high", "p-value", "excluded"]
    relabelled = rt.charts.table(t, labels={"ci_low": "from"}).cols_label(ci_high="to").as_raw_html()
    assert ">from<" in relabelled and ">to<" in relabelled and ">met rate<" in relabelled


def test_interval_bounds_take_the_format_of_their_own_estimate():
    """Before, any rate column made every bound a percentage: a kappa's bounds read 13.5%."""
    t = pl.DataFrame(
        {"accuracy": [0.637], "ci_low": [0.55], "kappa": [0.30], "kappa low": [0.135], "kappa high": [0.468]}
    )
    cells = _cells(rt.charts.table(t, decimals=2).as_raw_html())
    assert cells[:5] == ["63.7%", "55.0%", "0.30", "0.14", "0.47"]


def test_booleans_read_yes_and_no_and_a_missing_one_a_dash() -> None:
    html = rt.charts.table(pl.DataFrame({"consistent": [True, False, None]})).as_raw_html()
    cells = re.findall(r'<td [^>]*class="gt_row[^"]*"[^>]*>([^<]*)</td>', html)
    assert cells == ["yes", "no", "–"]


def test_whole_number_weights_print_without_decimals() -> None:
    html = rt.charts.table(pl.DataFrame({"criterion": ["a", "b"], "weight": [10.0, -6.0]})).as_raw_html()
    assert "10.000" not in html and ">10<" in html and "6<" in html
