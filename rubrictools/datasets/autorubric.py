"""autorubric's ``RubricDataset`` format (JSON or YAML), read into and written from a :class:`Dataset`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from rubrictools.datasets.dataset import Dataset, ground_truth_label
from rubrictools.deprecation import REMOVED_IN, adapted, warn_deprecated
from rubrictools.frames import to_polars
from rubrictools.rubric import Rubric

__all__ = ["read_autorubric", "write_autorubric"]


YAML_SUFFIXES = (".yaml", ".yml")


def _load(source: str | Path) -> Any:
    """Parsed data of a JSON or YAML file (YAML by its suffix), or of JSON / YAML text (text
    has a line break or starts with ``[``/``{``; anything else is a path)."""
    if isinstance(source, str) and ("\n" in source or source.lstrip()[:1] in ("[", "{")):
        text, yaml_like = source, source.lstrip()[:1] not in ("[", "{")
    else:
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"autorubric dataset: no file {str(path)!r}")
        text, yaml_like = path.read_text(encoding="utf-8"), path.suffix in YAML_SUFFIXES
    try:
        return yaml.safe_load(text) if yaml_like else json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as e:
        raise ValueError(f"autorubric dataset {str(source)[:80]!r}: cannot parse: {e}") from None


def read_autorubric(source: str | Path | dict[str, Any]) -> Dataset:
    """Read autorubric's ``RubricDataset`` (a JSON or YAML file path, JSON/YAML text or a parsed dict).

    Items become ``submissions`` (``id`` = item index, ``submission``, ``description``,
    ``reference_submission``, ``rubric`` as JSON for per-item rubrics, ``query`` from the
    dataset or item prompt); ground truth becomes ``human`` labels (rater
    ``"ground_truth"``) aligned with the effective rubric's criteria by position.
    """

    data = source if isinstance(source, dict) else _load(source)
    if not isinstance(data, dict) or "items" not in data:
        raise ValueError("not an autorubric RubricDataset: expected an object with 'items'")
    rubric = Rubric.from_dict(data["rubric"]) if data.get("rubric") else None
    subs, labels = [], []
    for i, item in enumerate(data["items"]):
        own = Rubric.from_dict(item["rubric"]) if item.get("rubric") else None
        eff = own or rubric
        if eff is None:
            raise ValueError(f"item {i}: no rubric (neither per-item nor global)")
        subs.append(
            {
                "id": i,
                "submission": item["submission"],
                "description": item.get("description"),
                "query": item.get("prompt") or data.get("prompt"),
                "reference_submission": item.get("reference_submission") or data.get("reference_submission"),
                "rubric": json.dumps(eff.to_dict()) if own is not None else None,
            }
        )
        gt = item.get("ground_truth")
        if gt is not None:
            if len(gt) != len(eff):
                raise ValueError(f"item {i}: {len(gt)} ground-truth values for {len(eff)} criteria")
            labels += [
                {
                    "id": i,
                    "criterion": c.name,
                    "rater": "ground_truth",
                    "label": ground_truth_label(c, v, f"item {i}: ground_truth[{j}]"),
                }
                for j, (c, v) in enumerate(zip(eff, gt, strict=True))
                if v is not None
            ]
    human = pl.DataFrame(
        labels, schema={"id": pl.Int64, "criterion": pl.String, "rater": pl.String, "label": pl.String}
    )
    card = {
        "name": data.get("name") or "autorubric dataset",
        "title": data.get("name") or "",
        "origin": "autorubric RubricDataset JSON",
    }
    return Dataset(card["name"], card, human, None, pl.DataFrame(subs), rubric)


def _positional(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``write_autorubric(submissions, rubric, human)`` (before 0.3) with keywords, and a warning."""
    if len(args) <= 1:
        return args, kwargs
    warn_deprecated(
        f"{name}(submissions, rubric, human) is deprecated and will be removed in {REMOVED_IN}: "
        f"pass {name}(submissions, human=..., rubric=...)"
    )
    return args[:1], {**kwargs, **dict(zip(("rubric", "human"), args[1:], strict=False))}


@adapted(_positional)
def write_autorubric(
    submissions: Any,
    *,
    human: Any = None,
    rubric: Rubric | None = None,
    path: str | Path | None = None,
    prompt: str = "",
    name: str | None = None,
    column: str = "submission",
    id_column: str = "id",
    rater: str | None = None,
) -> dict[str, Any]:
    """Write submissions (and human labels as ground truth) in autorubric's format: YAML when
    ``path`` ends in ``.yaml``/``.yml``, else JSON.

    Per-item rubrics come from a ``rubric`` column (JSON or dicts); a row's own rubric is
    written with the item and its ground truth follows it, also beside a global ``rubric``.
    An item gets ``ground_truth`` only when every criterion has a label (from ``rater``, or the
    only rater). Returns the dict; writes it when ``path`` is given.
    """

    s = to_polars(submissions, name="submissions")
    labels: dict[tuple[Any, str], str] = {}
    if human is not None:
        h = to_polars(human, name="human")
        if "rater" in h.columns:
            raters = h["rater"].unique().to_list()
            if rater is None and len(raters) > 1:
                raise ValueError(f"human labels have several raters {raters}; pass rater=")
            if rater is not None:
                h = h.filter(pl.col("rater") == rater)
        labels = {(r[0], r[1]): str(r[2]) for r in h.select("id", "criterion", "label").iter_rows()}
    items = []
    for row in s.iter_rows(named=True):
        raw = row.get("rubric")  # an item's own rubric wins over the global one, as autorubric reads it
        own = Rubric.from_dict(json.loads(raw) if isinstance(raw, str) else raw) if raw is not None else None
        eff = own or rubric
        if eff is None:
            raise ValueError(f"item {row[id_column]!r}: no rubric (pass rubric= or a 'rubric' column)")
        item: dict[str, Any] = {"submission": row[column], "description": str(row.get("description") or row[id_column])}
        gt = [labels.get((row[id_column], c.name or "")) for c in eff]
        item["ground_truth"] = gt if all(g is not None for g in gt) else None
        if own is not None:
            item["rubric"] = _autorubric_rubric(own)
        if row.get("reference_submission"):
            item["reference_submission"] = row["reference_submission"]
        items.append(item)
    out: dict[str, Any] = {
        "name": name,
        "prompt": prompt,
        "rubric": _autorubric_rubric(rubric) if rubric else None,
        "items": items,
    }
    if path is not None and Path(path).suffix in YAML_SUFFIXES:
        Path(path).write_text(yaml.safe_dump(out, sort_keys=False, allow_unicode=True), encoding="utf-8")
    elif path is not None:
        Path(path).write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    return out


def _autorubric_rubric(rubric: Rubric) -> list[dict[str, Any]] | dict[str, Any]:
    """A list of criteria, or ``{"guidelines", "criteria"}`` when the rubric has guidelines."""
    crit = [_autorubric_criterion(c) for c in rubric]
    return crit if rubric.guidelines is None else {"guidelines": rubric.guidelines, "criteria": crit}


def _autorubric_criterion(c: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": c.name, "weight": c.weight, "requirement": c.requirement}
    if c.options is not None:
        d["scale_type"] = c.scale
        d["options"] = [{"label": o.label, "value": o.value, "na": o.na} for o in c.options]
    return d
