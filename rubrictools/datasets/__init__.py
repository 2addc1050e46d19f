"""Datasets: the project's demo sets, numeric extracts of public evaluation data, and
autorubric's ``RubricDataset`` format (JSON or YAML) with its seeded, stratified train/test split,
and Hugging Face data sets (:func:`read_huggingface`, :func:`load_huggingface`).

>>> from rubrictools import datasets
>>> "demo_support" in datasets.catalogue()["name"].to_list()
True
>>> ds = datasets.load("demo_support")
>>> ds.human.columns
['id', 'criterion', 'rater', 'label']

Every :class:`Dataset` has ``submissions`` (``id, submission, ...``; ``None`` when the source
text is not shipped), ``rubric`` (``None`` for per-item rubrics, held in a ``rubric``
column), ``human`` (long labels: ``id, criterion, rater, label``, the input of
:func:`rubrictools.agreement`), ``verdicts`` (recorded judge outputs as a verdict table),
extra ``tables`` and a ``card`` (origin, licence, citation, what the labels mean).

Files are read from ``$RUBRICTOOLS_DATASETS`` or the repository's ``datasets/`` folder.
Public sets ship numbers only; their text can be attached from a local copy
(``text_path=``, or ``../shared/datasets`` when present).
"""

from __future__ import annotations

import warnings
from typing import Any

from rubrictools.datasets.autorubric import read_autorubric, write_autorubric
from rubrictools.datasets.catalogue import catalogue, llmbar_statistics, load
from rubrictools.datasets.chat import read_chat_jsonl
from rubrictools.datasets.dataset import Dataset
from rubrictools.datasets.huggingface import load_huggingface, read_huggingface
from rubrictools.datasets.split import split_train_test
from rubrictools.stack import user_stacklevel

__all__ = [
    "Dataset",
    "catalogue",
    "llmbar_statistics",
    "load",
    "load_huggingface",
    "read_autorubric",
    "read_chat_jsonl",
    "read_huggingface",
    "split_train_test",
    "write_autorubric",
]


def __getattr__(name: str) -> Any:
    """``datasets.list()`` (0.1) shadowed the builtin; it is :func:`catalogue` now."""
    if name == "list":
        warnings.warn(
            "rt.datasets.list() is now rt.datasets.catalogue()", DeprecationWarning, stacklevel=user_stacklevel()
        )
        return catalogue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
