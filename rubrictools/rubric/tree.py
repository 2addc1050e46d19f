"""Hierarchical rubrics: PaperBench's tree of requirements, graded at its leaves, scored up the tree.

PaperBench (Starace et al. 2025) writes a rubric as a tree of nodes ``{"id", "requirements",
"weight", "sub_tasks", "task_category", "finegrained_task_category"}``: weights are
non-negative numbers, a leaf (no ``sub_tasks``) has a ``task_category`` (``Code
Development``, ``Code Execution``, ``Result Analysis``, or ``Subtree``), an inner node has
none. A judge grades each leaf 0 or 1; a node's score is the weighted mean of its children's,

    s(node) = sum_c w_c s(c) / sum_c w_c      (0 when the children's weights sum to 0),

so a weight counts only against its siblings. :class:`RubricTree` reads that format exactly
(:meth:`RubricTree.from_dict`, :meth:`RubricTree.from_file`), gives the flat
:class:`~rubrictools.rubric.Rubric` of its leaves to grade (:meth:`RubricTree.rubric`), and
scores every node of every submission from the verdict table (:meth:`RubricTree.score`).
A leaf graded MET scores 1, anything else 0; a leaf whose judge call failed (or that has no
verdict) makes its node and every ancestor null for that submission, never a silent 0
(``on_error="zero"`` scores it 0, as PaperBench scores a leaf its judge could not grade).

>>> tree = RubricTree.from_dict({"id": "root", "requirements": "Reproduce the paper", "weight": 1, "sub_tasks": [
...     {"id": "a", "requirements": "Implements the method", "weight": 3, "sub_tasks": [],
...      "task_category": "Code Development"},
...     {"id": "b", "requirements": "Runs the experiment", "weight": 1, "sub_tasks": [],
...      "task_category": "Code Execution"}]})
>>> import polars as pl
>>> v = pl.DataFrame({"id": [7, 7], "criterion": ["a", "b"], "verdict": ["MET", "UNMET"]})
>>> tree.score(v).filter(pl.col("node") == "root")["score"].item()
0.75
"""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.rubric.labels import MET
from rubrictools.rubric.model import Rubric
from rubrictools.rubric.scoring import select_judge
from rubrictools.stack import user_stacklevel

__all__ = ["FINEGRAINED_CATEGORIES", "TASK_CATEGORIES", "RubricTree", "TreeNode"]

TASK_CATEGORIES: tuple[str, ...] = ("Code Development", "Code Execution", "Result Analysis", "Subtree")
FINEGRAINED_CATEGORIES: tuple[str, ...] = (
    "Environment & Infrastructure Setup",
    "Dataset and Model Acquisition",
    "Data Processing & Preparation",
    "Method Implementation",
    "Experimental Setup",
    "Evaluation, Metrics & Benchmarking",
    "Logging, Analysis & Presentation",
)
_ASK = {  # what the judge checks for each kind of leaf (our wording)
    "Code Development": "Judge whether the submission's code actually implements this (a description is not enough).",
    "Code Execution": "Judge whether running the submission's reproduction script carries this out successfully.",
    "Result Analysis": "Judge whether the outputs of the reproduction run show results that agree with this.",
    "Subtree": "Judge how well the submission meets this requirement as a whole.",
}


@dataclass(frozen=True)
class TreeNode:
    """One node of a :class:`RubricTree` (PaperBench's fields)."""

    id: str
    requirements: str
    weight: float
    sub_tasks: tuple[TreeNode, ...] = ()
    task_category: str | None = None
    finegrained_task_category: str | None = None

    @property
    def is_leaf(self) -> bool:
        return not self.sub_tasks

    def walk(self, depth: int = 0, parent: str | None = None) -> list[tuple[TreeNode, int, str | None]]:
        """``(node, depth, parent id)`` of this node and its descendants, depth first."""
        out = [(self, depth, parent)]
        for child in self.sub_tasks:
            out += child.walk(depth + 1, self.id)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "requirements": self.requirements,
            "weight": self.weight,
            "sub_tasks": [c.to_dict() for c in self.sub_tasks],
            "task_category": self.task_category,
            "finegrained_task_category": self.finegrained_task_category,
        }


def _node(data: Any, path: str) -> TreeNode:
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a node is a mapping, got {type(data).__name__}")
    missing = [k for k in ("id", "requirements", "weight", "sub_tasks") if k not in data]
    where = f"{path} (id {data.get('id')!r})" if "id" in data else path
    if missing:
        raise ValueError(f"{where}: missing field(s) {missing}")
    w = data["weight"]
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
        raise ValueError(f"{where}: weight must be a non-negative number, got {w!r}")
    if not isinstance(data["sub_tasks"], (list, tuple)):
        raise ValueError(f"{where}: sub_tasks must be a list")
    kids = tuple(_node(c, f"{path}.sub_tasks[{i}]") for i, c in enumerate(data["sub_tasks"]))
    cat, fine = data.get("task_category"), data.get("finegrained_task_category")
    if kids and cat:
        raise ValueError(f"{where}: an inner node has no task_category (got {cat!r})")
    if not kids and cat not in TASK_CATEGORIES:
        raise ValueError(f"{where}: a leaf needs a task_category among {list(TASK_CATEGORIES)}, got {cat!r}")
    if fine is not None and fine not in FINEGRAINED_CATEGORIES:
        raise ValueError(f"{where}: finegrained_task_category {fine!r} is not among {list(FINEGRAINED_CATEGORIES)}")
    return TreeNode(str(data["id"]), str(data["requirements"]), float(w), kids, cat, fine)


def _renumbered(node: TreeNode, repeated: set[str], taken: set[str], seen: dict[str, int]) -> TreeNode:
    """``node`` with the later occurrences of repeated ids renamed ``<id>#k`` (depth first)."""
    new_id = node.id
    if node.id in repeated:
        seen[node.id] = seen.get(node.id, 0) + 1
        k = seen[node.id]
        while k > 1 and f"{node.id}#{k}" in taken:
            k += 1
        if k > 1:
            new_id = f"{node.id}#{k}"
            taken.add(new_id)
            seen[node.id] = k
    kids = tuple(_renumbered(c, repeated, taken, seen) for c in node.sub_tasks)
    return replace(node, id=new_id, sub_tasks=kids)


def _listed(names: list[str]) -> str:
    """Up to five names, then how many more."""
    return ", ".join(map(str, names[:5])) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _warn_unmatched(v: pl.DataFrame, leaves: list[str], graded: list[str], on_error: str) -> None:
    """Say which leaves have no verdict at all, and which criteria are not leaves of the tree."""
    absent = [x for x in leaves if x not in set(graded)]
    extra = [c for c in v["criterion"].unique(maintain_order=True).to_list() if c not in set(leaves)]
    if absent or extra:
        what = "score 0" if on_error == "zero" else "are null, and so are their ancestors"
        missing = f"{len(absent)} of {len(leaves)} leaves have no verdict: {_listed(absent)} (they {what})"
        parts = [missing] if absent else []
        parts += [f"criteria that are not leaves of the tree are left out: {_listed(extra)}"] if extra else []
        warnings.warn(
            f"RubricTree.score: {'; '.join(parts)}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


@dataclass(frozen=True)
class RubricTree:
    """A PaperBench-style rubric tree (see the module docstring).

    Parameters
    ----------
    root
        The root :class:`TreeNode`; usually read with :meth:`from_dict` or :meth:`from_file`.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> tree = rt.RubricTree.from_dict({"id": "paper", "requirements": "Reproduce it", "weight": 1, "sub_tasks": [
    ...     {"id": "code", "requirements": "Implements the method", "weight": 3, "sub_tasks": [],
    ...      "task_category": "Code Development"},
    ...     {"id": "run", "requirements": "Runs the experiment", "weight": 1, "sub_tasks": [],
    ...      "task_category": "Code Execution"}]})
    >>> tree.rubric().names  # the leaves a judge grades
    ('code', 'run')
    >>> v = pl.DataFrame({"id": [1, 1], "criterion": ["code", "run"], "verdict": ["MET", "UNMET"]})
    >>> tree.score(v).select("node", "score").rows()
    [('paper', 0.75), ('code', 1.0), ('run', 0.0)]
    """

    root: TreeNode

    @classmethod
    def from_dict(cls, data: Any) -> RubricTree:
        """Read PaperBench's rubric JSON (a root node); errors name the node's path and id."""
        tree = cls(_node(data, "root"))
        counts = Counter(n.id for n, _, _ in tree.root.walk())
        repeated = sorted(i for i, k in counts.items() if k > 1)
        if repeated:  # PaperBench's own loader accepts them (2 of its 23 rubrics have some)
            tree = cls(_renumbered(tree.root, set(repeated), set(counts), {}))
            warnings.warn(
                f"rubric tree: node ids {repeated[:5]} repeat; each later occurrence (depth first) is renamed "
                "'<id>#2', '<id>#3', ... so every node, and every leaf's criterion, has a name of its own",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        return tree

    @classmethod
    def from_file(cls, path: str | Path) -> RubricTree:
        """Read a PaperBench ``rubric.json``."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict[str, Any]:
        return self.root.to_dict()

    def nodes(self) -> pl.DataFrame:
        """One row per node, depth first: ``node, parent, depth, weight, leaf, task_category,
        requirements, order``."""
        rows = [
            {
                "node": n.id,
                "parent": p,
                "depth": d,
                "weight": n.weight,
                "leaf": n.is_leaf,
                "task_category": n.task_category,
                "requirements": n.requirements,
                "order": k,
            }
            for k, (n, d, p) in enumerate(self.root.walk())
        ]
        return pl.DataFrame(rows, schema_overrides={"parent": pl.String, "task_category": pl.String})

    def rubric(self) -> Rubric:
        """The leaves as a flat rubric to grade (criterion name = node id; the requirement plus
        what to judge for its category; weight = its weight; tags = its categories). Score the
        verdicts with :meth:`score`, not ``rt.score``: weights count against siblings only."""
        leaves = [n for n, _, _ in self.root.walk() if n.is_leaf]
        if all(n.weight == 0 for n in leaves):
            raise ValueError("every leaf of the rubric tree has weight 0: nothing would count")
        return Rubric.from_dict(
            [
                {
                    "name": n.id,
                    "requirement": f"{n.requirements}\n{_ASK[n.task_category or 'Subtree']}",
                    "weight": n.weight,
                    "tags": [t for t in (n.task_category, n.finegrained_task_category) if t],
                }
                for n in leaves
            ]
        )

    def score(
        self, verdicts: Any, *, on_error: Literal["null", "zero"] = "null", judge: str | None = None
    ) -> pl.DataFrame:
        """Every node's score for every submission of ``verdicts`` (graded with :meth:`rubric`):
        ``id, node, parent, depth, weight, leaf, score``, depth first within each submission.
        The judge's rows are picked as :func:`rubrictools.score` picks them (``judge=``; by
        default a one-judge table, else its ensemble rows, else an error asking for ``judge=``).

        Leaves: 1 when the verdict is MET, else 0; a failed call or a missing verdict is null
        (``on_error="zero"``: 0). Inner nodes: ``sum_c w_c s_c / sum_c w_c`` over the children
        (0 when their weights sum to 0; null when a child is null). One polars pass per level.
        """
        if on_error not in ("null", "zero"):
            raise ValueError(f"on_error must be 'null' or 'zero', got {on_error!r}")
        v = to_polars(verdicts, name="verdicts")
        missing = [c for c in ("id", "criterion", "verdict") if c not in v.columns]
        if missing:
            raise ValueError(f"verdicts: missing column(s) {missing} (columns: {v.columns})")
        if "judge" in v.columns:
            v = select_judge(v, judge)
        elif v.select(pl.struct("id", "criterion").is_duplicated().any()).item():
            raise ValueError("verdicts: several rows per (id, criterion); keep one verdict per leaf and submission")
        nodes = self.nodes()
        if not nodes.filter("leaf")["weight"].sum() > 0:
            raise ValueError("every leaf of the rubric tree has weight 0: nothing would count")
        leaves = nodes.filter("leaf").select("node")
        failed = pl.col("error").is_not_null() if "error" in v.columns else pl.lit(False)
        label = (
            pl.col("verdict").cast(pl.String).str.strip_chars().str.to_uppercase()
        )  # "met" reads as rt.score reads it
        got = v.filter(pl.col("criterion").is_in(leaves["node"].implode())).select(
            "id",
            pl.col("criterion").alias("node"),
            pl.when(failed | pl.col("verdict").is_null())
            .then(None)
            .otherwise((label == MET).cast(pl.Float64))
            .alias("score"),
        )
        if v.height and got.height == 0:
            crits = v["criterion"].unique(maintain_order=True).head(5).to_list()
            raise ValueError(
                f"no verdict is for a leaf of this tree (the verdicts' criteria {crits}... are not its leaves "
                f"{leaves['node'].head(5).to_list()}...): were they graded with another rubric than tree.rubric()?"
            )
        _warn_unmatched(v, leaves["node"].to_list(), got["node"].unique().to_list(), on_error)
        ids = v.select("id").unique(maintain_order=True)
        scores = ids.join(leaves, how="cross").join(got, on=["id", "node"], how="left")
        if on_error == "zero":
            scores = scores.with_columns(pl.col("score").fill_null(0.0))
        edges = nodes.select("node", "parent", "weight", "depth")
        for d in range(int(nodes["depth"].max() or 0) - 1, -1, -1):  # type: ignore[arg-type]  # an integer column
            kids = scores.join(edges.filter(pl.col("depth") == d + 1), on="node")
            up = kids.group_by("id", "parent").agg(
                (pl.col("weight") * pl.col("score")).sum().alias("num"),
                pl.col("weight").sum().alias("den"),
                pl.col("score").is_null().any().alias("gap"),
            )
            mean = pl.when(pl.col("gap")).then(None).when(pl.col("den") > 0).then(pl.col("num") / pl.col("den"))
            scores = pl.concat(
                [scores, up.select("id", pl.col("parent").alias("node"), mean.otherwise(0.0).alias("score"))]
            )
        out = scores.join(nodes.select("node", "parent", "depth", "weight", "leaf", "order"), on="node")
        return out.join(ids.with_row_index("__i"), on="id").sort("__i", "order").drop("__i", "order")
