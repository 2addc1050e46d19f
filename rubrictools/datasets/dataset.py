"""A loaded evaluation dataset: human labels, submissions, rubric, judge verdicts; items can be added."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rubrictools.rubric import Criterion, Rubric

__all__ = ["Dataset", "ground_truth_label"]


def ground_truth_label(c: Criterion, value: Any, where: str) -> str:
    """A ground-truth value as the criterion's canonical label (else an error naming ``where``)."""
    ok = isinstance(value, (str, int, float)) and not isinstance(value, bool)
    canon = c.canonical_label(str(value)) if ok else None
    if canon is None:
        allowed = list(c.labels) if c.range is None else c.range.describe()
        raise ValueError(f"{where} = {value!r} is not a label of criterion {c.name!r}: {allowed}")
    return str(canon)


@dataclass
class Dataset:
    """A loaded dataset (see the module docstring for the fields)."""

    name: str
    card: dict[str, Any]
    human: pl.DataFrame
    verdicts: pl.DataFrame | None = None
    submissions: pl.DataFrame | None = None
    rubric: Rubric | None = None
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    def _card(self) -> list[tuple[str, str]]:
        """The card's fields in reading order, ending with the size."""
        keys = ("title", "origin", "licence", "citation", "contents", "labels", "not_included")
        rows = [(k, str(self.card[k])) for k in keys if k in self.card]
        n_items, raters = self.human["id"].n_unique(), self.human["rater"].n_unique()
        who = f"{raters:,} rater{'' if raters == 1 else 's'}"
        empty = self.human["label"].null_count() if "label" in self.human.columns else 0
        blank = f", {empty:,} of them empty (no rating given)" if empty else ""
        return [*rows, ("size", f"{n_items:,} items, {self.human.height:,} human labels from {who}{blank}")]

    def describe(self) -> str:
        """The dataset card as text: title, origin, licence, citation, contents, labels, size."""
        rows = self._card()
        title = rows.pop(0)[1] if rows and rows[0][0] == "title" else ""
        return "\n".join([f"{self.name}: {title}", *(f"  {k}: {v}" for k, v in rows)])

    def __repr__(self) -> str:
        parts = [f"human={self.human.height}"]
        if self.verdicts is not None:
            parts.append(f"verdicts={self.verdicts.height}")
        if self.submissions is not None:
            parts.append(f"submissions={self.submissions.height}")
        if self.tables:
            parts.append(f"tables={list(self.tables)}")
        return f"Dataset({self.name!r}, {', '.join(parts)})"

    def _repr_html_(self) -> str:
        """The card as a table of proportional text (what a notebook shows for the dataset)."""
        rows = "".join(
            f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(k.replace('_', ' '))}</th>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in self._card()
        )
        tables = {"human labels": self.human, "verdicts": self.verdicts, "submissions": self.submissions}
        held = ", ".join(f"{k} ({v.height:,} rows)" for k, v in tables.items() if v is not None)
        if self.tables:  # the source's own tables, with every column it published (``.tables[name]``)
            extra = ", ".join(f"{k!r} ({v.height:,} rows)" for k, v in self.tables.items())
            held += f"; as published, in .tables: {extra}"
        return f"<b>{html.escape(self.name)}</b><table>{rows}</table><p>holds: {html.escape(held)}</p>"

    def add_item(
        self,
        submission: Any,
        *,
        ground_truth: Sequence[Any] | Mapping[str, Any] | None = None,
        id: Any = None,
        description: str | None = None,
        query: str | None = None,
        reference_submission: str | None = None,
        rubric: Rubric | None = None,
        rater: str = "ground_truth",
    ) -> Any:
        """Append one item (as autorubric's ``RubricDataset.add_item``), checking its ground
        truth against its rubric before anything is stored.

        ``ground_truth``: one label per criterion in rubric order (a list), or a mapping
        ``criterion -> label``; labels are checked and stored in the criterion's spelling
        (``"met"`` -> ``MET``); ``None`` skips a criterion. ``rubric``: the item's own rubric
        (default: the dataset's). Returns the item's id (the next integer when not given).

        >>> import rubrictools as rt
        >>> ds = Dataset("mine", {}, pl.DataFrame(schema={"id": pl.Int64, "criterion": pl.String,
        ...                  "rater": pl.String, "label": pl.String}),
        ...              rubric=rt.Rubric.from_dict([{"name": "correct", "requirement": "Is correct"}]))
        >>> ds.add_item("Paris is the capital of France.", ground_truth=["met"])
        0
        >>> ds.add_item("Lyon is the capital.", ground_truth={"correct": "maybe"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: item 1: ground_truth['correct'] = 'maybe' is not a label of criterion 'correct': ...
        """
        eff = rubric if rubric is not None else self.rubric
        subs = self.submissions
        item = id if id is not None else (subs.height if subs is not None else 0)
        if id is None and subs is not None and subs.schema.get("id") == pl.String:
            item = str(item)  # the dataset's ids are text
        where = f"item {item!r}: ground_truth"
        if eff is None:
            raise ValueError(f"item {item!r}: no rubric: pass rubric= (the dataset has none)")
        if subs is not None and "id" in subs.columns and subs["id"].cast(pl.String).is_in([str(item)]).any():
            raise ValueError(f"item {item!r}: the dataset already has an item with this id")
        labels: list[tuple[str, str]] = []
        if isinstance(ground_truth, Mapping):
            unknown = sorted(set(ground_truth) - set(eff.names))
            if unknown:
                raise ValueError(f"{where}: {unknown} are not criteria of the rubric {list(eff.names)}")
            pairs = [(eff[name], v) for name, v in ground_truth.items()]
            labels = [
                (c.name or "", ground_truth_label(c, v, f"{where}[{c.name!r}]")) for c, v in pairs if v is not None
            ]
        elif ground_truth is not None:
            if len(ground_truth) != len(eff):
                raise ValueError(f"{where}: {len(ground_truth)} values for the rubric's {len(eff)} criteria")
            labels = [
                (c.name or "", ground_truth_label(c, v, f"{where}[{j}]"))
                for j, (c, v) in enumerate(zip(eff, ground_truth, strict=True))
                if v is not None
            ]
        row = {
            "id": item,
            "submission": submission,
            "description": description,
            "query": query,
            "reference_submission": reference_submission,
            "rubric": json.dumps(eff.to_dict()) if rubric is not None else None,
        }
        new = pl.DataFrame([row])
        self.submissions = (
            new if self.submissions is None else pl.concat([self.submissions, new], how="diagonal_relaxed")
        )
        if labels:
            added = pl.DataFrame(
                {
                    "id": [item] * len(labels),
                    "criterion": [c for c, _ in labels],
                    "rater": rater,
                    "label": [lab for _, lab in labels],
                }
            )
            self.human = pl.concat([self.human, added], how="diagonal_relaxed")
        return item
