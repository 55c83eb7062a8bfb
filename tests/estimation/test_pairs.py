"""Pair counts as one Gram matrix and pair estimation (paper 004 Section 4.2.2, eq. 12-13)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from reidrisk.estimation import (
    EstimationError,
    PairEstimates,
    em_tables,
    estimate_pairs,
    inversion_noise,
    invert_tables,
    js_divergence,
    null_departure,
    pair_counts,
)
from reidrisk.estimation.frequency import _Channels, shrink_weights
from reidrisk.mechanisms import GLH, RecordRandomizer, RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

from .conftest import FIXED_SIZE, correlated_records, mech, randomize

SIZES = [3, 4, 2]


def _dense(s) -> np.ndarray:
    return np.asarray(s.toarray() if sp.issparse(s) else s, dtype=np.float64)


def _true_table(codes, j, jp, sizes) -> np.ndarray:
    both = (codes[:, j] != MISSING) & (codes[:, jp] != MISSING)
    t = np.zeros((sizes[j], sizes[jp]))
    np.add.at(t, (codes[both, j], codes[both, jp]), 1)
    return t


# ---------------------------------------------------------------------------------------------
# counting
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dense", [True, False])
def test_gram_counts_equal_brute_force_with_missing_values(mech_name, dense):
    rng = np.random.default_rng(101)
    schema, codes = correlated_records(80, SIZES, rng, missing=0.35)
    rr = randomize(schema, codes, mech_name, 3.0, rng)
    pc = pair_counts(rr, dense=dense)
    assert pc.dense is dense
    supports = [_dense(s) for s in rr.supports()]
    present = codes != MISSING
    for j in range(len(SIZES)):
        for jp in range(len(SIZES)):
            W = np.zeros((SIZES[j], SIZES[jp]), dtype=np.int64)
            both = 0
            for i in range(codes.shape[0]):  # brute force, one record at a time
                if present[i, j] and present[i, jp]:
                    W += np.outer(supports[j][i], supports[jp][i]).astype(np.int64)
                    both += 1
            np.testing.assert_array_equal(pc.block(j, jp), W)
            assert pc.n_present(j, jp) == both
        np.testing.assert_array_equal(pc.counts(j), supports[j].sum(axis=0))
    assert pc.gram.dtype == np.int64 and not pc.gram.flags.writeable


def test_pair_counts_use_only_rows_having_both_attributes():
    rng = np.random.default_rng(102)
    schema, codes = correlated_records(3000, SIZES, rng, missing=0.5)
    rr = randomize(schema, codes, "grr", 3.0, rng)
    pc = pair_counts(rr)
    for j, jp in [(0, 1), (0, 2), (1, 2)]:
        both = np.flatnonzero((codes[:, j] != MISSING) & (codes[:, jp] != MISSING))
        sub = pair_counts(rr.take(both))
        np.testing.assert_array_equal(pc.block(j, jp), sub.block(j, jp))
        assert pc.n_present(j, jp) == both.size == sub.n
        # GRR reports support one value each: the pair block sums to the pair's report count
        assert pc.block(j, jp).sum() == both.size


# ---------------------------------------------------------------------------------------------
# the pair channel
# ---------------------------------------------------------------------------------------------
def _pair_setup(name_a="subset", name_b="oue"):
    m1, m2 = mech(name_a, 1.2, 4), mech(name_b, 0.9, 3)
    Z = 10_000 * np.array([[0.20, 0.05, 0.05], [0.02, 0.15, 0.08], [0.10, 0.05, 0.10],
                           [0.05, 0.05, 0.10]])
    W = m1.support_matrix() @ Z @ m2.support_matrix().T
    a = lambda m: m.p_support - m.q_support  # noqa: E731
    return m1, m2, Z, W, (a(m1), m1.q_support, a(m2), m2.q_support)


def test_pair_inversion_is_exact_on_expected_counts():
    _, _, Z, W, prm = _pair_setup()
    np.testing.assert_allclose(invert_tables(W, *prm), Z, rtol=1e-10)
    stack = invert_tables(np.stack([W, 2 * W]), *prm)
    np.testing.assert_allclose(stack[1], 2 * Z, rtol=1e-10)


def test_pair_em_recovers_the_joint_from_exact_expected_counts():
    _, _, Z, W, prm = _pair_setup()
    n = Z.sum()
    fit = em_tables(W, n, *prm, stop=1e-10, max_iter=200_000)
    assert fit.converged and fit.iterations > 1
    Zhat = fit.estimate
    np.testing.assert_allclose(Zhat / Zhat.sum(), Z / n, atol=1e-6)
    # started from the product of the margins, as estimate_pairs does
    init = np.outer(Z.sum(1), Z.sum(0))
    Zhat2 = em_tables(W, n, *prm, stop=1e-10, max_iter=200_000, init=init).estimate
    np.testing.assert_allclose(Zhat2 / Zhat2.sum(), Z / n, atol=1e-6)


def test_structured_and_dense_pair_channels_agree():
    m1, m2, Z, W, (a1, q1, a2, q2) = _pair_setup("grr", "rappor")
    s = _Channels.structured(a1, q1, a2, q2, 4, 3, 1)
    d = _Channels.dense(m1.support_matrix()[None], m2.support_matrix()[None])
    Z3 = Z[None]
    np.testing.assert_allclose(s.forward(Z3), d.forward(Z3), rtol=1e-12)
    np.testing.assert_allclose(s.adjoint(W[None]), d.adjoint(W[None]), rtol=1e-12)
    np.testing.assert_allclose(s.inverse(W[None]), d.inverse(W[None]), rtol=1e-9)
    np.testing.assert_allclose(np.broadcast_to(s.colsum, (1, 4, 3)), d.colsum, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# estimates from simulated reports
# ---------------------------------------------------------------------------------------------
def test_pair_estimates_converge_to_the_true_joint(mech_name):
    """JS(truth, estimate) ~ chi2 / (8 ln2 n): 25x more reports should cut it ~25x (assert 5x).
    Upper bound on its expectation (delta method): each report moves an inverted cell by at most
    1/(a1 a2), so Var(cell) <= 1/(n a1^2 a2^2) and E[JS] <= sum_c Var_c / theta_c / (8 ln 2)."""
    mean_js = []
    for n in (2_000, 50_000):
        rng = np.random.default_rng(103)
        schema, codes = correlated_records(n, SIZES, rng, missing=0.3)
        rr = randomize(schema, codes, mech_name, 9.0, rng)
        est = estimate_pairs(rr)
        js = []
        for (j, jp), table in est.items():
            truth = _true_table(codes, j, jp, SIZES)
            assert est.n_present[(j, jp)] == truth.sum()
            assert table.sum() == pytest.approx(1.0) and np.all(table >= 0)
            js.append(js_divergence(truth.ravel(), table.ravel()))
            m1, m2 = rr.mechanisms[j], rr.mechanisms[jp]
            a1, a2 = m1.p_support - m1.q_support, m2.p_support - m2.q_support
            theta = truth / truth.sum()
            bound = np.sum(1 / (truth.sum() * a1**2 * a2**2 * theta)) / (8 * np.log(2))
            assert js[-1] <= bound, ((j, jp), js[-1], bound)
        mean_js.append(np.mean(js))
    assert mean_js[1] <= mean_js[0] / 5, mean_js


@pytest.mark.parametrize("method", ["inversion", "norm_sub"])
def test_closed_form_pair_methods(mech_name, method):
    """Both closed forms against the true pair tables. The inversion is linear in the reports:
    its count table is a sum over records of independent per-record inversions Z_i, each with
    expectation the record's true cell indicator d_i, so Var(Z_c) = sum_i Var(Z_ic) is estimated
    without bias by V_c = sum_i (Z_ic - d_ic)^2; every cell is within 5 sqrt(V_c) of the true
    count (normal approximation; 2 x 6 x 26 cells, each two-sided 6e-7). Norm-sub is the
    Euclidean projection of the normalized inversion onto the simplex, which holds the truth, so
    it is never farther from the truth (in L2) than the inversion is (unshrunk: the shrinkage
    toward uniform is tested on its own)."""
    rng = np.random.default_rng(104)
    schema, codes = correlated_records(20_000, SIZES, rng, missing=0.3)
    rr = randomize(schema, codes, mech_name, 6.0, rng)
    est = estimate_pairs(rr, method, shrink=False)
    inv = est if method == "inversion" else estimate_pairs(rr, "inversion")
    assert est.estimator == method and len(est) == 3
    supports = [_dense(s) for s in rr.supports()]
    for key, table in est.items():
        j, jp = key
        assert est.iterations[key] == 0 and est.converged[key]
        truth = _true_table(codes, j, jp, SIZES)
        n = truth.sum()
        assert est.n_present[key] == n
        if method == "norm_sub":
            assert np.all(table >= 0)
            assert table.sum() == pytest.approx(1.0, abs=1e-12)
            assert (np.linalg.norm(table - truth / n)
                    <= np.linalg.norm(inv[key] - truth / n) + 1e-12)
        elif mech_name in FIXED_SIZE:  # the inversion of fixed-size reports sums to n exactly
            assert table.sum() == pytest.approx(1.0, abs=1e-12)
        # per-record inversions of the rows reporting both attributes
        both = np.flatnonzero((codes[:, j] != MISSING) & (codes[:, jp] != MISSING))
        m1, m2 = rr.mechanisms[j], rr.mechanisms[jp]
        per = invert_tables(supports[j][both, :, None] * supports[jp][both, None, :],
                            m1.p_support - m1.q_support, m1.q_support,
                            m2.p_support - m2.q_support, m2.q_support)
        d = np.zeros_like(per)
        d[np.arange(both.size), codes[both, j], codes[both, jp]] = 1.0
        sd = np.sqrt(np.sum((per - d) ** 2, axis=0))
        err = inv[key] * n - truth
        assert np.all(np.abs(err) <= 5 * sd), (key, np.max(np.abs(err) / sd))


def test_pair_estimates_mapping_and_pair_selection():
    rng = np.random.default_rng(105)
    schema, codes = correlated_records(2000, SIZES, rng, missing=0.2)
    rr = randomize(schema, codes, "grr", 6.0, rng)
    est = estimate_pairs(rr, pairs=[(2, 0), (1, 2)])
    assert isinstance(est, PairEstimates)
    assert list(est) == [(0, 2), (1, 2)]
    assert (2, 0) in est and (0, 1) not in est
    np.testing.assert_array_equal(est[(2, 0)], est[(0, 2)].T)
    np.testing.assert_array_equal(est.table("a2", "a0"), est[(0, 2)].T)
    assert est[(0, 2)].shape == (3, 2) and not est[(0, 2)].flags.writeable
    assert len(est.marginals) == 3 and est.marginals[1].probs.shape == (4,)
    with pytest.raises(EstimationError, match="two different"):
        estimate_pairs(rr, pairs=[(1, 1)])
    with pytest.raises(EstimationError, match="method"):
        estimate_pairs(rr, "exact_em")


def test_pair_never_reported_together_is_named():
    codes = np.array([[0, MISSING], [1, MISSING], [MISSING, 0], [MISSING, 1]], dtype=np.int32)
    schema = Schema((Attribute("sex", ("f", "m")), Attribute("smoker", ("no", "yes"))))
    rr = randomize(schema, codes, "grr", 2.0, np.random.default_rng(0))
    with pytest.raises(EstimationError, match="'sex' and 'smoker'"):
        estimate_pairs(rr)


def test_non_structured_channels_use_the_dense_path():
    """GLH over a few random tables has a support matrix that is not p/q-shaped: the pair EM then
    runs through dense channel products, and still recovers a strongly dependent joint."""
    rng = np.random.default_rng(106)
    schema, codes = correlated_records(40_000, [3, 3], rng, missing=0.1)
    mechs = tuple(GLH.with_random_tables(3.0, 3, m=4, rng=rng) for _ in range(2))
    M = mechs[0].support_matrix()
    assert not np.allclose(M[~np.eye(3, dtype=bool)], mechs[0].q_support)
    reports = tuple(m.perturb(codes[:, j], rng) for j, m in enumerate(mechs))
    rr = RecordReports(schema, mechs, reports)
    est = estimate_pairs(rr)
    truth = _true_table(codes, 0, 1, [3, 3])
    assert js_divergence(truth.ravel(), est[(0, 1)].ravel()) < 0.01


@pytest.mark.parametrize("mech_name", ["grr", "oue"])
def test_estimate_pairs_shrinks_toward_uniform_by_default(mech_name):
    """At a small budget the default pair tables keep a share ``shrink[pair]`` < 1 of the EM
    table's departure from the uniform table, and ``shrink=False`` gives that EM table; the
    marginals are shrunk the same way (``FrequencyEstimate.shrink``)."""
    rng = np.random.default_rng(36)
    schema, codes = correlated_records(1500, [3, 4, 2], rng, missing=0.2)
    rr = randomize(schema, codes, mech_name, 1.5, rng)
    raw = estimate_pairs(rr, shrink=False)
    est = estimate_pairs(rr, marginals=list(raw.marginals))  # the same EM start as raw
    assert raw.shrink == {} and set(est.shrink) == set(est.tables)
    for key, table in est.items():
        lam = est.shrink[key]
        assert 0 <= lam < 1
        u = 1.0 / table.size
        np.testing.assert_allclose(table, u + lam * (raw[key] - u), rtol=0, atol=1e-9)
    # marginals: James and Stein's weight shrinks nothing below 4 values (module doc)
    assert [m.shrink < 1 for m in estimate_pairs(rr).marginals] == [False, True, False]


@pytest.mark.parametrize("mech_name", ["grr", "oue"])
def test_default_pair_tables_beat_the_unshrunk_ones_at_a_tiny_budget(mech_name):
    """At a tiny budget (epsilon 0.25 per attribute, 3,000 records, a 4 x 5 dependent pair) the
    pair EM follows the noise and the default (shrunk: ``shrink_weights``) tables must be closer to
    the true table than the unshrunk ones: over 20 randomizations of the same records the paired
    difference of squared errors has a mean below 0 by more than 3 of its standard errors
    (one-sided, normal approximation of a mean of 20 independent values; measured over 100:
    z = -29 for GRR and -21 for OUE, so about -13 and -9 at 20)."""
    rng = np.random.default_rng(38)
    schema, codes = correlated_records(3000, [4, 5], rng, missing=0.0)
    truth = _true_table(codes, 0, 1, [4, 5])
    truth /= truth.sum()
    reps = 20
    diff = []
    for _ in range(reps):
        rr = randomize(schema, codes, mech_name, 0.5, rng)
        c = pair_counts(rr)
        raw = estimate_pairs(rr, counts=c, shrink=False)
        est = estimate_pairs(rr, counts=c)
        assert 0 <= est.shrink[(0, 1)] <= 1
        diff.append(np.sum((est[(0, 1)] - truth) ** 2) - np.sum((raw[(0, 1)] - truth) ** 2))
    diff = np.array(diff)
    assert diff.mean() + 3 * diff.std(ddof=1) / np.sqrt(reps) < 0, diff.mean()


@pytest.mark.parametrize("estimator", ["em", "norm_sub"])
@pytest.mark.parametrize("mech_name", ["grr", "oue"])
def test_default_pair_weights_are_each_pairs_own_shrink_weight(mech_name, estimator):
    """Each default pair weight is ``shrink_weights`` of that pair alone, from the public pieces:
    its unshrunk table, its inversion ``invert_tables(W) / n~``, the noise trace
    ``inversion_noise(n~, m_j, m_j')`` and ``null_departure`` of its channel and ``n~`` (both
    oriented with the smaller domain first, as the estimator stacks them), so the batched wiring
    (per-pair parameters, traces and null departures of a whole stack) cannot mix pairs up.
    Domains 4, 3, 4, 3 stack four 3 x 4 pairs in both orientations, budgets split 1:2:3:4 (0.08
    to 0.32) give every attribute its own channel, 20% missing gives each pair its own ``n~``,
    and skewed dependent values (80% in one category) make the null departure the binding weight
    of several EM pairs. The two sides differ only by rounding (the trace is
    ``inversion_noise(1, ...) / n~`` in the batch), about 1e-16 relative in the inputs, which
    moves a weight (a ratio of sums of squares of O(1) terms) by far less than 1e-12."""
    rng = np.random.default_rng(39)
    sizes, n_rec = [4, 3, 4, 3], 20_000
    latent = rng.standard_normal(n_rec)
    cols = []
    for f in sizes:
        v = 0.9 * latent + 0.45 * rng.standard_normal(n_rec)
        cols.append(np.searchsorted(np.quantile(v, [0.8, 0.9, 0.95][: f - 1]), v))
    codes = np.column_stack(cols).astype(np.int32)
    codes[rng.random(codes.shape) < 0.2] = MISSING
    schema = Schema(tuple(Attribute(f"a{j}", tuple(f"v{i}" for i in range(f)))
                          for j, f in enumerate(sizes)))
    rr = RecordRandomizer(schema, mech_name, 0.8, weights=[1, 2, 3, 4]).randomize(codes, rng)
    c = pair_counts(rr)
    raw = estimate_pairs(rr, estimator, counts=c, shrink=False)
    est = estimate_pairs(rr, estimator, counts=c, marginals=list(raw.marginals))
    assert len({c.n_present(j, k) for j, k in est}) == len(est)
    assert any(sizes[j] > sizes[k] for j, k in est) and any(sizes[j] < sizes[k] for j, k in est)
    binding = 0
    for (j, k), table in raw.items():
        o = (j, k) if sizes[j] <= sizes[k] else (k, j)
        T = (table if o == (j, k) else table.T).reshape(1, -1)
        m1, m2 = rr.mechanisms[o[0]], rr.mechanisms[o[1]]
        a1, q1 = m1.p_support - m1.q_support, m1.q_support
        a2, q2 = m2.p_support - m2.q_support, m2.q_support
        n = c.n_present(j, k)
        inv = (invert_tables(c.block(*o).astype(np.float64), a1, q1, a2, q2) / n).reshape(1, -1)
        trace = np.array([inversion_noise(n, m1, m2)])
        null = null_departure(a1, q1, a2, q2, sizes[o[0]], sizes[o[1]], float(n), estimator)
        lam = shrink_weights(T, inv, trace, np.array([null]))[0]
        assert abs(est.shrink[(j, k)] - lam) <= 1e-12, ((j, k), est.shrink[(j, k)], lam)
        binding += lam > shrink_weights(T, inv, trace)[0] + 1e-3
    if estimator == "em":
        assert binding >= 3  # the null departures' wiring is exercised, not only computed
