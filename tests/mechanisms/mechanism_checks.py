"""Shared statistics for the mechanism tests: test sizes and thresholds derived from theory.

Every statistical check here fails with probability about ``ALPHA`` under its null hypothesis (a
correct mechanism); the seeds are fixed, so a failure is deterministic and points at a real change.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from reidrisk.mechanisms import GLH, OLH, make_mechanism, secure_generator

ALPHA = 1e-3
"""Family-wise false-alarm probability of one statistical check (or of one Bonferroni family)."""

GENERATORS = {
    "pcg64": lambda seed: np.random.Generator(np.random.PCG64(seed)),
    "mt19937": lambda seed: np.random.Generator(np.random.MT19937(seed)),
    "philox": lambda seed: np.random.Generator(np.random.Philox(seed)),
    "sfc64": lambda seed: np.random.Generator(np.random.SFC64(seed)),
    "secure": lambda seed: secure_generator(key=seed),  # the production cipher with a fixed key
}
"""Every bit generator a sampler must be exact under: numpy's four (32-bit MT19937 among them) and
the secure generator of production clients, each from a fixed seed (key)."""

MIN_EXPECTED = 5.0
"""Chi-square cells expected to hold fewer reports than this are pooled into one cell."""

NAMES = ("grr", "subset", "oue", "rappor", "glh", "olh")


def small_prime(k: int) -> int:
    """The smallest prime >= max(k, 5): a hash family small enough to enumerate exactly."""
    p = max(k, 5)
    while any(p % d == 0 for d in range(2, int(p**0.5) + 1)):
        p += 1
    return p


def enumerable(name: str, epsilon: float, k: int):
    """A mechanism whose outputs can be enumerated: GLH/OLH get a small linear hash family."""
    if name == "glh":
        return GLH(epsilon, k, g=3, prime=small_prime(k))
    if name == "olh":
        return OLH(epsilon, k, prime=small_prime(k))
    return make_mechanism(name, epsilon, k)


def z_bonferroni(n_tests: int, alpha: float = ALPHA) -> float:
    """Two-sided normal quantile that keeps the family-wise error of ``n_tests`` checks <= alpha,
    and never below 4 standard errors."""
    return max(4.0, float(stats.norm.isf(alpha / (2 * max(n_tests, 1)))))


def output_index(outputs: np.ndarray, reports: np.ndarray) -> np.ndarray:
    """Row index in ``outputs`` (all possible reports) of every report."""
    outs = np.asarray(outputs).reshape(len(outputs), -1).astype(np.int64)
    reps = np.asarray(reports).reshape(len(reports), -1).astype(np.int64)
    both = np.concatenate([outs, reps])
    lo, span = both.min(axis=0), np.ptp(both, axis=0) + 1
    if np.prod(span.astype(float)) < 2.0**62:  # one mixed-radix int64 key per row: a 1-D lookup
        stride = np.cumprod(np.concatenate([[1], span[:0:-1]]))[::-1]
        okey, rkey = (outs - lo) @ stride, (reps - lo) @ stride
        order = np.argsort(okey)
        assert np.unique(okey).size == okey.size, "outputs repeat"
        pos = np.minimum(np.searchsorted(okey[order], rkey), okey.size - 1)
        assert (okey[order][pos] == rkey).all(), "a report is not among the outputs"
        return order[pos]
    uniq, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.ravel()
    assert len(uniq) == len(outs), "outputs repeat, or a report is not among the outputs"
    lookup = np.empty(len(outs), dtype=np.int64)
    lookup[inv[: len(outs)]] = np.arange(len(outs))
    return lookup[inv[len(outs) :]]


def pooled_chisquare(counts: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """Pearson statistic and degrees of freedom after pooling cells with expected < MIN_EXPECTED."""
    small = expected < MIN_EXPECTED
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        assert obs[-1] == 0, "reports fell on outputs of probability 0"
        obs, exp = obs[:-1], exp[:-1]
    stat = stats.chisquare(obs, exp * obs.sum() / exp.sum()).statistic
    return float(stat), obs.size - 1


def channel_gof_pvalue(mech, n_per_input: int, rng, **perturb_kw) -> float:
    """Goodness of fit of sampled reports to the exact channel, one chi-square over all inputs.

    For each input x, ``n_per_input`` reports are sampled and their output counts compared with
    n Q[:, x]; the per-input Pearson statistics are independent, so their sum is chi-square with the
    summed degrees of freedom.
    """
    outputs = mech.enumerate_outputs()
    q = mech.channel()
    total, dof = 0.0, 0
    for x in range(mech.k):
        reports = mech.perturb(np.full(n_per_input, x), rng, **perturb_kw)
        counts = np.bincount(output_index(outputs, reports), minlength=len(outputs))
        stat, d = pooled_chisquare(counts.astype(float), n_per_input * q[:, x])
        total += stat
        dof += d
    return float(stats.chi2.sf(total, dof))


def dense(support) -> np.ndarray:
    return support.toarray() if hasattr(support, "toarray") else np.asarray(support)


def assert_frequencies(observed: np.ndarray, prob: np.ndarray, n: int, what: str) -> None:
    """Each observed frequency within z_bonferroni standard errors of its exact probability."""
    se = np.sqrt(prob * (1 - prob) / n)
    z = z_bonferroni(prob.size)
    dev = np.abs(observed - prob)
    ok = dev <= z * se + 1e-12
    if not ok.all():
        i = np.unravel_index(np.argmax(dev / np.maximum(se, 1e-300)), prob.shape)
        raise AssertionError(
            f"{what}: frequency {observed[i]:.5f} vs exact {prob[i]:.5f} at {i} "
            f"({dev[i] / se[i]:.1f} standard errors, allowed {z:.2f})"
        )
