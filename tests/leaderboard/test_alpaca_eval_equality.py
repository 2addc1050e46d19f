"""Length-controlled win rates equal AlpacaEval's own code (``alpaca-eval`` 0.6.6,
``glm_winrate.get_length_controlled_winrate``) on the same generated annotations: 11 systems,
one of them length-gamed, with and without the gamed reference systems of
``length_controlled_v1``.

AlpacaEval downloads ``df_gamed.csv`` (instruction difficulties and the gamed baselines'
annotations) from the Hugging Face hub; here its downloader is handed a file written by the
test. The test runs where ``.ci/run`` could install alpaca-eval (``pip install --no-deps``) and
skips elsewhere.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.special import expit

import rubrictools as rt

glm = pytest.importorskip("alpaca_eval.metrics.glm_winrate", exc_type=ImportError)
pd = pytest.importorskip("pandas")

N = 240
QUALITY, EXTRA = np.linspace(-1.2, 1.2, 10), np.linspace(-300, 500, 10)
SYSTEMS = {f"m{k:02d}": (q, e) for k, (q, e) in enumerate(zip(QUALITY, EXTRA, strict=True))}
SYSTEMS["gamed"] = (0.0, 900.0)  # equal quality, far longer answers
TIGHT = 1e-7
"""liblinear's tolerance at which AlpacaEval's fit reaches the optimum: at scikit-learn's default
(1e-4) it stops short, by up to 0.02 pp of LC win rate and 9e-4 in a coefficient here."""
REFERENCES = {"verbose_base": 1.6, "concise_base": 0.5}  # the baseline's own answers, stretched and cut


def generate() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """prefs (soft, system as B), lengths, the reference systems' prefs, difficulties."""
    rng = np.random.default_rng(11)
    gamma = rng.normal(0, 1, N)
    base = rng.normal(1200, 250, N).round().clip(200)
    lengths = [pl.DataFrame({"id": range(N), "system": "base", "length": base})]
    prefs, refs = [], []
    for name, (quality, extra) in {**SYSTEMS, **{r: (0.0, None) for r in REFERENCES}}.items():
        length = (
            (base * REFERENCES[name] if extra is None else base + extra + rng.normal(0, 200 + abs(extra) / 2, N))
            .round()
            .clip(20)
        )
        d = length - base
        p = expit(quality + 1.3 * np.tanh(d / d.std(ddof=1)) + 0.8 * gamma + rng.normal(0, 0.3, N))
        lengths.append(pl.DataFrame({"id": range(N), "system": name, "length": length}))
        frame = pl.DataFrame({"id": range(N), "system_a": name, "system_b": "base", "value": p})  # value: A wins
        (refs if extra is None else prefs).append(frame)
    difficulty = pl.DataFrame({"id": range(N), "difficulty": gamma})
    return pl.concat(prefs), pl.concat(lengths), pl.concat(refs), difficulty


def df_gamed(refs: pl.DataFrame, lengths: pl.DataFrame, difficulty: pl.DataFrame) -> pd.DataFrame:
    """AlpacaEval's ``df_gamed.csv``: the gamed baselines' rows (each in instruction order, so
    its first rows are keyed 0..N-1 as the lookup of difficulties wants), with AlpacaEval's
    length feature ``(baseline - answer) / sd``."""
    base = lengths.filter(system="base").select("id", pl.col("length").alias("base"))
    frames = []
    for name in REFERENCES:
        rows = refs.filter(system_a=name).join(lengths.filter(system=name), on="id").join(base, on="id")
        delta = rows["base"] - rows["length"]
        frames.append(
            pd.DataFrame(
                {
                    "model": name,
                    "index": rows["id"].to_numpy(),
                    "preference": rows["value"].to_numpy(),
                    "std_delta_len": (delta / delta.std()).to_numpy(),
                    "instruction_difficulty": difficulty["difficulty"].to_numpy(),
                    "not_gamed_baseline": False,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def alpaca_eval(prefs: pl.DataFrame, lengths: pl.DataFrame, glm_name: str) -> dict[str, dict[str, float]]:
    base = dict(lengths.filter(system="base").select("id", "length").iter_rows())
    out = {}
    for name in SYSTEMS:
        rows = prefs.filter(system_a=name).join(lengths.filter(system=name), on="id")
        annotations = pd.DataFrame(
            {
                "index": rows["id"].to_numpy(),
                "instruction": [f"instruction {i}" for i in rows["id"]],
                "output_1": ["x" * int(base[i]) for i in rows["id"]],
                "output_2": ["y" * int(n) for n in rows["length"]],
                "preference": 1 + rows["value"].to_numpy(),  # 2: output_2 (the system) preferred
                "generator_1": "base",
                "generator_2": name,
                "annotator": "generated",
            }
        )
        got = glm.get_length_controlled_winrate(
            annotations, glm_name=glm_name, save_weights_dir=None, is_warn_extreme_changes=False
        )
        out[name] = {"default": {**_weights(annotations, glm_name, 1e-4), "lc": got["length_controlled_winrate"]}}
        out[name]["optimum"] = _weights(annotations, glm_name, TIGHT)
    return out


def _weights(annotations: pd.DataFrame, glm_name: str, tol: float) -> dict[str, float]:
    """The fitted coefficients and LC win rate (``lc``, in %), through AlpacaEval's own helpers,
    with liblinear stopping at ``tol`` (scikit-learn's default is 1e-4)."""
    info = glm.GLM_INFO[glm_name]
    train, test, weight = glm._get_featurized_data(
        annotations, formula=info["formula"], regularize_to_baseline_lambda=info["regularize_to_baseline_lambda"]
    )
    model = glm.fit_LogisticRegressionCV(
        train, "preference", is_ytrue_proba=True, sample_weight=weight, n_splits=5, tol=tol, max_iter=100_000
    )
    lc = 100 * float(model.predict_proba(test)[:, 1].mean())
    return {"lc": lc, **dict(zip(test.columns, model.coef_[0], strict=True))}


@pytest.mark.parametrize("with_references", [False, True], ids=["noreg", "v1"])
def test_lc_win_rates_and_coefficients_equal_alpaca_eval(with_references: bool, tmp_path: Path, monkeypatch) -> None:
    prefs, lengths, refs, difficulty = generate()
    csv = tmp_path / "df_gamed.csv"
    df_gamed(refs, lengths, difficulty).to_csv(csv, index=False)
    monkeypatch.setattr(glm, "hf_hub_download", lambda **_: str(csv))  # no network: the file made above
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn's deprecation notices inside AlpacaEval
            theirs = alpaca_eval(
                prefs, lengths, "length_controlled_v1" if with_references else "length_controlled_noreg"
            )
    finally:
        logging.disable(logging.NOTSET)
    ours = rt.length_controlled_win_rates(
        prefs,
        baseline="base",
        lengths=lengths,
        instruction_difficulty=difficulty,
        reference_prefs=refs if with_references else None,
        n_resamples=0,
    )
    assert ours.height == len(SYSTEMS)
    for row in ours.iter_rows(named=True):
        for key, lc_pp, coef in (("optimum", 1e-4, 1e-5), ("default", 0.05, 2e-3)):
            want = theirs[row["system"]][key]
            assert 100 * row["lc_win_rate"] == pytest.approx(want["lc"], abs=lc_pp), (row["system"], key)
            assert row["theta"] == pytest.approx(want["not_gamed_baseline.astype(float)"], abs=coef), row["system"]
            assert row["phi"] == pytest.approx(-want["np.tanh(std_delta_len)"], abs=coef), row["system"]  # our sign
            assert row["psi"] == pytest.approx(want["instruction_difficulty"], abs=coef), row["system"]
    gamed = ours.filter(system="gamed").row(0, named=True)
    assert gamed["win_rate"] - gamed["lc_win_rate"] > 0.1  # the length-gamed system loses its inflation
