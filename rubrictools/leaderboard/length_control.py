"""Length-controlled win rates (Dubois et al. 2024, "Length-Controlled AlpacaEval").

A judge that prefers longer answers inflates verbose systems. For each system ``m`` compared
with a ``baseline`` on instructions ``x``, a logistic model of the judge's preference (soft
preferences allowed) is fitted,

    P(m beats baseline | x) = sigma( theta_m + phi_m * tanh(d_mx / sd_m) + psi_m * gamma_x ),

with ``d_mx = len(m's answer) - len(baseline's answer)`` scaled by its standard deviation over
the system's instructions, and ``gamma_x`` the instruction's difficulty. The length-controlled
win rate is the model's prediction with the length term at 0, averaged over instructions:

    LC_m = mean_x sigma( theta_m + psi_m * gamma_x ).

As AlpacaEval's ``glm_winrate`` does: ``(theta, phi, psi)`` per system by L1-penalised logistic
regression without intercept on the features ``(1, tanh(d / sd), gamma_x)``, the penalty chosen
by 5-fold cross-validation over ``C`` in ``logspace(-4, 4, 10)`` on the log-loss of the soft
preferences, then refitted on all instructions. Instruction difficulty is fitted first, once,
across all systems with ``psi_m - psi_b`` fixed at 1 (``sigma(theta_m + phi_m tanh(.) +
gamma_x)``, a weak L2 penalty pinning the shared level), or taken from
``instruction_difficulty=`` (e.g. AlpacaEval's published values). AlpacaEval's extra
regularisation towards "gamed" versions of its own baseline needs those annotations and is not
applied (its ``length_controlled_noreg`` setting). With fewer than 3 systems the instruction
term is dropped by default: one system's preferences cannot tell instruction difficulty from
its own noise.

Intervals: percentile intervals over ``n_resamples`` resamples of instructions, refitting each
system's GLM with its chosen penalty and the same ``gamma``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import minimize
from scipy.special import expit

from rubrictools.deprecation import adapted, renamed
from rubrictools.frames import to_polars
from rubrictools.leaderboard.table import check_preferences
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling

__all__ = ["length_controlled_win_rates"]

_CS = np.logspace(-4, 4, 10)


def _loss(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Summed log-loss of soft targets ``y`` and its gradient."""
    z = x @ w
    p = expit(z)
    loss = float(np.sum(np.logaddexp(0, z) - y * z))
    return loss, x.T @ (p - y)


def _l1_logistic(x: np.ndarray, y: np.ndarray, c: float) -> np.ndarray:
    """``argmin ||w||_1 + C * logloss`` (liblinear's L1 objective), exactly: ``w = u - v`` with
    ``u, v >= 0`` makes it smooth under bounds (L-BFGS-B)."""
    d = x.shape[1]

    def f(uv: np.ndarray) -> tuple[float, np.ndarray]:
        loss, g = _loss(uv[:d] - uv[d:], x, y)
        return float(uv.sum()) + c * loss, np.concatenate([1 + c * g, 1 - c * g])

    res = minimize(f, np.zeros(2 * d), jac=True, method="L-BFGS-B", bounds=[(0, None)] * (2 * d))
    return np.asarray(res.x[:d] - res.x[d:])


def _choose_c(x: np.ndarray, y: np.ndarray, folds: int = 5) -> float:
    """The ``C`` with the lowest mean held-out log-loss over ``folds`` contiguous folds."""
    n = y.size
    k = min(folds, n)
    fold = np.arange(n) * k // max(n, 1)
    scores = []
    for c in _CS:
        held = []
        for f in range(k):
            tr, te = fold != f, fold == f
            w = _l1_logistic(x[tr], y[tr], c)
            held.append(_loss(w, x[te], y[te])[0] / max(te.sum(), 1))
        scores.append(np.mean(held))
    return float(_CS[int(np.argmin(scores))])


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
    ln = lengths.select("id", pl.col("system").cast(pl.String), pl.col("length").cast(pl.Float64))
    rows = rows.join(ln, on=["id", "system"], how="left").join(
        ln.filter(pl.col("system") == baseline).select("id", pl.col("length").alias("base")), on="id", how="left"
    )
    missing = rows.filter(pl.col("length").is_null() | pl.col("base").is_null())
    if missing.height:
        r = missing.row(0, named=True)
        raise ValueError(f"lengths: no length for id {r['id']!r} (system {r['system']!r} or the baseline)")
    d = pl.col("length") - pl.col("base")
    sd = d.std().over("system")
    return rows.with_columns(pl.when(sd > 0).then((d / sd).tanh()).otherwise(0.0).alias("t"))


@adapted(renamed(n_boot="n_resamples"))
def length_controlled_win_rates(
    prefs: Any,
    *,
    baseline: str,
    lengths: Any,
    instruction_difficulty: Any = None,
    instruction_term: bool | None = None,
    n_resamples: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Length-controlled win rates of every system against ``baseline`` (see module docstring).

    ``prefs``: a preference table (``id, system_a, system_b, value``; soft values allowed);
    only comparisons with ``baseline`` count, one per (system, instruction ``id``).
    ``lengths``: ``id, system, length`` of every answer (characters, tokens: any unit).
    ``instruction_difficulty``: ``id, difficulty`` to use instead of fitting it;
    ``instruction_term``: include ``psi_m gamma_x`` (default: when 3 or more systems).
    Returns ``system, n, win_rate, lc_win_rate, lc_ci_low, lc_ci_high, theta, phi, psi, C``:
    the raw win rate (mean preference), the length-controlled one with its interval, and the
    fitted coefficients (``phi > 0``: the judge favoured this system's longer answers).

    ``n_resamples``, ``ci``, ``seed``: the bootstrap's resamples; the interval level (written to
    the table's ``ci_level`` column); its seed (``0`` by default: identical calls give identical
    intervals; ``None`` draws afresh).

    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> n = 300
    >>> extra = rng.normal(400, 150, n)  # the verbose system writes ~400 more characters
    >>> p = 1 / (1 + np.exp(-1.5 * np.tanh(extra / extra.std())))  # equal quality, a length-loving judge
    >>> prefs = pl.DataFrame({"id": range(n), "system_a": "verbose", "system_b": "base", "value": p})
    >>> lengths = pl.concat([pl.DataFrame({"id": range(n), "system": "base", "length": 500.0}),
    ...                      pl.DataFrame({"id": range(n), "system": "verbose", "length": 500 + extra})])
    >>> t = length_controlled_win_rates(prefs, baseline="base", lengths=lengths, n_resamples=20)
    >>> round(t["win_rate"][0], 2), round(t["lc_win_rate"][0], 2)
    (0.8, 0.5)
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    rows = _rows(check_preferences(prefs), to_polars(lengths, name="lengths"), baseline)
    systems = rows["system"].unique(maintain_order=True).to_list()
    use_gamma = instruction_term if instruction_term is not None else len(systems) >= 3
    if instruction_difficulty is not None:
        gd = to_polars(instruction_difficulty, name="instruction_difficulty")
        gamma = dict(zip(gd["id"].to_list(), gd["difficulty"].cast(pl.Float64).to_list(), strict=True))
        use_gamma = True if instruction_term is None else instruction_term
    else:
        gamma = _difficulty(rows) if use_gamma else {}
    rows = rows.with_columns(pl.col("id").replace_strict(gamma, default=0.0, return_dtype=pl.Float64).alias("g"))
    rng = np.random.default_rng(seed)
    out = []
    for s in systems:
        part = rows.filter(pl.col("system") == s)
        cols = [np.ones(part.height), part["t"].to_numpy()] + ([part["g"].to_numpy()] if use_gamma else [])
        x, y = np.column_stack(cols), part["y"].to_numpy()
        c = _choose_c(x, y)
        w = _l1_logistic(x, y, c)
        x0 = x.copy()
        x0[:, 1] = 0.0  # the counterfactual: equal lengths
        lc = float(expit(x0 @ w).mean())
        boots = []
        for _ in range(n_resamples):
            k = rng.integers(0, y.size, y.size)
            boots.append(float(expit(x0[k] @ _l1_logistic(x[k], y[k], c)).mean()))
        lo, hi = np.quantile(boots, [(1 - ci) / 2, 1 - (1 - ci) / 2]) if boots else (np.nan, np.nan)
        out.append({"system": s, "n": int(y.size), "win_rate": float(y.mean()), "lc_win_rate": lc,
                    "lc_ci_low": float(lo), "lc_ci_high": float(hi), "theta": float(w[0]), "phi": float(w[1]),
                    "psi": float(w[2]) if use_gamma else None, "C": c})  # fmt: skip
    table = pl.DataFrame(out, schema_overrides={"psi": pl.Float64}).with_columns(
        pl.col("lc_ci_low", "lc_ci_high").fill_nan(None)
    )
    return with_ci_level(table, ci, after="lc_ci_high")
