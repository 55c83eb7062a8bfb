"""The one EM engine (reidrisk.estimation.em): its stopping rules, SQUAREM with its monotone
safeguard, named results, and that every EM of the package runs on it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from reidrisk.collect import CollectPipeline, Protocol, _tensor
from reidrisk.estimation import (
    EMResult,
    EstimationError,
    em_counts,
    em_reports,
    em_tables,
    estimate_marginal,
    estimate_marginals,
    estimate_pairs,
    frequency,
)
from reidrisk.estimation import em as engine
from reidrisk.estimation.em import NOISE_TOL, noise_stop, parse_stop, poisson_gain

from .conftest import correlated_records, mech, randomize


def _counts(name="grr", eps=1.0, k=8, n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    m = mech(name, eps, k)
    theta = rng.dirichlet(np.full(k, 0.7))
    w, n_present = m.support_counts(m.perturb(rng.choice(k, size=n, p=theta), rng))
    return m, np.asarray(w, dtype=np.float64), n_present


# ---------------------------------------------------------------------------------------------
# stopping rules
# ---------------------------------------------------------------------------------------------
def test_one_parser_for_every_rule():
    assert parse_stop("noise") == engine.StopRule("noise", NOISE_TOL)
    assert parse_stop(("noise", 1e-3)) == engine.StopRule("noise", 1e-3)
    assert parse_stop("discrepancy").kind == "discrepancy"
    assert parse_stop(1e-6) == engine.StopRule("tol", 1e-6)
    assert parse_stop(None).kind == "none"
    for bad in ("soon", ("noise",), ("noise", -1.0), ("noise", "x"), ("tol", 1e-3), 0.0, True):
        with pytest.raises(EstimationError, match="stop"):
            parse_stop(bad)


def test_noise_threshold_reaches_the_collect_pipeline():
    """``CollectPipeline(stop=("noise", x))`` used to fail with "float() argument must be ... not
    'tuple'": the pipeline validated stops with a parser of its own."""
    rng = np.random.default_rng(5)
    schema, codes = correlated_records(3000, [3, 4, 2], rng)
    rr = Protocol(4.0, attributes_per_person=2).randomize(schema, codes, rng=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loose = CollectPipeline(stop=("noise", 1e-1)).fit(rr)
        default = CollectPipeline().fit(rr)
        same = CollectPipeline(stop=("noise", NOISE_TOL)).fit(rr)
    assert same.report.marginal_iterations == default.report.marginal_iterations
    assert sum(loose.report.marginal_iterations) < sum(default.report.marginal_iterations)
    with pytest.raises(ValueError, match="stop tolerance must be finite and > 0"):
        CollectPipeline(stop=("noise", 0.0))


def test_noise_stop_honours_the_previous_gain():
    """The rule extrapolates the remaining deviance from the last two gains: the same small gain
    stops when the gains shrink fast and continues when they barely shrink (EM's rate near 1)."""
    dof, thr = 10, 1e-4
    gain = np.array([5e-4, 5e-4, 5e-4, 0.0, 1e-3])
    prev = np.array([5e-2, 5.1e-4, np.nan, 1.0, 5e-4])  # fast, slow, first step, none, growing
    done = noise_stop(gain, prev, thr, dof)
    assert done.tolist() == [True, False, False, True, False]


def test_noise_stop_reads_rounding_level_gains_as_the_fixed_point():
    """At the fixed point the computed gains are rounding noise of either sign (about eps times the
    total count); read as gains they never show linear convergence and the run went to max_iter."""
    total = np.full(4, 2_000.0)
    gain = np.array([9.8e-13, 7.5e-13, 1e-6, 1e-6])
    prev = np.array([-5.4e-13, 1e-13, 1.0000001e-6, 1.0000001e-6])
    assert noise_stop(gain, prev, 1e-4, 10, total).tolist() == [True, True, False, False]
    assert noise_stop(gain, prev, 1e-4, 10).tolist() == [False, False, False, False]


def test_nearly_noiseless_reports_stop_at_once():
    """Reports that are the data (PDE/ETE at eps = 100 per attribute): the EM reaches its fixed
    point in a few steps and must say so, not run to max_iter on rounding noise."""
    from reidrisk.collect.baselines import BASELINES
    from reidrisk.data.missing import mcar
    from reidrisk.data.synthetic import make_population

    pop = make_population(3000, [3, 4, 2, 5], dependence=0.5, rng=1)
    method = BASELINES["pde_ete"]()
    rr = method.protocol(400.0).randomize(pop.schema, mcar(pop.codes, 0.3, rng=2), rng=3)
    results = []
    run = engine.run

    def spy(*args, **kwargs):
        results.append(run(*args, **kwargs))
        return results[-1]

    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setattr(engine, "run", spy)
        method.fit(rr)
        method.table([0])
    assert results
    for res in results:
        assert np.all(res.converged) and res.iterations.max() < 100, res.iterations


def test_noise_default_ends_within_the_threshold_of_the_fixed_point():
    """The deviance still to gain at the default stop, against a fit converged far beyond it: a
    deviance of 1 is about one standard error along one direction; the rule aims at
    ``NOISE_TOL * (k - 1)``; its extrapolation is exact only for linear convergence (measured up
    to 4.3x the aim, em.py), so the bound is 10x the aim: 1e-3 per free parameter, 0.03 standard
    errors per direction, still statistically invisible."""
    for name, eps, k in (("grr", 1.0, 20), ("oue", 0.5, 12), ("subset", 2.0, 30)):
        m, w, n = _counts(name, eps, k, 50_000, seed=k)
        M = m.support_matrix()
        fit = em_counts(w, n, M)
        ref = em_counts(w, n, M, stop=("noise", 1e-13), max_iter=200_000)
        assert fit.converged and ref.converged
        remaining = 2 * poisson_gain(w, M @ fit.estimate, M @ ref.estimate)
        assert -1e-9 <= remaining <= 10 * NOISE_TOL * (k - 1), (name, remaining)


# ---------------------------------------------------------------------------------------------
# SQUAREM
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_squarem_reaches_the_plain_em_fixed_point_in_fewer_steps():
    m, w, n = _counts("grr", 1.0, 20, 200_000, seed=3)
    M = m.support_matrix()
    fast = em_counts(w, n, M, stop=("noise", 1e-12), max_iter=100_000)
    problem = engine.PoissonCounts(w[None, :, None], frequency._Channels.dense(
        M[None], np.ones((1, 1, 1))), k_dof := w.size - 1)
    start = engine.positive_start(None, n, (1, w.size, 1))
    slow = engine.run(problem, start, stop=("noise", 1e-12), max_iter=200_000, accelerate=False)
    assert k_dof == 19 and slow.converged[0]
    np.testing.assert_allclose(fast.estimate / n, slow.estimate[0, :, 0] / n, atol=2e-5)
    assert fast.iterations * 5 < slow.iterations[0]


def test_squarem_never_decreases_the_likelihood():
    """The monotone safeguard: every cycle ends at least as high as two plain EM steps, so the
    log-likelihood after each cycle never falls (checked cycle by cycle with max_iter = 3 t)."""
    m, w, n = _counts("oue", 0.3, 15, 5_000, seed=9)  # weak signal: extrapolations overshoot
    M = m.support_matrix()
    lik = []
    for cycles in range(1, 25):
        z = em_counts(w, n, M, stop=("noise", 1e-14), max_iter=3 * cycles).estimate
        mu = M @ z
        lik.append(float(np.sum(w * np.log(mu)) - mu.sum()))
    assert np.all(np.diff(lik) >= -1e-7 * abs(lik[0]))


def test_plain_rules_follow_the_em_path():
    """A float tolerance and None are defined along the plain EM path (no extrapolation): with
    stop=None every iterate is the t-fold plain EM map."""
    m, w, n = _counts("grr", 1.0, 6, 5_000, seed=1)
    M = m.support_matrix()
    z = np.full(6, n / 6)
    for _ in range(7):
        z = z * (M.T @ (w / (M @ z))) / M.sum(axis=0)
    np.testing.assert_allclose(em_counts(w, n, M, stop=None, max_iter=7).estimate, z, rtol=1e-12)


def test_gain_rule_stops_after_the_first_step_that_gains_too_little():
    """("gain", tol): plain EM steps until one gains less than tol times the total count; the fit
    is that step's iterate. Checked against the plain EM path built by hand (stop=None), for
    several tolerances, and tol = 0 (only a loss stops) runs to max_iter."""
    m, w, n = _counts("grr", 1.0, 6, 5_000, seed=1)
    M = m.support_matrix()
    problem = engine.PoissonCounts(w[None, :, None], frequency._Channels.dense(
        M[None], np.ones((1, 1, 1))), w.size - 1)
    start = engine.positive_start(None, n, (1, w.size, 1))
    path = [start]
    for _ in range(300):  # the plain EM path, one step at a time
        path.append(engine.run(problem, path[-1], stop=None, max_iter=1).estimate)
    gains = np.array([poisson_gain(w, M @ a[0, :, 0], M @ b[0, :, 0])
                      for a, b in zip(path[:-1], path[1:])])
    assert np.all(np.diff(gains[:150]) < 0)  # so each tolerance below picks a distinct step
    for tol in (1e-2, 1e-4, 1e-6):
        below = gains < tol * w.sum()
        assert below.any()
        k = int(np.argmax(below)) + 1  # steps are numbered from 1
        fit = engine.run(problem, start, stop=("gain", tol), max_iter=200)
        assert fit.iterations[0] == k and fit.converged[0]
        np.testing.assert_array_equal(fit.estimate, path[k])
    capped = engine.run(problem, start, stop=("gain", 1e-6), max_iter=5)
    assert capped.iterations[0] == 5 and not capped.converged[0]
    zero = engine.run(problem, start, stop=("gain", 0.0), max_iter=40)
    assert zero.iterations[0] == 40
    np.testing.assert_array_equal(zero.estimate, path[40])
    assert parse_stop(("gain", 0.0)) == engine.StopRule("gain", 0.0)
    for bad in (("gain", -1e-5), ("gain", float("nan")), ("gain", "x"), ("gain", True)):
        with pytest.raises(EstimationError, match="stop"):
            parse_stop(bad)


def test_callback_sees_the_start_and_every_step():
    """The callback is called once at the start and after every step: a trace of the
    log-likelihood has max_iter + 1 entries, from the start's to the returned iterate's."""
    m, w, n = _counts("grr", 1.0, 6, 5_000, seed=1)
    M = m.support_matrix()
    problem = engine.PoissonCounts(w[None, :, None], frequency._Channels.dense(
        M[None], np.ones((1, 1, 1))), w.size - 1)
    start = engine.positive_start(None, n, (1, w.size, 1))
    seen = []
    fit = engine.run(problem, start, stop=None, max_iter=4,
                     callback=lambda idx, th, mu: seen.append(th.copy()))
    assert len(seen) == 5
    np.testing.assert_array_equal(seen[0], start)
    np.testing.assert_array_equal(seen[-1], fit.estimate)


# ---------------------------------------------------------------------------------------------
# named results, one engine
# ---------------------------------------------------------------------------------------------
def test_results_are_named_not_tuples():
    m, w, n = _counts()
    fit = em_counts(w, n, m.support_matrix())
    assert isinstance(fit, EMResult) and isinstance(fit.iterations, int)
    with pytest.raises(TypeError):
        z, it, ok = fit
    with pytest.raises(TypeError):
        fit[0]
    assert not fit.estimate.flags.writeable


def test_the_old_em_implementations_are_gone():
    for mod, name in ((frequency, "_em_batched"), (frequency, "_noise_converged"),
                      (frequency, "_parse_stop"), (_tensor, "_noise_done"),
                      (_tensor, "discrepancy"), (_tensor, "STOPS")):
        assert not hasattr(mod, name), name


def test_every_em_runs_on_the_one_engine(monkeypatch):
    calls = []
    real = engine.run

    def spy(problem, *args, **kwargs):
        calls.append(type(problem).__name__)
        return real(problem, *args, **kwargs)

    monkeypatch.setattr(engine, "run", spy)
    rng = np.random.default_rng(0)
    schema, codes = correlated_records(2000, [3, 4, 2], rng)
    rr = randomize(schema, codes, "grr", 2.0, rng)
    m = rr.mechanisms[0]
    w, n = m.support_counts(rr.reports[0])
    lp = m.log_prob(rr.reports[0][rr.reports[0] >= 0])

    def used(fn, kind):
        before = len(calls)
        fn()
        assert calls[before:] and set(calls[before:]) == {kind}, (fn, calls[before:])

    used(lambda: em_counts(w, n, m.support_matrix()), "PoissonCounts")
    used(lambda: em_reports(lp), "ReportMixture")
    used(lambda: em_tables(np.ones((3, 4)), 12, 0.5, 0.1, 0.5, 0.1), "PoissonCounts")
    used(lambda: estimate_marginal(m, rr.reports[0]), "PoissonCounts")
    used(lambda: estimate_marginal(m, rr.reports[0], "exact_em"), "ReportMixture")
    used(lambda: estimate_marginals(rr), "PoissonCounts")
    used(lambda: estimate_pairs(rr), "PoissonCounts")
    used(lambda: _tensor.em(np.ones((3, 4)), 12.0, [np.eye(3), np.eye(4)]), "PoissonCounts")
    used(lambda: _tensor.exact_em([lp[:50], lp[:50]]), "ReportMixture")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        used(lambda: CollectPipeline().fit(rr), "PoissonCounts")
        before = len(calls)
        CollectPipeline(exact_em=True).fit(rr)
        assert set(calls[before:]) == {"ReportMixture"}
    from reidrisk.uniqueness.model import Database, estimate_population

    used(lambda: estimate_population([Database(rr, 0.5)], schema), "PoissonCounts")


def test_start_scale_and_validation():
    z = engine.positive_start([0.0, 1.0, 3.0], 8.0, (1, 3))
    assert z.shape == (1, 3) and z.sum() == pytest.approx(8.0) and z.min() > 0
    # by hand: [0, 1, 3] / 4 with its zero lifted to 1e-12 of the mean (1e-12 / 3), times 8
    np.testing.assert_allclose(z[0], [8e-12 / 3, 2.0, 6.0], rtol=1e-9)
    np.testing.assert_allclose(engine.positive_start(None, 8.0, (2, 4)), np.full((2, 4), 2.0),
                               rtol=1e-15)
    with pytest.raises(EstimationError, match="init"):
        engine.positive_start([1.0, -1.0, 1.0], 1.0, (1, 3))
    with pytest.raises(EstimationError, match="max_iter"):
        engine.check_max_iter(0)



def test_max_iter_is_never_passed():
    """A SQUAREM cycle takes three steps; with fewer left, plain steps end the run exactly at the
    cap, and a run stopped by the cap is not reported as converged."""
    m, w, n = _counts("grr", 0.3, 50, 3_000, seed=4)  # flat likelihood: far from converged
    for cap in (1, 2, 3, 4, 5, 10, 11):
        fit = em_counts(w, n, m.support_matrix(), max_iter=cap)
        assert fit.iterations == cap and not fit.converged
