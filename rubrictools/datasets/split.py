"""Train/test splits of a labelled :class:`Dataset` (autorubric's ``split_train_test``).

A stratified split keeps every (criterion, label) share of the ground truth as close as the
item counts allow in both parts. Each item is a row of one-hot label counts ``x_i`` (one
column per criterion and label); with ``T = sum_i x_i`` over all ``N`` items, items are taken
into the training part one at a time, each time the remaining item that brings the running
total ``c`` closest to its pro-rata target::

    pick argmin_i || c + x_i - T * k / N ||^2      (k = items taken so far, after this one)

Items are visited in a seeded random order, so ties are broken at random and a seed repeats
the split. This is a greedy form of iterative stratification (Sechidis, Tsoumakas and
Vlahavas, 2011): a multi-label split cannot stratify on every label pattern at once, since most
patterns occur once.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl

from rubrictools.datasets.dataset import Dataset

__all__ = ["split_train_test"]


def split_train_test(
    dataset: Dataset,
    n_train: int,
    *,
    stratify: bool = True,
    seed: int | None = 0,
    rater: str | None = None,
) -> tuple[Dataset, Dataset]:
    """Split ``dataset`` into ``n_train`` training items and the rest (the test part).

    ``stratify=True`` balances every (criterion, label) share of the human labels across the
    two parts (module docstring; every item needs labels, from ``rater`` when the table holds
    several raters); ``False`` is a plain seeded shuffle. Each part keeps its items'
    submissions, labels and verdicts, in the dataset's order; the training part suits
    few-shot examples (``grade(examples=...)``), the test part evaluation.

    >>> import polars as pl, rubrictools as rt
    >>> from rubrictools.datasets import Dataset
    >>> human = pl.DataFrame({"id": range(8), "criterion": "a", "rater": "gt",
    ...                       "label": ["MET"] * 4 + ["UNMET"] * 4})
    >>> train, test = split_train_test(Dataset("d", {}, human), 4, seed=0)
    >>> train.human["label"].value_counts(sort=True)["count"].to_list()
    [2, 2]
    """
    ids = _item_ids(dataset)
    if isinstance(n_train, bool) or not isinstance(n_train, int) or not 0 <= n_train <= len(ids):
        raise ValueError(f"n_train must be a whole number from 0 to {len(ids)} (the number of items), got {n_train!r}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(ids))
    if stratify:
        x = _label_counts(dataset, ids, rater)[order]
        chosen = order[_greedy(x, n_train)]
    else:
        chosen = order[:n_train]
    train_ids = ids.gather(np.sort(chosen))
    return _subset(dataset, train_ids, keep=True), _subset(dataset, train_ids, keep=False)


def _item_ids(dataset: Dataset) -> pl.Series:
    if dataset.submissions is not None:
        return dataset.submissions["id"].unique(maintain_order=True)
    return dataset.human["id"].unique(maintain_order=True)


def _label_counts(dataset: Dataset, ids: pl.Series, rater: str | None) -> np.ndarray:
    """One row per item: how often it carries each (criterion, label)."""
    human = dataset.human
    if rater is not None:
        if rater not in human["rater"].unique().to_list():
            raise ValueError(f"rater {rater!r} is not in the labels; raters: {human['rater'].unique().to_list()}")
        human = human.filter(pl.col("rater") == rater)
    elif human["rater"].n_unique() > 1:
        raise ValueError(f"the labels have several raters {human['rater'].unique().to_list()}: pass rater=")
    unlabelled = ids.filter(~ids.is_in(human["id"].implode()))
    if unlabelled.len():
        raise ValueError(
            f"stratify=True needs labels for every item; {unlabelled.len()} item(s) have none "
            f"(first: {unlabelled.head(3).to_list()}); pass stratify=False"
        )
    key = pl.format("{}={}", pl.col("criterion"), pl.col("label")).alias("key")
    wide = (
        pl.DataFrame({"id": ids})
        .join(human.select("id", key), on="id", how="left", maintain_order="left")
        .pivot("key", index="id", values="key", aggregate_function="len")
    )
    rows = pl.DataFrame({"id": ids}).join(wide, on="id", how="left", maintain_order="left").drop("id")
    return rows.fill_null(0).to_numpy().astype(float)


def _greedy(x: np.ndarray, n_train: int) -> np.ndarray:
    """Positions (in ``x``'s order) of the items the greedy rule takes into training."""
    n = len(x)
    total = x.sum(0)
    running = np.zeros(x.shape[1])
    free = np.ones(n, dtype=bool)
    taken = np.empty(n_train, dtype=np.int64)
    for k in range(n_train):
        target = total * (k + 1) / n
        cost = ((running + x - target) ** 2).sum(1)
        cost[~free] = np.inf
        i = int(np.argmin(cost))  # the first of equal costs: the seeded order breaks ties
        taken[k], free[i] = i, False
        running += x[i]
    return taken


def _subset(dataset: Dataset, train_ids: pl.Series, *, keep: bool) -> Dataset:
    def part(frame: pl.DataFrame | None) -> pl.DataFrame | None:
        if frame is None or "id" not in frame.columns:
            return frame
        inside = pl.col("id").is_in(train_ids.implode())
        return frame.filter(inside if keep else ~inside)

    human = part(dataset.human)
    assert human is not None
    return replace(
        dataset,
        human=human,
        verdicts=part(dataset.verdicts),
        submissions=part(dataset.submissions),
        card={**dataset.card, "split": "train" if keep else "test"},
    )
