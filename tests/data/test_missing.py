import numpy as np
import pytest

from reidrisk.data.missing import mar, mar_probabilities, mcar
from reidrisk.schema import MISSING


@pytest.fixture(scope="module")
def codes() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 4, size=(20_000, 6)).astype(np.int32)


@pytest.mark.parametrize("rate", [0.0, 0.3, 0.8])
def test_mcar_rate_within_4_se(codes, rate):
    out = mcar(codes, rate, rng=1)
    cells = codes.size
    missing = int((out == MISSING).sum())
    assert abs(missing - rate * cells) <= 4 * np.sqrt(cells * rate * (1 - rate))
    kept = out != MISSING
    np.testing.assert_array_equal(out[kept], codes[kept])
    assert (codes != MISSING).all()  # the input is not modified


def test_mcar_is_independent_of_values_and_respects_columns(codes):
    out = mcar(codes, 0.5, rng=2, columns=[1, 3])
    assert (out[:, [0, 2, 4, 5]] == codes[:, [0, 2, 4, 5]]).all()
    # rate among cells holding value 0 vs the others: difference within 4 SE
    miss = out[:, 1] == MISSING
    zero = codes[:, 1] == 0
    se = np.sqrt(0.25 / zero.sum() + 0.25 / (~zero).sum())
    assert abs(miss[zero].mean() - miss[~zero].mean()) <= 4 * se
    already = out.copy()
    again = mcar(already, 0.2, rng=3)
    assert (again[already == MISSING] == MISSING).all()


@pytest.mark.parametrize("bad", [1.0, -0.1, 1.5, "x", None])
def test_rate_is_validated(codes, bad):
    with pytest.raises(ValueError, match=r"rate must be"):
        mcar(codes, bad, rng=0)
    with pytest.raises(ValueError, match=r"rate must be"):
        mar(codes, bad, rng=0)


def test_mar_probabilities_are_calibrated_and_increasing(codes):
    driver = codes[:, 2]
    pi = mar_probabilities(driver, 0.4, strength=2.0)
    assert abs(pi.mean() - 0.4) < 1e-9
    by_code = [pi[driver == k][0] for k in range(4)]
    assert np.all(np.diff(by_code) > 0)
    flat = mar_probabilities(driver, 0.4, strength=0.0)
    np.testing.assert_allclose(flat, 0.4)
    np.testing.assert_array_equal(mar_probabilities(driver, 0.0), 0.0)


@pytest.mark.parametrize("rate", [0.2, 0.5])
def test_mar_rate_within_4_se_and_driven_by_the_driver(codes, rate):
    driver = 2
    out = mar(codes, rate, rng=4, driver=driver)
    assert (out[:, driver] == codes[:, driver]).all()  # the driver is never removed
    others = np.delete(np.arange(codes.shape[1]), driver)
    removed = out[:, others] == MISSING
    pi = mar_probabilities(codes[:, driver], rate)
    g1 = others.size
    # overall count: sum of independent Bernoulli(pi_i) over (g - 1) cells per record
    se = np.sqrt(g1 * (pi * (1 - pi)).sum())
    assert abs(removed.sum() - rate * removed.size) <= 4 * se
    # per driver value: the rate is pi_k within 4 SE, and it rises with the driver's code
    rates = []
    for k in range(4):
        rows = codes[:, driver] == k
        p_k = pi[rows][0]
        cells = rows.sum() * g1
        rates.append(removed[rows].mean())
        assert abs(rates[-1] - p_k) <= 4 * np.sqrt(p_k * (1 - p_k) / cells), k
    low, high = codes[:, driver] == 0, codes[:, driver] == 3
    se_diff = np.sqrt(rates[0] * (1 - rates[0]) / (low.sum() * g1)
                      + rates[3] * (1 - rates[3]) / (high.sum() * g1))
    assert rates[3] - rates[0] > 4 * se_diff


def test_mar_validates_driver(codes):
    with pytest.raises(ValueError, match="driver must be a column index in 0..5"):
        mar(codes, 0.3, rng=0, driver=6)
    with pytest.raises(ValueError, match="at least two columns"):
        mar(codes[:, :1], 0.3, rng=0)
