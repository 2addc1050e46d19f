"""Hugging Face ``datasets``: a local ``save_to_disk`` folder, local data files or a hub repository, as polars.

:func:`read_huggingface` gives any split as a polars DataFrame (through Arrow: ``Dataset.to_polars``);
:func:`load_huggingface` reads a rubric-graded set, with the people's labels in wide columns
(``{rater}_{criterion}``, as :func:`rubrictools.labels_from_wide` reads them), as a
:class:`~rubrictools.datasets.Dataset` whose ``human`` table goes straight to
:func:`rubrictools.agreement`. Every function that takes a DataFrame also takes a
``datasets.Dataset`` as it is.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.datasets.dataset import Dataset
from rubrictools.frames import to_polars
from rubrictools.human_agreement import labels_from_wide
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel

__all__ = ["load_huggingface", "read_huggingface"]

INSTALL = "pip install datasets"
_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


def _library() -> Any:
    try:
        import datasets
    except ImportError:
        raise ModuleNotFoundError(f"reading Hugging Face data sets needs the datasets package: {INSTALL}") from None
    return datasets


def _open(source: str | Path, config: str | None, revision: str | None) -> Any:
    """A ``save_to_disk`` folder with ``load_from_disk``; anything else with ``load_dataset``."""
    lib = _library()
    path = Path(source)
    saved = path.is_dir() and ((path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists())
    if saved:
        if config is not None or revision is not None:
            raise ValueError(f"config= and revision= choose a hub version; {str(path)!r} is a saved folder")
        try:
            return lib.load_from_disk(str(path))
        except IndexError as e:  # datasets fails so on a saved data set of no rows
            raise ValueError(f"source: {str(path)!r} holds a data set with no rows") from e
    if isinstance(source, Path) and not path.exists():
        raise FileNotFoundError(f"source: {str(path)!r} does not exist")
    if path.is_file():
        if config is not None or revision is not None:
            raise ValueError(f"config= and revision= choose a hub version; {str(path)!r} is a local file")
        inner = path.with_suffix("") if path.suffix.lower() in (".gz", ".bz2", ".xz", ".zst") else path
        builder = _BUILDERS.get(inner.suffix.lower())
        if builder is None:
            raise ValueError(f"source: cannot read a {path.suffix!r} file; give {sorted(_BUILDERS)} or a folder")
        return lib.load_dataset(builder, data_files=str(path))
    return lib.load_dataset(str(source), config, revision=revision)


def _split(ds: Any, split: str | None, source: str | Path) -> Any:
    if type(ds).__name__ not in ("DatasetDict", "IterableDatasetDict"):
        if split is not None:
            raise ValueError(f"split={split!r}: {str(source)!r} holds one split, not several; drop split=")
        return ds
    names = list(ds)
    if split is None:
        if len(names) == 1:
            return ds[names[0]]
        raise ValueError(f"{str(source)!r} has splits {names}: choose one with split=")
    if split not in names:
        raise ValueError(f"split={split!r} is not a split of {str(source)!r}: {names}")
    return ds[split]


def read_huggingface(
    source: str | Path,
    *,
    split: str | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> pl.DataFrame:
    """One split of a Hugging Face data set as a polars DataFrame (through Arrow).

    Parameters
    ----------
    source
        A folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``, a local
        folder or file of data (JSON Lines, CSV, parquet: what ``datasets.load_dataset`` reads),
        or a hub repository id (``"owner/name"``; downloaded and cached by ``datasets``).
    split
        The split to read; may be left out when there is only one.
    config, revision
        The hub configuration (subset) and revision (branch, tag or commit) of a repository.

    Example
    -------
    >>> import tempfile, datasets, rubrictools as rt
    >>> folder = tempfile.mkdtemp()
    >>> datasets.Dataset.from_dict({"id": [1, 2], "submission": ["a", "b"]}).save_to_disk(folder)  # doctest: +ELLIPSIS
    ...
    >>> rt.datasets.read_huggingface(folder).shape
    (2, 2)
    """
    return _read(source, split, config, revision)[0]


def _read(source: Any, split: str | None, config: str | None, revision: str | None) -> tuple[pl.DataFrame, Any]:
    """The split as polars, and its ``DatasetInfo`` (licence, citation, description)."""
    if not isinstance(source, (str, Path)) or not str(source).strip():
        raise TypeError(f"source must be a folder, a file or a hub repository id (str or Path), got {source!r}")
    chosen = _split(_open(source, config, revision), split, source)
    return to_polars(chosen, name=str(source)), getattr(chosen, "info", None)


def _card(source: str | Path, info: Any) -> dict[str, Any]:
    card = {"name": Path(str(source)).name or str(source), "title": str(source), "origin": str(source)}
    for key, field in (("licence", "license"), ("citation", "citation"), ("contents", "description")):
        value = getattr(info, field, None)
        if value:
            card[key] = str(value)
    return card


def _check_ids(frame: pl.DataFrame, id_column: str, source: Any) -> None:
    if id_column not in frame.columns:
        raise ValueError(f"id_column={id_column!r} is not a column of {str(source)!r}: {frame.columns}")
    missing = frame[id_column].null_count()
    if missing:
        raise ValueError(f"id_column={id_column!r} is empty on {missing} row(s); each submission needs an id")
    if frame[id_column].is_duplicated().any():
        raise ValueError(f"id_column={id_column!r} has repeated values; each submission needs its own id")


def _labels(
    frame: pl.DataFrame, criteria: Any, raters: Any, sep: str, id_column: str, source: Any
) -> tuple[pl.DataFrame, list[str]]:
    """The long label table of the wide label columns, and those columns' names."""
    names = [criteria] if isinstance(criteria, str) else list(getattr(criteria, "names", criteria))
    who = [raters] if isinstance(raters, str) else raters
    human = labels_from_wide(frame, id_column=id_column, criteria=names, raters=who, sep=sep)
    ends = [(n, f"{sep}{n}") for n in names]
    cols = [c for c in frame.columns for n, end in ends if c.endswith(end) and (who is None or c[: -len(end)] in who)]
    unlabelled = sorted(set(names) - set(human["criterion"].unique()))
    if unlabelled:
        warnings.warn(
            f"no labels for criteria {unlabelled} in {str(source)!r} (no '<rater>{sep}<criterion>' column "
            "with a value)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return human, cols


def load_huggingface(
    source: str | Path,
    *,
    criteria: str | Sequence[str] | Rubric,
    id_column: str = "id",
    raters: str | Sequence[str] | None = None,
    sep: str = "_",
    split: str | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> Dataset:
    """A rubric-graded Hugging Face data set as a :class:`~rubrictools.datasets.Dataset`.

    The people's labels are read from wide columns ``{rater}{sep}{criterion}`` (as
    :func:`rubrictools.labels_from_wide` reads them) into ``human`` (``id, criterion, rater,
    label``); the other columns are ``submissions``. With a :class:`~rubrictools.Rubric` as
    ``criteria`` it becomes the data set's ``rubric``; the card holds the source's licence,
    citation and description when it has them.

    Parameters
    ----------
    source, split, config, revision
        As for :func:`read_huggingface`.
    criteria
        The criterion names, or the rubric, whose label columns to read.
    id_column
        The column identifying each submission (unique).
    raters, sep
        Which raters to read (default: every prefix found: any column ending in
        ``{sep}{criterion}`` is read as a rater's labels, so name them when another column
        ends so, e.g. ``response_length`` for a criterion ``length``) and the separator of
        ``{rater}{sep}{criterion}``. Those columns are left out of ``submissions``; a criterion
        without any label is warned about.

    Example
    -------
    >>> import tempfile, datasets, rubrictools as rt
    >>> folder = tempfile.mkdtemp()
    >>> rows = {"id": [1, 2], "submission": ["Hi!", "Go away."], "ann_polite": ["MET", "UNMET"]}
    >>> datasets.Dataset.from_dict(rows).save_to_disk(folder)  # doctest: +ELLIPSIS
    ...
    >>> ds = rt.datasets.load_huggingface(folder, criteria=["polite"])
    >>> ds.human.rows()
    [(1, 'polite', 'ann', 'MET'), (2, 'polite', 'ann', 'UNMET')]
    >>> ds.submissions.columns
    ['id', 'submission']
    """
    frame, info = _read(source, split, config, revision)
    _check_ids(frame, id_column, source)
    human, label_cols = _labels(frame, criteria, raters, sep, id_column, source)
    submissions = frame.select([c for c in frame.columns if c not in label_cols])
    return Dataset(
        name=Path(str(source)).name or str(source),
        card=_card(source, info),
        human=human,
        submissions=submissions,
        rubric=criteria if isinstance(criteria, Rubric) else None,
    )
