"""Sampled reports against the exact channels, under every bit generator.

Each statistical check has false-alarm probability about 1e-3 under a correct mechanism (chi-square
p-value threshold, or Bonferroni-corrected normal bounds of at least 4 standard errors); the
goodness-of-fit tests form one Bonferroni family over their whole parametrization. The seeds are
fixed (a formula of the parameter indices) and were not chosen by looking at the outcomes.
"""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_checks import (
    ALPHA,
    GENERATORS,
    NAMES,
    assert_frequencies,
    channel_gof_pvalue,
    dense,
    z_bonferroni,
)

from reidrisk.collect.baselines import NegativeSurvey
from reidrisk.mechanisms import GLH, GRR, OLH, OUE, ORappor, Subset, make_mechanism
from reidrisk.schema import MISSING

N = 20_000  # reports per input value

GOF_CASES = {
    "grr-3": lambda: GRR(1.0, 3),
    "grr-8": lambda: GRR(0.5, 8),
    "subset-5": lambda: Subset(1.0, 5),  # h = 2
    "subset-8": lambda: Subset(0.5, 8),  # h = 4, 70 outputs
    "oue-3": lambda: OUE(1.0, 3),
    "oue-5": lambda: OUE(2.5, 5),
    "rappor-3": lambda: ORappor(1.0, 3),
    "rappor-5": lambda: ORappor(0.5, 5),
    "glh-linear": lambda: GLH(1.0, 5, g=3, prime=7),
    "glh-tables": lambda: GLH.with_random_tables(1.0, 4, 3, g=3, rng=11),
    "olh": lambda: OLH(1.0, 5, prime=7),
    "negative-4": lambda: NegativeSurvey(1.0, 4),  # the MDN baseline's client (reidrisk.collect)
}


# Both subset samplers, including h = 1 at eps = 2.5, k = 3 (the default picks one of them)
SAMPLER_CASES = {
    f"subset-{eps}-{k}-{method}": (lambda eps=eps, k=k: Subset(eps, k), method)
    for method in ("floyd", "keys") for eps, k in [(1.0, 5), (0.5, 8), (2.5, 3)]
}
GOF_ALL = {**{c: (f, None) for c, f in GOF_CASES.items()}, **SAMPLER_CASES}

N_GOF = 20_000  # reports per input in the default run, under each of the generators
N_GOF_SLOW = 200_000  # per input in the slow run
GOF_THRESHOLD = ALPHA / (len(GOF_ALL) * len(GENERATORS))
"""Per-test p-value threshold. Under a correct sampler each test's p-value is uniform (Pearson's
statistic is asymptotically chi-square; pooled cells expect >= 5 reports), so by Bonferroni the
chance that any of the len(GOF_ALL) x len(GENERATORS) tests of one run fails is at most ALPHA."""


def _assert_fits_channel(case: str, gen: str, n_per_input: int, seed_base: int) -> None:
    make, method = GOF_ALL[case]
    mech = make()
    seed = seed_base + 10 * sorted(GOF_ALL).index(case) + list(GENERATORS).index(gen)
    kw = {} if method is None else {"sampler": method}
    p = channel_gof_pvalue(mech, n_per_input, GENERATORS[gen](seed), **kw)
    assert p > GOF_THRESHOLD, (
        f"{mech!r} ({method or 'default sampler'}, {gen}): chi-square p-value {p:.2e} "
        f"<= {GOF_THRESHOLD:.1e}"
    )


@pytest.mark.parametrize("gen", list(GENERATORS))
@pytest.mark.parametrize("case", sorted(GOF_ALL))
def test_reports_fit_exact_channel(case, gen):
    """Every mechanism's real sampler, under every bit generator, against its exact channel.

    A sampler that leans on the generator's word width (the 32-bit MT19937 left half of OUE's noise
    bytes constant) puts reports on outputs far from Q[:, x]: a statistic in the thousands.
    """
    _assert_fits_channel(case, gen, N_GOF, seed_base=1_000)


@pytest.mark.slow
@pytest.mark.parametrize("gen", list(GENERATORS))
@pytest.mark.parametrize("case", sorted(GOF_ALL))
def test_reports_fit_exact_channel_large_draws(case, gen):
    """As above with 10x the reports per input. A fault that moves probability d from an output
    of probability pi under one input raises the statistic's mean by about n d^2 / pi: d = 0.01 at
    pi = 0.25 adds 80 at n = 200,000 (8 in the default run), against thresholds 27 to 185 above
    the mean (6 degrees of freedom for grr-3, 835 for olh)."""
    _assert_fits_channel(case, gen, N_GOF_SLOW, seed_base=5_000)


@pytest.mark.parametrize("case", sorted(GOF_CASES))
def test_support_frequencies_match_p_and_q(case):
    mech = GOF_CASES[case]()
    rng = np.random.default_rng(sorted(GOF_CASES).index(case) + 200)
    freq = np.column_stack(
        [dense(mech.support(mech.perturb(np.full(N, x), rng))).mean(axis=0) for x in range(mech.k)]
    )
    assert_frequencies(freq, mech.support_matrix(), N, repr(mech))
    # and the exact support matrix has p_support on its diagonal
    assert np.allclose(np.diag(mech.support_matrix()), mech.p_support)


LARGE_CASES = {
    "grr": lambda: GRR(1.0, 1024),
    "subset-keys": lambda: Subset(1.0, 1024),  # h = 276
    "subset-floyd": lambda: Subset(5.0, 1024),  # h = 7
    "oue": lambda: OUE(1.0, 1024),
    "rappor": lambda: ORappor(1.0, 256),
    "glh": lambda: GLH(1.0, 256, g=5),
    "olh": lambda: OLH(2.5, 256),
}


# numpy's default and the production generator by default; the other three in the slow run (the
# default run already has every generator through the small-domain channel tests above)
LARGE_GENERATORS = [g if g in ("pcg64", "secure") else pytest.param(g, marks=pytest.mark.slow)
                    for g in GENERATORS]


@pytest.mark.parametrize("gen", LARGE_GENERATORS)
@pytest.mark.parametrize("case", sorted(LARGE_CASES))
def test_support_marginals_large_domain(case, gen):
    """k up to 1024 (chunked sampling, many noise bytes per report) under every bit generator;
    the Bonferroni bound covers the k values, the alpha budget is per (case, generator)."""
    mech = LARGE_CASES[case]()
    x = 5
    seed = 10 * sorted(LARGE_CASES).index(case) + list(GENERATORS).index(gen) + 300
    freq = np.asarray(mech.support(mech.perturb(np.full(N, x), GENERATORS[gen](seed)))
                      .mean(axis=0)).ravel()
    assert_frequencies(freq, mech.support_matrix()[:, x], N, f"{mech!r} ({gen})")


def _subset_pair_probs(mech: Subset, x: int) -> np.ndarray:
    """Exact P(v in S and v' in S | x) for all (v, v')."""
    k, h, p = mech.k, mech.h, mech.p
    both_other = (p * (h - 1) * (h - 2) + (1 - p) * h * (h - 1)) / ((k - 1) * (k - 2))
    pr = np.full((k, k), both_other)
    pr[x, :] = pr[:, x] = p * (h - 1) / (k - 1)
    np.fill_diagonal(pr, mech.support_matrix()[:, x])
    return pr


def _unary_pair_probs(mech, x: int) -> np.ndarray:
    col = mech.support_matrix()[:, x]
    pr = np.outer(col, col)  # independent bits
    np.fill_diagonal(pr, col)
    return pr


@pytest.mark.parametrize(
    "mech,method",
    [(Subset(0.5, 64), "floyd"), (Subset(0.5, 64), "keys"), (Subset(4.0, 256), "auto"),
     (Subset(0.1, 256), "auto"), (OUE(1.0, 64), None), (ORappor(2.0, 64), None)],
    ids=repr,
)
def test_pairwise_inclusion_probabilities(mech, method):
    x = 3
    rng = np.random.default_rng(mech.k + (0 if method in (None, "floyd") else 1))
    kw = {} if method is None else {"sampler": method}
    s = dense(mech.support(mech.perturb(np.full(N, x), rng, **kw)))
    gram = s.T @ s / N
    exact = _subset_pair_probs(mech, x) if isinstance(mech, Subset) else _unary_pair_probs(mech, x)
    iu = np.triu_indices(mech.k)
    assert_frequencies(gram[iu], exact[iu], N, f"pairs of {mech!r}")


MIX_CASES = {name: (lambda name=name: make_mechanism(name, 1.0, 6)) for name in NAMES}
MIX_CASES["subset-h3"] = lambda: Subset(0.3, 6)
MIX_CASES["glh-tables"] = lambda: GLH.with_random_tables(1.0, 6, 2, g=3, rng=4)


@pytest.mark.parametrize("case", sorted(MIX_CASES))
def test_support_counts_are_unbiased(case):
    """E[w] = M z and Var[w_v] = sum_x z_x M[v,x] (1 - M[v,x]) for independent reports."""
    mech = MIX_CASES[case]()
    rng = np.random.default_rng(sorted(MIX_CASES).index(case) + 400)
    z = np.array([12_000, 6_000, 3_000, 1_500, 500, 0])
    values = np.concatenate([np.repeat(np.arange(6), z), np.full(2_000, MISSING)])
    rng.shuffle(values)
    w, n_present = mech.support_counts(mech.perturb(values, rng))
    assert n_present == z.sum()
    m = mech.support_matrix()
    expected = m @ z
    sd = np.sqrt((m * (1 - m)) @ z)
    dev = np.abs(w - expected) / sd
    assert dev.max() <= z_bonferroni(6), f"{mech!r}: {dev.round(2)} standard errors"


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_reports(name):
    mech = make_mechanism(name, 1.0, 10)
    x = np.arange(50) % 10
    a = mech.perturb(x, 3)
    b = mech.perturb(x, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, mech.perturb(x, 4))


@pytest.mark.parametrize("method", ("floyd", "keys"))
def test_subset_rows_are_sorted_distinct_sets(method):
    """Rows are ascending, so a row's order never reveals which value was the true one."""
    mech = Subset(0.5, 40)
    r = mech.perturb(np.arange(4000) % 40, 9, sampler=method)
    assert r.dtype == np.int32 and r.shape == (4000, mech.h)
    assert (np.diff(r, axis=1) > 0).all()
    mech.validate_reports(r)
