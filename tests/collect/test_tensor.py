"""c-way tables through product channels: mode products, counts, inversion, EMs."""

import numpy as np
import pytest

from reidrisk.collect import _tensor
from reidrisk.mechanisms import GRR, OUE, Subset


def test_apply_equals_the_kronecker_product():
    rng = np.random.default_rng(0)
    mats = [rng.random((f, f)) for f in (2, 3, 4)]
    T = rng.random((2, 3, 4))
    K = np.kron(np.kron(mats[0], mats[1]), mats[2])
    np.testing.assert_allclose(_tensor.apply(T, mats).ravel(), K @ T.ravel())
    np.testing.assert_allclose(_tensor.apply(T, mats, transpose=True).ravel(), K.T @ T.ravel())


def test_support_tensor_counts_joint_memberships():
    rng = np.random.default_rng(1)
    mechs = [Subset(0.5, 5), OUE(1.0, 3), GRR(1.0, 4)]
    x = rng.integers(0, 3, size=(500, 3))
    reps = [m.perturb(x[:, j], rng) for j, m in enumerate(mechs)]
    B = [m.support(r) for m, r in zip(mechs, reps)]
    rows = rng.random(500) < 0.6
    W = _tensor.support_tensor(B, rows)
    dense = [np.asarray(b.toarray() if hasattr(b, "toarray") else b)[rows] for b in B]
    expected = np.einsum("ia,ib,ic->abc", *dense)
    np.testing.assert_array_equal(W, expected)


def _expected_counts(T, mechs, n):
    return n * _tensor.apply(T, [m.support_matrix() for m in mechs])


def test_inversion_and_em_recover_a_table_from_its_expected_counts():
    # with the expected counts as data the inversion is exact and T is the EM's fixed point
    rng = np.random.default_rng(2)
    T = rng.dirichlet(np.ones(24)).reshape(2, 3, 4)
    mechs = [Subset(3.0, 2), Subset(2.5, 3), OUE(3.0, 4)]
    W = _expected_counts(T, mechs, 1000.0)
    mats = [m.support_matrix() for m in mechs]
    np.testing.assert_allclose(_tensor.invert(W, 1000.0, mats), T, atol=1e-10)
    fit = _tensor.em(W, 1000.0, mats, stop=1e-11, max_iter=20_000)
    assert fit.converged
    np.testing.assert_allclose(fit.estimate, T, atol=1e-6)


def test_discrepancy_stop_returns_the_start_when_it_explains_the_data():
    mechs = [GRR(0.1, 3), GRR(0.1, 3)]
    T = np.full((3, 3), 1 / 9)
    W = _expected_counts(T, mechs, 500.0)
    fit = _tensor.em(W, 500.0, [m.support_matrix() for m in mechs], stop="discrepancy")
    assert fit.iterations == 0 and fit.converged
    np.testing.assert_allclose(fit.estimate, T)


def test_exact_em_grouped_equals_per_report():
    rng = np.random.default_rng(3)
    mechs = [Subset(0.8, 5), GRR(0.8, 3)]
    x = rng.integers(0, 3, size=(400, 2))
    lps = [m.log_prob(m.perturb(x[:, j], rng)) for j, m in enumerate(mechs)]
    a = _tensor.exact_em(lps, stop=None, max_iter=50, group=True)
    b = _tensor.exact_em(lps, stop=None, max_iter=50, group=False)
    np.testing.assert_allclose(a.estimate, b.estimate, rtol=1e-10, atol=1e-13)
    assert a.iterations == b.iterations == 50


def test_exact_em_on_grr_equals_count_em():
    # for GRR the report likelihood is a function of the count of each report: the two EMs agree
    rng = np.random.default_rng(4)
    m1, m2 = GRR(1.0, 3), GRR(0.5, 4)
    x = rng.integers(0, 3, size=(300, 2))
    r1, r2 = m1.perturb(x[:, 0], rng), m2.perturb(x[:, 1], rng)
    T1 = _tensor.exact_em([m1.log_prob(r1), m2.log_prob(r2)], stop=None, max_iter=30).estimate
    W = _tensor.support_tensor([m1.support(r1), m2.support(r2)])
    T2 = _tensor.em(W, 300.0, [m1.support_matrix(), m2.support_matrix()], stop=None,
                    max_iter=30).estimate
    np.testing.assert_allclose(T1, T2, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_project_simplex_is_the_euclidean_projection(seed):
    rng = np.random.default_rng(seed)
    t = rng.normal(0.1, 0.3, size=(3, 4))
    p = _tensor.project_simplex(t)
    assert p.shape == t.shape and np.all(p >= 0) and np.isclose(p.sum(), 1.0)
    # optimality: no feasible direction along the simplex (e_i - e_j) reduces the distance
    grad = (p - t).ravel()
    support = p.ravel() > 0
    assert grad[support].max() - grad.min() < 1e-12


def test_check_stop_rejects_unknown_rules():
    with pytest.raises(ValueError, match="stop must be"):
        _tensor.check_stop("sometimes")
    with pytest.raises(ValueError, match="> 0"):
        _tensor.check_stop(-1.0)


def test_model_io_and_pipeline_import_in_one_direction():
    """The model file module never imports the pipeline (not even inside a function), and the
    pipeline imports it once, at module level: no import circle between them."""
    import ast
    from pathlib import Path

    import reidrisk.collect.model_io as model_io
    import reidrisk.collect.pipeline as pipeline

    def imported(module, nested: bool) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text())
        nodes = ast.walk(tree) if nested else tree.body
        return {n.module for n in nodes if isinstance(n, ast.ImportFrom) and n.module}

    assert not any(m.startswith("reidrisk.collect.pipeline") for m in imported(model_io, True))
    inner = imported(pipeline, True) - imported(pipeline, False)
    assert "reidrisk.collect.model_io" in imported(pipeline, False)
    assert "reidrisk.collect.model_io" not in inner
    assert pipeline.CollectModel is model_io.CollectModel
