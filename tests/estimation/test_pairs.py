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
    invert_tables,
    js_divergence,
    pair_counts,
)
from reidrisk.estimation.frequency import SURE_SE_MAX, _Channels
from reidrisk.estimation.pairs import interaction_noise, interaction_weights
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
    toward independence is tested on its own)."""
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


@pytest.mark.parametrize("estimator", ["em", "norm_sub"])
def test_marginals_and_starts_of_the_wrong_size_are_refused_naming_the_attribute(estimator):
    """The marginals given to ``estimate_pairs`` are the EM's start and the shrinkage's target:
    one per attribute, each over its attribute's values, or an ``EstimationError`` naming the
    attribute (they used to reach numpy, which raised a bare broadcasting or reshape error, or
    an IndexError for too few); the same for ``start``."""
    rng = np.random.default_rng(42)
    schema, codes = correlated_records(800, SIZES, rng, missing=0.1)
    rr = randomize(schema, codes, "grr", 3.0, rng)
    good = list(estimate_pairs(rr, shrink=False).marginals)
    with pytest.raises(EstimationError, match=r"'a1' needs 4 finite"):
        estimate_pairs(rr, estimator, marginals=[good[0], good[0], good[2]])
    with pytest.raises(EstimationError, match="2 marginal estimates for 3 attributes"):
        estimate_pairs(rr, estimator, marginals=good[:2])
    with pytest.raises(EstimationError, match=r"'a2' needs 2 finite"):
        estimate_pairs(rr, estimator, marginals=[good[0], good[1], None])
    probs = [m.probs for m in good]
    with pytest.raises(EstimationError, match=r"start vectors: attribute 'a0' needs 3"):
        estimate_pairs(rr, estimator, start=[np.full(3, np.nan), probs[1], probs[2]])
    same = estimate_pairs(rr, estimator, marginals=good, start=[list(p) for p in probs])
    ref = estimate_pairs(rr, estimator, marginals=good)
    for key, table in ref.items():
        np.testing.assert_array_equal(same[key], table)


@pytest.mark.parametrize("mech_name", ["grr", "oue"])
def test_estimate_pairs_shrinks_toward_independence_by_default(mech_name):
    """At a small budget the default pair tables keep a share ``shrink[pair]`` < 1 of the EM
    table's departure from the independence table of the marginals they are given, and
    ``shrink=False`` gives that EM table; the marginals are shrunk toward uniform
    (``FrequencyEstimate.shrink``)."""
    rng = np.random.default_rng(36)
    schema, codes = correlated_records(1500, [3, 4, 2], rng, missing=0.2)
    rr = randomize(schema, codes, mech_name, 1.5, rng)
    raw = estimate_pairs(rr, shrink=False)
    est = estimate_pairs(rr, marginals=list(raw.marginals))  # the same EM start as raw
    assert raw.shrink == {} and set(est.shrink) == set(est.tables)
    for (j, k), table in est.items():
        lam = est.shrink[(j, k)]
        assert 0 <= lam < 1
        ind = np.outer(raw.marginals[j].probs, raw.marginals[k].probs)
        np.testing.assert_allclose(table, ind + lam * (raw[(j, k)] - ind), rtol=0, atol=1e-9)
        assert abs(table.sum() - 1) < 1e-12 and np.all(table >= 0)
    # marginals: James and Stein's weight shrinks nothing below 4 values (module doc)
    assert [m.shrink < 1 for m in estimate_pairs(rr).marginals] == [False, True, False]


@pytest.mark.parametrize("mech_name", ["grr", "oue"])
def test_default_pair_tables_are_no_worse_than_the_references_on_a_skewed_pair(mech_name):
    """A skewed, dependent 4 x 4 pair (a latent normal cut at its 80, 90 and 95% quantiles) of
    20,000 records at epsilon 0.1 per attribute: over 20 randomizations, the default table's
    squared error exceeds that of the best of the unshrunk EM, the uniform table and the
    independence table of the default marginals by less than 3 standard errors of the paired
    difference (one-sided, normal approximation of a mean of 20 independent values). The
    shrinkage toward the uniform table it replaced had 2.27x (GRR, against the unshrunk EM) and
    2.10x (OUE, against the independence table) the best error here, now 1.28x and 0.99x: it
    charged the whole table the noise that only the interaction has, and shrank the
    well-estimated margins away (docs/design/core.md#pair-shrinkage)."""
    rng = np.random.default_rng(40)
    n_rec, reps = 20_000, 20
    latent = rng.standard_normal(n_rec)
    cols = []
    for _ in range(2):
        v = 0.9 * latent + 0.45 * rng.standard_normal(n_rec)
        cols.append(np.searchsorted(np.quantile(v, [0.8, 0.9, 0.95]), v))
    codes = np.column_stack(cols).astype(np.int32)
    schema = Schema(tuple(Attribute(f"a{j}", tuple(f"v{i}" for i in range(4)))
                          for j in range(2)))
    truth = _true_table(codes, 0, 1, [4, 4])
    truth /= truth.sum()
    err = {e: [] for e in ("default", "mle", "uniform", "independence")}
    for _ in range(reps):
        rr = randomize(schema, codes, mech_name, 0.2, rng)
        c = pair_counts(rr)
        est = estimate_pairs(rr, counts=c)
        raw = estimate_pairs(rr, counts=c, shrink=False)
        ind = np.outer(est.marginals[0].probs, est.marginals[1].probs)
        for e, t in (("default", est[(0, 1)]), ("mle", raw[(0, 1)]),
                     ("uniform", np.full((4, 4), 1 / 16)), ("independence", ind)):
            err[e].append(np.sum((t - truth) ** 2))
    best = min(("mle", "uniform", "independence"), key=lambda e: np.mean(err[e]))
    diff = np.array(err["default"]) - np.array(err[best])
    assert diff.mean() < 3 * diff.std(ddof=1) / np.sqrt(reps), (best, diff.mean(), {
        e: np.mean(v) for e, v in err.items()})


def test_interaction_noise_is_the_inversions_noise_in_the_interaction_directions():
    """``interaction_noise`` against the empirical covariance of the pair inversion, double
    centred (``C_1 X C_2``), over 4,000 randomizations of one fixed database of 150 records (3 x 4,
    dependent), GRR and OUE at epsilon 4 per attribute, where the true value's own part
    ``(1 - 1/f_1)(1 - 1/f_2) / n`` is 3.5x (GRR) and 0.24x (OUE) the trace, so leaving it out
    would fail. The trace of a sample covariance of R draws has a relative standard deviation of
    at most sqrt(2 / R) (2.2% at R = 4,000); the tolerance is 4 of them."""
    rng = np.random.default_rng(41)
    schema, codes = correlated_records(150, [3, 4], rng, missing=0.0)
    reps, n = 4000, codes.shape[0]
    tiled = np.tile(codes, (reps, 1))
    C1, C2 = np.eye(3) - 1 / 3, np.eye(4) - 1 / 4
    for name in ("grr", "oue"):
        rr = randomize(schema, tiled, name, 8.0, rng)
        m1, m2 = rr.mechanisms
        B1, B2 = (_dense(s).reshape(reps, n, -1) for s in rr.supports())
        W = np.einsum("rni,rnj->rij", B1, B2)
        a1, q1 = m1.p_support - m1.q_support, m1.q_support
        a2, q2 = m2.p_support - m2.q_support, m2.q_support
        T = invert_tables(W, a1, q1, a2, q2) / n
        X = (C1 @ T @ C2).reshape(reps, -1)
        empirical = float(np.trace(np.cov(X, rowvar=False)))
        value = interaction_noise(n, m1, m2)
        assert abs(value / empirical - 1) < 4 * np.sqrt(2 / reps), (name, value, empirical)
        own = (1 - 1 / 3) * (1 - 1 / 4) / n
        assert abs((value + own) / empirical - 1) > 4 * np.sqrt(2 / reps)


@pytest.mark.parametrize("mech_name", ["grr", "oue"])
def test_default_pair_tables_beat_the_unshrunk_ones_at_a_tiny_budget(mech_name):
    """At a tiny budget (epsilon 0.25 per attribute, 3,000 records, a 4 x 5 dependent pair) the
    pair EM follows the noise and the default tables (shrunk toward the independence table) must
    be closer to the true table than the unshrunk ones: over 20 randomizations of the same records the paired
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
    """Each default pair weight is ``interaction_weights`` of that pair alone, from the public
    pieces: its unshrunk table, its inversion ``invert_tables(W) / n~`` and
    ``interaction_noise(n~, m_j, m_j')``; each table is the
    independence table of the given marginals plus that share of the unshrunk table's departure
    from it. So the batched wiring (per-pair parameters, noises and targets of a whole stack, in
    both orientations) cannot mix pairs up. Domains 4, 3, 4, 3 stack four 3 x 4 pairs in both
    orientations, budgets split 1:2:3:4 (0.4 to 1.6) give every attribute its own channel,
    20% missing gives each pair its own ``n~``, and skewed dependent values (80% in one category)
    give weights strictly between 0 and 1. Both sides differ only by rounding."""
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
    rr = RecordRandomizer(schema, mech_name, 4.0, weights=[1, 2, 3, 4]).randomize(codes, rng)
    c = pair_counts(rr)
    raw = estimate_pairs(rr, estimator, counts=c, shrink=False)
    est = estimate_pairs(rr, estimator, counts=c, marginals=list(raw.marginals))
    assert len({c.n_present(j, k) for j, k in est}) == len(est)
    assert any(sizes[j] > sizes[k] for j, k in est) and any(sizes[j] < sizes[k] for j, k in est)
    inside = 0
    for (j, k), table in raw.items():
        m1, m2 = rr.mechanisms[j], rr.mechanisms[k]
        a1, q1 = m1.p_support - m1.q_support, m1.q_support
        a2, q2 = m2.p_support - m2.q_support, m2.q_support
        n = c.n_present(j, k)
        inv = invert_tables(c.block(j, k).astype(np.float64), a1, q1, a2, q2) / n
        lam = interaction_weights(table[None], inv[None],
                                  np.array([interaction_noise(n, m1, m2)]))[0]
        assert abs(est.shrink[(j, k)] - lam) <= 1e-12, ((j, k), est.shrink[(j, k)], lam)
        ind = np.outer(raw.marginals[j].probs, raw.marginals[k].probs)
        np.testing.assert_allclose(est[(j, k)], ind + lam * (table - ind), rtol=0, atol=1e-12)
        inside += 0 < lam < 1
    assert inside >= 3  # the weights are exercised, not all 0 or 1


def test_interaction_weights_by_hand():
    """``interaction_weights`` on hand-made 3 x 3 tables (4 interaction directions), with ``D`` the
    departure of ``Y`` from the product of its margins:

    * no cell at zero, a small noise (1% of ``||D||^2``, so the risk estimate's standard error is
      about 0.05, below ``SURE_SE_MAX``): Stein's weight ``1 - s2 (df - 2) / ||e||^2`` with
      ``df = 9 - 5 = 4``, ``s2 = noise / 4``: 1 - 0.005 = 0.995;
    * the same with the noise at half of ``||D||^2`` (standard error above 0.35): the share of
      signal ``1 - noise / ||D||^2`` = 0.5;
    * a table on a face (four cells at zero: no interaction direction left, ``df = 0``) equal to
      its inversion, with a noise small enough for the risk estimate: 1, where the share of
      signal would shrink it;
    * a table equal to the product of its margins (as an EM stopped at its start is): the risk
      estimate is undetermined, so the share of signal of its inversion, 1 - 0.01 / ||D||^2."""
    Y = np.array([[0.2, 0.05, 0.05], [0.05, 0.2, 0.05], [0.1, 0.1, 0.2]])
    D = Y - np.outer(Y.sum(axis=1), Y.sum(axis=0))
    dd = float(np.sum(D * D))
    lam = interaction_weights(np.stack([Y, Y]), np.stack([Y, Y]), np.array([0.01, 0.5]) * dd)
    np.testing.assert_allclose(lam, [1 - 0.01 / 4 * 2, 0.5], rtol=1e-12)
    face = np.array([[0.5, 0.0, 0.0], [0.0, 0.3, 0.0], [0.0, 0.1, 0.1]])
    Df = face - np.outer(face.sum(axis=1), face.sum(axis=0))
    noise = 0.002 * float(np.sum(Df * Df))
    s2 = noise / 4  # one standard error is sqrt(s2) = 0.0045: the zero cells are off the face
    assert np.sqrt(s2 * np.sum(Df * Df)) / np.sum(Df * Df) < SURE_SE_MAX
    assert interaction_weights(face[None], face[None], np.array([noise]))[0] == 1.0
    ind = np.outer([0.2, 0.3, 0.5], [0.6, 0.3, 0.1])
    np.testing.assert_allclose(interaction_weights(ind[None], Y[None], np.array([0.01])),
                               [1 - 0.01 / dd], rtol=1e-12)
    with pytest.raises(EstimationError, match="noise"):
        interaction_weights(Y[None], Y[None], np.array([-1.0]))
    with pytest.raises(EstimationError, match=r"interaction_weights needs \(P, f1, f2\)"):
        interaction_weights(Y[None], Y[None, :2], np.array([0.01]))
