"""Collect human labels per (submission, criterion) quickly, without ever losing one.

Every label is appended to a JSON-lines file as soon as it is given (one ``json.dumps`` line
and a flush), so a crashed or restarted kernel resumes where it stopped: labelled pairs are
read back and skipped. Undo appends a retraction line instead of rewriting the file.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.widgets.snapshot import current_html, snapshot_bundle

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["LabelWidget"]


def _id_text(x: Any) -> str:
    """How an id that JSON has no type for (a date, datetime, decimal...) is written: its text."""
    return x.isoformat() if hasattr(x, "isoformat") else str(x)


def _id_key(x: Any) -> str:
    """An id as it reads back from the labels file, so a reloaded label finds its pair."""
    return json.dumps(x, default=_id_text)


class LabelWidget:
    """Label every criterion of every submission with buttons or the keyboard.

    * one (submission, criterion) at a time: the submission text, the criterion's
      requirement and one button per allowed label;
    * keyboard: type the label's number (``1``, ``2``, ...) or its first letter in the
      shortcut box (``m`` = MET, ``u`` = UNMET, ``c`` = CANNOT_ASSESS);
    * ``skip`` moves on without a label (the pair comes back at the end), ``undo`` removes the
      last label and goes back to it; a progress bar counts labelled pairs;
    * ``path`` (JSON lines) persists each label immediately; :attr:`labels` is the long
      ``id, criterion, rater, label`` table that :func:`rubrictools.agreement` takes;
    * ``queue``: a table with an ``id`` column, e.g. :func:`rubrictools.choose_to_label`'s:
      only those submissions, in that order; its ``pi`` column (inclusion probabilities) comes
      back in :attr:`labels`, ready for ``rt.ppi_estimate(..., weights="pi")``.

    >>> import polars as pl, rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "a", "requirement": "is short"}])
    >>> lw = LabelWidget(pl.DataFrame({"id": [1, 2], "submission": ["hi", "hello there"]}), r, rater="me")
    >>> lw.buttons["MET"].click(); lw.shortcut.value = "u"
    >>> lw.labels["label"].to_list()
    ['MET', 'UNMET']
    """

    def __init__(
        self,
        df: Any,
        rubric: Rubric,
        *,
        column: str = "submission",
        id_column: str = "id",
        rater: str = "me",
        path: str | Path | None = None,
        criteria: list[str] | None = None,
        queue: Any = None,
    ) -> None:
        import ipywidgets as w

        frame = to_polars(df, name="df")
        for c in (column, id_column):
            if c not in frame.columns:
                raise ValueError(f"df has no column {c!r}; it has {frame.columns}")
        if frame[id_column].is_duplicated().any():
            raise ValueError(f"{id_column!r} has duplicate ids")
        self.rubric = rubric
        self.rater = rater
        self.path = Path(path) if path is not None else None
        self.texts = dict(zip(frame[id_column].to_list(), frame[column].to_list(), strict=False))
        names = criteria or list(rubric.names)
        unknown = set(names) - set(rubric.names)
        if unknown:
            raise ValueError(f"criteria {sorted(unknown)} are not in the rubric")
        ids = frame[id_column].to_list()
        self.pi: dict[Any, float] = {}
        if queue is not None:
            q = to_polars(queue, name="queue")
            if "id" not in q.columns:
                raise ValueError(f"queue needs an 'id' column (e.g. rt.choose_to_label's); it has {q.columns}")
            missing = set(q["id"].to_list()) - set(ids)
            if missing:
                raise ValueError(f"queue ids {sorted(missing, key=str)[:5]} are not in df's {id_column!r}")
            ids = q["id"].to_list()
            if "pi" in q.columns:
                self.pi = dict(zip(ids, q["pi"].to_list(), strict=True))
        self.queue: list[tuple[Any, str]] = [(i, c) for i in ids for c in names]
        self._labels: dict[tuple[Any, str], str] = {}
        self._history: list[tuple[Any, str]] = []
        self._load()
        self.pos = 0
        self._advance_to_unlabelled()

        self.text = w.HTML()
        self.requirement = w.HTML()
        self.progress = w.IntProgress(min=0, max=len(self.queue), description="labelled")
        self.status = w.Label()
        self.buttons: dict[str, Any] = {}
        self._crit_buttons = w.HBox([])
        self.skip_button = w.Button(description="skip", icon="forward")
        self.undo_button = w.Button(description="undo", icon="undo")
        self.shortcut = w.Text(
            placeholder="type 1-9 or m/u/c", description="key", continuous_update=True, layout=w.Layout(width="220px")
        )
        self.skip_button.on_click(lambda _: self.skip())
        self.undo_button.on_click(lambda _: self.undo())
        self.shortcut.observe(self._on_key, names="value")
        self.widget = w.VBox(
            [
                w.HBox([self.progress, self.status]),
                self.text,
                self.requirement,
                self._crit_buttons,
                w.HBox([self.skip_button, self.undo_button, self.shortcut]),
            ]
        )
        self._render()

    # ---------------------------------------------------------------- persistence
    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        # ids are matched on their JSON text: a date, datetime or decimal id is written as text
        # (json.dumps(default=str)) and comes back as that text, never equal to the id itself
        wanted = {(_id_key(i), c): (i, c) for i, c in self.queue}
        for line in self.path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a crash: ignore it
            if rec.get("rater") != self.rater:
                continue
            key = wanted.get((_id_key(rec["id"]), rec["criterion"]))
            if key is None:
                continue
            if rec.get("undo"):
                self._labels.pop(key, None)
            else:
                self._labels[key] = rec["label"]

    def _append(self, rec: dict[str, Any]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps(rec, default=_id_text) + "\n")
            fh.flush()

    # ---------------------------------------------------------------- actions
    @property
    def current(self) -> tuple[Any, str] | None:
        """The (id, criterion) being labelled, or None when everything is labelled."""
        return self.queue[self.pos] if self.pos < len(self.queue) else None

    def _advance_to_unlabelled(self) -> None:
        n = len(self.queue)
        for step in range(n):
            k = (self.pos + step) % n if n else 0
            if n and self.queue[k] not in self._labels:
                self.pos = k
                return
        self.pos = n

    def set_label(self, label: str) -> None:
        """Label the current pair and move on."""
        cur = self.current
        if cur is None:
            return
        crit = self.rubric[cur[1]]
        canon = crit.canonical_label(label)
        if canon is None:
            raise ValueError(f"{label!r} is not a label of {cur[1]!r}: {list(crit.labels)}")
        self._labels[cur] = canon
        self._history.append(cur)
        self._append({"id": cur[0], "criterion": cur[1], "rater": self.rater, "label": canon, "t": time.time()})
        self.pos += 1
        if self.pos >= len(self.queue) or self.queue[self.pos] in self._labels:
            self._advance_to_unlabelled()
        self._render()

    def skip(self) -> None:
        """Leave the current pair unlabelled for now."""
        if self.current is None:
            return
        start = self.pos
        n = len(self.queue)
        for step in range(1, n + 1):
            k = (start + step) % n
            if self.queue[k] not in self._labels:
                self.pos = k
                break
        self._render()

    def undo(self) -> None:
        """Remove the last label given in this session and return to it."""
        if not self._history:
            self.status.value = "nothing to undo"
            return
        key = self._history.pop()
        self._labels.pop(key, None)
        self._append({"id": key[0], "criterion": key[1], "rater": self.rater, "undo": True, "t": time.time()})
        self.pos = self.queue.index(key)
        self._render()

    def _on_key(self, change: dict[str, Any]) -> None:
        key = str(change["new"]).strip().lower()
        if not key:
            return
        cur = self.current
        if cur is not None:
            labels = list(self.rubric[cur[1]].labels)
            pick = None
            if key.isdigit() and 1 <= int(key) <= len(labels):
                pick = labels[int(key) - 1]
            else:
                starts = [lab for lab in labels if lab.lower().startswith(key)]
                pick = starts[0] if len(starts) == 1 else None
            if pick is not None:
                self.set_label(pick)
            else:
                self.status.value = f"no label for key {key!r}"
        self.shortcut.value = ""

    # ---------------------------------------------------------------- view
    def _render(self) -> None:
        import ipywidgets as w

        done = len(self._labels)
        self.progress.value = done
        cur = self.current
        if cur is None:
            self.text.value = "<b>All pairs are labelled.</b> Read <code>widget.labels</code>."
            self.requirement.value = ""
            self._crit_buttons.children = ()
            self.buttons = {}
            self.status.value = f"{done} / {len(self.queue)}"
            return
        sid, crit = cur
        c = self.rubric[crit]
        self.status.value = f"{done} / {len(self.queue)} · submission {sid!r}"
        box = "white-space:pre-wrap;border:1px solid #ccc;padding:6px"
        self.text.value = f"<div style='{box}'>{html.escape(str(self.texts[sid]))}</div>"
        self.requirement.value = f"<b>{html.escape(crit)}</b> (weight {c.weight:g}): {html.escape(c.requirement)}"
        self.buttons = {}
        for i, lab in enumerate(c.labels, start=1):
            b = w.Button(description=f"{i}: {lab}")
            b.on_click(lambda _, lab=lab: self.set_label(lab))
            self.buttons[lab] = b
        self._crit_buttons.children = tuple(self.buttons.values())

    @property
    def labels(self) -> pl.DataFrame:
        """Labels given so far (including resumed ones), as ``id, criterion, rater, label``."""
        order = {k: i for i, k in enumerate(self.queue)}
        items = sorted(((k, v) for k, v in self._labels.items() if k in order), key=lambda kv: order[kv[0]])
        out = pl.DataFrame(
            {
                "id": [k[0] for k, _ in items],
                "criterion": [k[1] for k, _ in items],
                "rater": self.rater,
                "label": [v for _, v in items],
            },
            schema_overrides={"criterion": pl.String, "rater": pl.String, "label": pl.String},
        )
        if self.pi:
            out = out.with_columns(pl.Series("pi", [self.pi[k[0]] for k, _ in items], dtype=pl.Float64))
        return out

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget plus a static snapshot for exports (:mod:`rubrictools.widgets.snapshot`)."""
        cur = self.current
        shown = None
        if cur is not None:  # the answer, the criterion and the buttons, as the live widget shows them
            sid, crit = cur
            c = self.rubric[crit]
            heading = f"Now: submission {sid!r} · {crit} (weight {c.weight:g}): {c.requirement}"
            choices = [f"{i}: {lab}" for i, lab in enumerate(c.labels, start=1)] + ["skip", "undo"]
            firsts = [lab[0].lower() for lab in c.labels]  # a first letter picks its label when no other shares it
            keys = f"1-{len(firsts)}" + (f" or {'/'.join(firsts)}" if len(set(firsts)) == len(firsts) else "")
            shown = current_html(heading, str(self.texts[sid]), choices, keys=keys)
        return snapshot_bundle(self.widget, "Labelling", self.status.value, self.labels, current=shown)
