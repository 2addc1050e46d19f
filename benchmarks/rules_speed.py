"""Rule criteria are polars expressions over the whole column: time them on a large column.

python benchmarks/rules_speed.py
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

import rubrictools as rt

N = 1_000_000
rng = np.random.default_rng(0)
words = np.array(["the", "answer", "is", "42", "as", "an", "AI", "model", "sorry", "thanks", "because"])
lengths = rng.integers(3, 60, N)
flat = rng.choice(words, lengths.sum())
cuts = np.cumsum(lengths)[:-1]
texts = [" ".join(chunk) for chunk in np.split(flat, cuts)]
df = pl.DataFrame({"submission": texts})
rubric = rt.Rubric.from_dict(
    [
        {"name": "no_ai_talk", "weight": -5, "rule": {"regex": r"\bas an ai\b", "flags": "i"}},
        {"name": "short", "rule": {"max_words": 40}},
        {"name": "thanks", "rule": {"contains": ["thanks", "thank you"]}},
    ]
)
t0 = time.perf_counter()
v = rt.apply_rules(df, rubric)
t1 = time.perf_counter()
print(
    f"{N:,} submissions x 3 rules (regex, length, substring): {t1 - t0:.2f} s "
    f"({3 * N / (t1 - t0):,.0f} verdicts/s), {v.height:,} verdict rows"
)

M = 100_000
js = pl.DataFrame(
    {"submission": [f'{{"answer": {i % 1000}, "unit": "ms"}}' if i % 7 else "not json" for i in range(M)]}
)
schema = rt.Rubric.from_dict([{"name": "json", "rule": {"json_schema": {"type": "object", "required": ["answer"]}}}])
t0 = time.perf_counter()
vj = rt.apply_rules(js, schema)
t1 = time.perf_counter()
print(
    f"{M:,} submissions ({js['submission'].n_unique():,} distinct) x JSON schema: {t1 - t0:.2f} s "
    f"(validated once per distinct text); MET rate {(vj['verdict'] == 'MET').mean():.3f}"
)
