"""benchmarks/llm_rubric_protocol.py: the re-derived LLM-Rubric network is trained on correct gradients."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "llm_rubric_protocol.py"


@pytest.fixture(scope="module")
def proto() -> dict:
    return runpy.run_path(str(SCRIPT))


def test_network_gradients_match_finite_differences(proto: dict) -> None:
    rng = np.random.default_rng(0)
    net = proto["Network"](8, 3, [np.random.default_rng(s) for s in (1, 2)], 5, 4, n_q=3, k=4)  # two networks
    x = rng.dirichlet(np.ones(4), size=(2, 12, 2)).reshape(2, 12, 8)
    a = rng.integers(0, 3, (2, 12))
    y = rng.integers(0, 5, (2, 12, 3))  # 0 = not answered: ignored
    for questions in ([0, 1, 2], [0]):
        _, grads = net.gradients(x, a, y, questions)
        for name, g in grads.items():
            for _ in range(3):
                idx = tuple(int(rng.integers(0, s)) for s in g.shape)
                if name.endswith("a"):  # judge-specific: pick a judge that occurs in that network's batch
                    idx = (idx[0], int(a[idx[0], rng.integers(0, 12)]), *idx[2:])
                old = net.p[name][idx]
                net.p[name][idx] = old + 1e-6
                up = net.gradients(x, a, y, questions)[0][idx[0]]
                net.p[name][idx] = old - 1e-6
                down = net.gradients(x, a, y, questions)[0][idx[0]]
                net.p[name][idx] = old
                assert grads[name][idx] == pytest.approx((up - down) / 2e-6, abs=1e-7, rel=1e-4), name


def test_networks_trained_side_by_side_equal_each_trained_alone(proto: dict) -> None:
    """network_protocol trains seeds in chunks: a seed's figures must not depend on its chunk."""
    together = proto["network_protocol"](3, chunk=3)
    alone = proto["network_protocol"](3, chunk=1)
    assert together["seed"].to_list() == [0, 1, 2]
    np.testing.assert_allclose(together.drop("seed").to_numpy(), alone.drop("seed").to_numpy(), rtol=0, atol=1e-9)
    spawned = proto["network_protocol"](3, chunk=2, n_jobs=2)  # chunks in worker processes: the very same figures
    assert spawned.equals(proto["network_protocol"](3, chunk=2))


def test_adam_steps_lower_the_training_loss(proto: dict) -> None:
    rng = np.random.default_rng(1)
    net = proto["Network"](8, 2, [rng], 6, 6, n_q=2)
    x = rng.dirichlet(np.ones(4), size=(1, 64, 2)).reshape(1, 64, 8)
    a = rng.integers(0, 2, (1, 64))
    y = np.stack([x[..., :4].argmax(-1) + 1, x[..., 4:].argmax(-1) + 1], axis=-1)  # learnable answers
    before = net.gradients(x, a, y, [0, 1])[0][0]
    for _ in range(300):
        net.step(x, a, y, [0, 1], 1e-2)
    assert net.gradients(x, a, y, [0, 1])[0][0] < 0.7 * before
