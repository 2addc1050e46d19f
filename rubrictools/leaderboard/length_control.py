"""Length-controlled win rates (Dubois et al. 2024, "Length-Controlled AlpacaEval").

A judge that prefers longer answers inflates verbose systems. For each system ``m`` compared
with a ``baseline`` on instructions ``x``, a logistic model of the judge's preference (soft
preferences allowed) is fitted,

    P(m beats baseline | x) = sigma( theta_m + phi_m * tanh(d_mx / sd_m) + psi_m * gamma_x ),

with ``d_mx = len(m's answer) - len(baseline's answer)`` scaled by its standard deviation over
the system's instructions, and ``gamma_x`` the instruction's difficulty. The length-controlled
win rate is the model's prediction with the length term at 0, averaged over instructions:

    LC_m = mean_x sigma( theta_m + psi_m * gamma_x ).

As AlpacaEval's ``glm_winrate`` does, and to its digits: ``(theta, phi, psi)`` per system by
L1-penalised logistic regression without intercept, fitted to the optimum
(:mod:`rubrictools.leaderboard.l1_logistic`), the penalty ``C`` chosen in ``logspace(-4, 4,
10)`` by 5-fold cross-validation on the log-loss of the soft preferences, with the folds
scikit-learn's ``GroupKFold`` deals, then refitted on all instructions.

**Reference systems** (AlpacaEval's ``length_controlled_v1``): preferences of fixed systems
against the same baseline, e.g. a verbose and a concise version of the baseline itself, join
every system's fit with a total weight ``reference_weight`` (0.2) shared between them, and
``theta`` applies to the system's own rows only (the ``not_gamed_baseline`` feature). They pull
``phi`` and ``psi`` towards values that undo known length gaming. Without them the fit is
AlpacaEval's ``length_controlled_noreg``.

Instruction difficulty is taken from ``instruction_difficulty=`` (e.g. AlpacaEval's published
values, keyed by your instruction ids) or fitted first, once, across all systems with ``psi_m``
fixed at 1 (``sigma(theta_m + phi_m tanh(.) + gamma_x)``, a weak L2 penalty pinning the shared
level). With fewer than 3 systems and no difficulties given, the instruction term is dropped
by default: one system's preferences cannot tell instruction difficulty from its own noise.

Intervals: percentile intervals over ``n_resamples`` resamples of the system's instructions
(reference rows fixed), refitting with the chosen penalty and the same ``gamma``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import minimize
from scipy.special import expit

from rubrictools.deprecation import adapted, renamed
from rubrictools.frames import to_polars
from rubrictools.leaderboard.l1_logistic import choose_c, fit_l1_logistic
from rubrictools.leaderboard.table import check_preferences
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling

__all__ = ["length_controlled_win_rates"]


def _difficulty(rows: pl.DataFrame, l2: float = 1e-2) -> dict[Any, float]:
    """``gamma_x`` from every system at once: ``sigma(theta_m + phi_m tanh(d) + gamma_x)``."""
    sys = rows["system"].unique(maintain_order=True).to_list()
    ins = rows["id"].unique(maintain_order=True).to_list()
    si = rows["system"].replace_strict({s: k for k, s in enumerate(sys)}, return_dtype=pl.Int64).to_numpy()
    xi = rows["id"].replace_strict({x: k for k, x in enumerate(ins)}, return_dtype=pl.Int64).to_numpy()
    t, y = rows["t"].to_numpy(), rows["y"].to_numpy()
    m, n = len(sys), len(ins)

    def f(p: np.ndarray) -> tuple[float, np.ndarray]:
        theta, phi, gamma = p[:m], p[m : 2 * m], p[2 * m :]
        z = theta[si] + phi[si] * t + gamma[xi]
        r = expit(z) - y
        loss = float(np.sum(np.logaddexp(0, z) - y * z)) + l2 * float(gamma @ gamma)
        g = np.concatenate([np.bincount(si, r, m), np.bincount(si, r * t, m), np.bincount(xi, r, n) + 2 * l2 * gamma])
        return loss, g

    res = minimize(f, np.zeros(2 * m + n), jac=True, method="L-BFGS-B")
    return dict(zip(ins, res.x[2 * m :].tolist(), strict=True))


def _first_repeat(frame: pl.DataFrame) -> dict[str, Any] | None:
    """The first (id, system) that ``frame`` holds more than once, with its count ``len``."""
    twice = frame.group_by("id", "system", maintain_order=True).len().filter(pl.col("len") > 1)
    return twice.row(0, named=True) if twice.height else None


def _rows(prefs: pl.DataFrame, lengths: pl.DataFrame, baseline: str) -> pl.DataFrame:
    """One row per (system, instruction) against the baseline: ``id, system, y, t``."""
    vs = prefs.filter((pl.col("system_a") == baseline) | (pl.col("system_b") == baseline)).filter(
        pl.col("value").is_not_null()
    )
    if vs.height == 0:
        raise ValueError(f"baseline={baseline!r} is in no comparison (systems: {sorted(set(prefs['system_a']))})")
    a_is_base = pl.col("system_a") == baseline
    rows = vs.select(
        "id",
        pl.when(a_is_base).then(pl.col("system_b")).otherwise(pl.col("system_a")).alias("system"),
        pl.when(a_is_base).then(1 - pl.col("value")).otherwise(pl.col("value")).cast(pl.Float64).alias("y"),
    )
    r = _first_repeat(rows)
    if r is not None:
        split = [c for c in ("criterion", "judge") if c in prefs.columns and prefs[c].n_unique() > 1]
        hint = f": it holds several {' and '.join(split)} values, filter one first" if split else ""
        raise ValueError(
            f"prefs compares system {r['system']!r} with the baseline on id {r['id']!r} {r['len']} times; the model "
            f"needs one comparison per (system, instruction){hint}"
        )
    ln = lengths.select("id", pl.col("system").cast(pl.String), pl.col("length").cast(pl.Float64))
    r = _first_repeat(ln)
    if r is not None:
        raise ValueError(
            f"lengths gives system {r['system']!r} on id {r['id']!r} {r['len']} lengths: one per (system, id)"
        )
    rows = rows.join(ln, on=["id", "system"], how="left", maintain_order="left").join(
        ln.filter(pl.col("system") == baseline).select("id", pl.col("length").alias("base")),
        on="id",
        how="left",
        maintain_order="left",
    )
    missing = rows.filter(pl.col("length").is_null() | pl.col("base").is_null())
    if missing.height:
        r = missing.row(0, named=True)
        raise ValueError(f"lengths: no length for id {r['id']!r} (system {r['system']!r} or the baseline)")
    d = pl.col("length") - pl.col("base")
    sd = d.std().over("system")
    return rows.with_columns(pl.when(sd > 0).then((d / sd).tanh()).otherwise(0.0).alias("t"))


def _difficulty_of(table: Any, ids: pl.Series) -> dict[Any, float]:
    """``instruction_difficulty=`` as ``{id: difficulty}``, refusing ids it does not cover."""
    gd = to_polars(table, name="instruction_difficulty")
    missing = [c for c in ("id", "difficulty") if c not in gd.columns]
    if missing:
        raise ValueError(f"instruction_difficulty: missing column(s) {missing} (columns: {gd.columns})")
    if gd["id"].is_duplicated().any():
        raise ValueError(f"instruction_difficulty: id {gd.filter(pl.col('id').is_duplicated())['id'][0]!r} twice")
    gamma = dict(zip(gd["id"].to_list(), gd["difficulty"].cast(pl.Float64).to_list(), strict=True))
    unmatched = ids.unique(maintain_order=True).filter(~ids.unique(maintain_order=True).is_in(gd["id"].implode()))
    if unmatched.len():
        raise ValueError(
            f"instruction_difficulty: {unmatched.len():,} of {ids.n_unique():,} instruction ids have no difficulty "
            f"(e.g. {unmatched.head(3).to_list()}; its ids: e.g. {gd['id'].head(3).to_list()}). Key it by the ids "
            "of prefs (AlpacaEval's file is keyed by position, 0..804) rather than let them count as 0."
        )
    return gamma


def _references(refs: Any, prefs: pl.DataFrame, lengths: pl.DataFrame, baseline: str, weight: float) -> pl.DataFrame:
    """The reference systems' rows against ``baseline`` with each row's weight ``s``:
    ``weight`` shared equally between the reference systems."""
    if not 0 < weight <= 1:
        raise ValueError(f"reference_weight must be in (0, 1], got {weight}")
    rows = _rows(check_preferences(refs), lengths, baseline)
    graded = set(prefs["system_a"].to_list()) | set(prefs["system_b"].to_list())
    both = sorted(set(rows["system"].to_list()) & (graded - {baseline}))
    if both:
        raise ValueError(f"reference_prefs: {both} are also systems in prefs; a reference system is fixed, not ranked")
    n_refs = rows["system"].n_unique()
    return rows.with_columns(pl.lit(weight / n_refs).alias("s"))


@adapted(renamed(n_boot="n_resamples"))
def length_controlled_win_rates(
    prefs: Any,
    *,
    baseline: str,
    lengths: Any,
    instruction_difficulty: Any = None,
    instruction_term: bool | None = None,
    reference_prefs: Any = None,
    reference_weight: float = 0.2,
    n_resamples: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Length-controlled win rates of every system against ``baseline`` (see module docstring).

    Parameters
    ----------
    prefs
        A preference table (``id, system_a, system_b, value``; soft values allowed); only
        comparisons with ``baseline`` count, one per (system, instruction ``id``).
    baseline
        The system every other one is compared with.
    lengths
        ``id, system, length`` of every answer (characters, tokens: any unit), the reference
        systems' too.
    instruction_difficulty
        ``id, difficulty`` to use instead of fitting it; every instruction id of ``prefs`` must
        have one (an unmatched id is an error, never a silent 0).
    instruction_term
        Include ``psi_m gamma_x`` (default ``None``: when 3 or more systems, or when
        difficulties are given).
    reference_prefs, reference_weight
        Preferences of fixed reference systems against ``baseline`` (e.g. a verbose and a
        concise version of it), joining each system's fit with total weight
        ``reference_weight`` (in (0, 1], default 0.2); with both at AlpacaEval's values this is
        its ``length_controlled_v1``, without ``reference_prefs`` its
        ``length_controlled_noreg``.
    n_resamples, ci, seed
        The bootstrap's resamples of each system's instructions (``0``: point estimates only,
        intervals null); the interval level (written to the table's ``ci_level`` column); its
        seed (``0`` by default: identical calls give identical intervals; ``None`` draws
        afresh).

    Returns
    -------
    polars.DataFrame
        ``system, n, win_rate, lc_win_rate, lc_ci_low, lc_ci_high, ci_level, theta, phi, psi,
        C``: the raw win rate (mean preference), the length-controlled one with its interval,
        and the fitted coefficients (``phi > 0``: the judge favoured this system's longer
        answers).

    Example
    -------
    >>> import numpy as np, polars as pl, rubrictools as rt
    >>> rng = np.random.default_rng(0)
    >>> n = 300
    >>> extra = rng.normal(400, 150, n)  # the verbose system writes ~400 more characters
    >>> p = 1 / (1 + np.exp(-1.5 * np.tanh(extra / extra.std())))  # equal quality, a length-loving judge
    >>> prefs = pl.DataFrame({"id": range(n), "system_a": "verbose", "system_b": "base", "value": p})
    >>> lengths = pl.concat([pl.DataFrame({"id": range(n), "system": "base", "length": 500.0}),
    ...                      pl.DataFrame({"id": range(n), "system": "verbose", "length": 500 + extra})])
    >>> t = rt.length_controlled_win_rates(prefs, baseline="base", lengths=lengths, n_resamples=40)
    >>> round(t["win_rate"][0], 2), round(t["lc_win_rate"][0], 2)
    (0.8, 0.5)
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    prefs = check_preferences(prefs)
    lengths = to_polars(lengths, name="lengths")
    rows = _rows(prefs, lengths, baseline).with_columns(pl.lit(1.0).alias("s"))
    refs = None
    if reference_prefs is not None:
        refs = _references(reference_prefs, prefs, lengths, baseline, reference_weight)
    systems = rows["system"].unique(maintain_order=True).to_list()
    use_gamma = instruction_term if instruction_term is not None else len(systems) >= 3
    if instruction_difficulty is not None:
        ids = rows["id"] if refs is None else pl.concat([rows["id"], refs["id"]])
        gamma = _difficulty_of(instruction_difficulty, ids)
        use_gamma = True if instruction_term is None else instruction_term
    else:
        gamma = _difficulty(rows) if use_gamma else {}
    g = pl.col("id").replace_strict(gamma, default=0.0, return_dtype=pl.Float64).alias("g")
    rows = rows.with_columns(g)
    fixed = None if refs is None else _design(refs.with_columns(g), use_gamma, own=False)
    rng = np.random.default_rng(seed)
    out = []
    for sname in systems:
        part = rows.filter(pl.col("system") == sname)
        x, y, s = _design(part, use_gamma, own=True)
        xa, ya, sa = _stack(fixed, x, y, s)
        c = choose_c(xa, ya, sa)
        w = fit_l1_logistic(xa, ya, c, sa)
        x0 = x.copy()
        x0[:, 1] = 0.0  # the counterfactual: equal lengths
        lc = float(expit(x0 @ w).mean())
        boots = []
        for _ in range(n_resamples):
            k = rng.integers(0, y.size, y.size)
            xb, yb, sb = _stack(fixed, x[k], y[k], s[k])
            boots.append(float(expit(x0[k] @ fit_l1_logistic(xb, yb, c, sb)).mean()))
        lo, hi = np.quantile(boots, [(1 - ci) / 2, 1 - (1 - ci) / 2]) if boots else (np.nan, np.nan)
        out.append({"system": sname, "n": int(y.size), "win_rate": float(y.mean()), "lc_win_rate": lc,
                    "lc_ci_low": float(lo), "lc_ci_high": float(hi), "theta": float(w[0]), "phi": float(w[1]),
                    "psi": float(w[2]) if use_gamma else None, "C": c})  # fmt: skip
    table = pl.DataFrame(out, schema_overrides={"psi": pl.Float64}).with_columns(
        pl.col("lc_ci_low", "lc_ci_high").fill_nan(None)
    )
    return with_ci_level(table, ci, after="lc_ci_high")


def _design(rows: pl.DataFrame, use_gamma: bool, *, own: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, s)``: features ``(own-system indicator, tanh(d / sd)[, gamma])``, soft targets,
    row weights. The indicator is 1 on a system's own rows and 0 on reference rows."""
    cols = [np.full(rows.height, 1.0 if own else 0.0), rows["t"].to_numpy()]
    if use_gamma:
        cols.append(rows["g"].to_numpy())
    return np.column_stack(cols), rows["y"].to_numpy(), rows["s"].to_numpy()


def _stack(
    fixed: tuple[np.ndarray, np.ndarray, np.ndarray] | None, x: np.ndarray, y: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A system's rows after the reference rows (their order decides the folds), or alone."""
    if fixed is None:
        return x, y, None
    fx, fy, fs = fixed
    return np.vstack([fx, x]), np.concatenate([fy, y]), np.concatenate([fs, s])
