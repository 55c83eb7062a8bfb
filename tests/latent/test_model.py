"""Latent class model: recovery of a known mixture (raw, k-RR, OUE), monotone MAP-EM, files, bad input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from reidrisk.latent import LatentClassModel, LatentError
from reidrisk.latent import model as model_mod
from reidrisk.mechanisms import RecordRandomizer
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

SIZES = (3, 4, 2, 5)
TRUE_W = np.array([0.6, 0.4])


def _schema(sizes=SIZES) -> Schema:
    return Schema(tuple(Attribute(f"a{j}", tuple(f"v{i}" for i in range(f))) for j, f in enumerate(sizes)))


def _true_probs():
    # two well-separated classes: each puts most of its mass on different categories
    return [
        np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]]),
        np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]]),
        np.array([[0.9, 0.1], [0.2, 0.8]]),
        np.array([[0.6, 0.1, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.1, 0.6]]),
    ]


def _draw(n: int, seed: int) -> np.ndarray:
    gen = np.random.default_rng(seed)
    h = gen.choice(2, size=n, p=TRUE_W)
    probs = _true_probs()
    cols = []
    for t in probs:
        u = gen.random(n)
        cols.append((u[:, None] > np.cumsum(t[h], axis=1)).sum(axis=1))
    return np.column_stack(cols).astype(np.int64)


def _match_error(model: LatentClassModel) -> tuple[float, float]:
    """Largest absolute error of the weights and of the class probabilities, minimized over the
    label permutations (the classes are identified up to label switching)."""
    best = (np.inf, np.inf)
    for perm in itertools.permutations(range(2)):
        we = float(np.abs(model.weights_[list(perm)] - TRUE_W).max())
        te = max(float(np.abs(model.probs_[a][list(perm)] - t).max()) for a, t in enumerate(_true_probs()))
        if we + te < sum(best):
            best = (we, te)
    return best


def test_recovers_known_mixture_from_raw_records():
    schema = _schema()
    x = _draw(20_000, 1)
    m = LatentClassModel(2, rng=0).fit(x, schema)
    we, te = _match_error(m)
    # standard errors at n = 20,000: weights ~ sqrt(.24 / 20000) = 0.0035, class probabilities
    # ~ sqrt(.25 / 8000) = 0.006 (plus the mixing uncertainty); 5 standard errors: 0.02 / 0.04
    assert we < 0.02
    assert te < 0.04


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, eps", [("grr", 2.0), ("oue", 2.0)])
def test_recovers_known_mixture_through_the_channel(mechanism, eps):
    schema = _schema()
    x = _draw(60_000, 2)
    rep = RecordRandomizer(schema, mechanism, eps * len(SIZES)).randomize(x, 3)
    m = LatentClassModel(2, rng=0, max_iter=2000, tol=1e-9).fit(rep)
    we, te = _match_error(m)
    # through the channel the standard errors grow by the channel's variance factor, about
    # (e^eps + k - 2)/(e^eps - 1) ~ 1.8-2.3 for k-RR at eps = 2 per attribute (and similar for OUE),
    # and the mixture's further loss of information; bounds 0.06 / 0.10 are ~5 such standard errors
    assert we < 0.06
    assert te < 0.10
    # a raw-data channel misapplied would not fit: the model's 1-way tables match the truth
    true_marg = TRUE_W @ _true_probs()[0]
    assert np.abs(m.table([0]) - true_marg).max() < 0.03


def test_missing_values_are_skipped():
    schema = _schema()
    x = _draw(20_000, 4)
    gen = np.random.default_rng(5)
    xm = x.copy()
    xm[gen.random(x.shape) < 0.2] = MISSING  # missing completely at random
    m = LatentClassModel(2, rng=0).fit(xm, schema)
    we, te = _match_error(m)
    # 80 % of the data: standard errors grow by 1 / sqrt(0.8); same 5-sigma bounds, widened
    assert we < 0.03 and te < 0.05


def test_attribute_sampled_reports_are_missing_attributes():
    schema = _schema()
    x = _draw(30_000, 6)
    rr = RecordRandomizer(schema, "grr", 4.0 * len(SIZES))
    rep = rr.randomize(x, 7)
    gen = np.random.default_rng(8)
    asked = gen.integers(0, len(SIZES), size=x.shape[0])  # each client reports two attributes
    asked2 = (asked + 1) % len(SIZES)
    reports = []
    for j, r in enumerate(rep.reports):
        r = np.asarray(r).copy()
        r[(asked != j) & (asked2 != j)] = MISSING
        reports.append(r)
    sampled = RecordReports(schema, rep.mechanisms, tuple(reports))
    m = LatentClassModel(2, rng=0).fit(sampled)
    # the pair tables identify a 2-class mixture; the 1-way tables are estimated from a half each
    for j, t in enumerate(_true_probs()):
        assert np.abs(m.table([j]) - TRUE_W @ t).max() < 0.03


def test_objective_never_decreases():
    schema = _schema()
    x = _draw(3_000, 9)
    for data in (x, RecordRandomizer(schema, "grr", 1.0 * len(SIZES)).randomize(x, 10),
                 RecordRandomizer(schema, "oue", 1.0 * len(SIZES)).randomize(x, 11)):
        m = LatentClassModel(4, rng=1, n_starts=1, max_iter=200, tol=0.0).fit(data, schema)
        d = np.diff(m.trace_)
        # EM (and MAP-EM) never decreases its objective; allow float rounding of the sum
        assert (d >= -1e-9 * np.abs(m.trace_[1:])).all()
        assert m.trace_.size > 10


def test_default_fit_is_the_engines_gain_rule_on_the_plain_em_path(monkeypatch):
    """The default fit runs the one EM engine under its ("gain", tol) rule, and gives, bit for
    bit, the plain MAP-EM path written out here: the best start's _START_ITER steps, then steps
    until one gains less than tol per record; the trace holds the objective at the start and after
    every step, the last entry being the fit's objective (also when max_iter stops the fit)."""
    schema = _schema()
    x = _draw(3_000, 22)
    stops = []
    real = model_mod.em_engine.run

    def spy(*args, **kwargs):
        stops.append(kwargs["stop"])
        return real(*args, **kwargs)

    monkeypatch.setattr(model_mod.em_engine, "run", spy)
    n = float(x.shape[0])
    for max_iter in (200, 6):
        m = LatentClassModel(3, rng=2, n_starts=1, max_iter=max_iter).fit(x, schema)
        em = model_mod._EM(model_mod._prepare([x], schema), np.asarray(schema.sizes), 1.0, 1.0)
        theta = em.start(3, np.random.default_rng(2))
        mu = em.forward(theta)
        for _ in range(model_mod._START_ITER):  # tol = 0: only a loss would stop (none here)
            new = em.update(theta, mu)
            mu_new = em.forward(new)
            assert mu_new[0].objective >= mu[0].objective
            theta, mu = new, mu_new
        trace, steps, converged = [mu[0].objective], 0, False
        while steps < max_iter and not converged:
            new = em.update(theta, mu)
            mu_new = em.forward(new)
            converged = mu_new[0].objective - mu[0].objective < 1e-5 * n
            theta, mu, steps = new, mu_new, steps + 1
            trace.append(mu[0].objective)
        w, probs = em.unpack(theta)
        np.testing.assert_array_equal(m.weights_, w)
        for a, b in zip(m.probs_, probs):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(m.trace_, trace)
        assert m.fit_.objective == trace[-1] and m.fit_.loglik == mu[0].loglik
        assert (m.fit_.n_iter, m.fit_.converged) == (steps, converged)
        assert converged == (max_iter == 200)
    assert stops and all(s == ("gain", 0.0) or s == ("gain", 1e-5) for s in stops)


def test_tables_of_eleven_attributes_or_more_are_the_mixtures():
    """The table's 11th attribute took the einsum letter "k" of the classes: with K = 2 classes
    and binary attributes it silently gave w_h theta_h[h] on that axis instead of the sum over the
    classes, and with K = 3 it failed inside numpy."""
    sizes = (2,) * 12
    x = np.random.default_rng(5).integers(0, 2, (400, len(sizes)))
    for K in (2, 3):
        m = LatentClassModel(K, rng=0, n_starts=1, max_iter=20).fit(x, _schema(sizes))
        t = m.table(list(range(12)))
        want = np.zeros(sizes)
        for h in range(K):
            part = np.asarray(m.weights_[h])
            for a in range(12):
                part = np.multiply.outer(part, m.probs_[a][h])
            want += part
        np.testing.assert_allclose(t, want, rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(m.table(list(range(11))), want.sum(axis=11), rtol=1e-12,
                                   atol=1e-16)
    wide = LatentClassModel(1, rng=0, n_starts=1, max_iter=1).fit(
        np.random.default_rng(6).integers(0, 2, (50, 52)), _schema((2,) * 52))
    with pytest.raises(LatentError, match="52 attributes has one einsum axis each, at most 51"):
        wide.table(list(range(52)))


def test_tables_sampling_and_log_prob_agree():
    schema = _schema()
    m = LatentClassModel(3, rng=0).fit(_draw(5_000, 12), schema)
    full = m.table([0, 1, 2, 3])
    assert full.shape == SIZES
    assert abs(full.sum() - 1.0) < 1e-12
    grid = np.array(list(itertools.product(*[range(f) for f in SIZES])))
    assert np.allclose(np.exp(m.log_prob(grid)), full[tuple(grid.T)])
    assert np.allclose(m.table(["a1", "a0"]), full.sum(axis=(2, 3)).T)
    # a missing value marginalizes its attribute out
    rec = np.array([[1, MISSING, 0, MISSING]])
    assert np.isclose(m.prob(rec)[0], full.sum(axis=(1, 3))[1, 0])
    s = m.sample(200_000, 1)
    emp = np.bincount(s[:, 0] * 4 + s[:, 1], minlength=12).reshape(3, 4) / s.shape[0]
    # multinomial standard error <= sqrt(.25 / 2e5) = 0.0011; 5 sigma
    assert np.abs(emp - full.sum(axis=(2, 3))).max() < 0.0056


def test_choose_k_by_heldout_likelihood():
    schema = _schema()
    m = LatentClassModel("auto", rng=0).fit(_draw(20_000, 13), schema)
    ks = [k for k, _ in m.fit_.selection]
    assert ks[0] == 1 and m.fit_.n_classes in ks
    # the truth has two classes: one class is clearly worse on held-out data
    scores = dict(m.fit_.selection)
    assert scores[m.fit_.n_classes] > scores[1] + 0.05
    assert m.fit_.n_classes >= 2


def test_save_load_round_trip(tmp_path):
    schema = _schema()
    m = LatentClassModel(2, rng=0).fit(_draw(2_000, 14), schema)
    path = m.save(tmp_path / "world.json")
    d = json.loads(path.read_text())
    assert d["format"] == "reidrisk-latent-model" and d["version"] == 1
    back = LatentClassModel.load(path)
    x = _draw(50, 15)
    assert np.array_equal(back.log_prob(x), m.log_prob(x))
    assert back.fit_ == m.fit_
    d["version"] = 99
    (tmp_path / "bad.json").write_text(json.dumps(d))
    with pytest.raises(LatentError, match="version 99"):
        LatentClassModel.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(LatentError, match="not a latent class model"):
        LatentClassModel.load(tmp_path / "other.json")


def test_a_collect_model_files_latent_class_model_is_read(tmp_path):
    """``reidrisk collect fit --model latent`` writes a collect model file; its latent class model
    loads here as the model the collect model answers with (same tables, same probabilities), and
    a collect file of the copula model is refused by name."""
    from reidrisk.collect.model_io import MODEL_FORMAT
    from reidrisk.collect.pipeline import CollectPipeline

    schema = _schema()
    reports = RecordRandomizer(schema, "grr", 8.0).randomize(_draw(2_000, 17), np.random.default_rng(18))
    collected = CollectPipeline(model="latent").fit(reports)
    path = collected.save(tmp_path / "collect.json")
    assert json.loads(path.read_text())["format"] == MODEL_FORMAT
    back = LatentClassModel.load(path)
    assert back.to_dict() == collected.latent.to_dict()
    x = _draw(50, 19)
    assert np.array_equal(back.log_prob(x), collected.latent.log_prob(x))
    copula = CollectPipeline().fit(reports).save(tmp_path / "copula.json")
    with pytest.raises(LatentError, match="collect model file of the copula model"):
        LatentClassModel.load(copula)


def test_bad_input():
    schema = _schema()
    x = _draw(100, 16)
    with pytest.raises(LatentError, match=">= 1"):
        LatentClassModel(0)
    with pytest.raises(LatentError, match="n_classes"):
        LatentClassModel("many")
    with pytest.raises(LatentError, match=r"\(n, 4\)"):
        LatentClassModel(2).fit(x[:, :3], schema)
    bad = x.copy()
    bad[3, 1] = 7  # attribute a1 has 4 categories
    with pytest.raises(LatentError, match="a1"):
        LatentClassModel(2).fit(bad, schema)
    with pytest.raises(LatentError, match="schema"):
        LatentClassModel(2).fit(x)
    with pytest.raises(LatentError, match="not fitted"):
        LatentClassModel(2).log_prob(x)
    m = LatentClassModel(2, rng=0).fit(x, schema)
    with pytest.raises(LatentError, match="unknown attribute"):
        m.table(["nope"])
    with pytest.raises(LatentError, match=r"\(r, 4\)"):
        m.log_prob(x[:, :2])


@pytest.mark.parametrize("kwargs, name", [
    ({"tol": float("nan")}, "tol"), ({"tol": -1e-5}, "tol"), ({"tol": "1e-5"}, "tol"),
    ({"n_starts": 1.7}, "n_starts"), ({"n_starts": 0}, "n_starts"),
    ({"n_classes": True}, "n_classes"), ({"n_classes": [2, 0]}, "n_classes"),
    ({"n_classes": []}, "n_classes"), ({"n_classes": 2.5}, "n_classes"),
    ({"weight_prior": "x"}, "weight_prior"), ({"weight_prior": None}, "weight_prior"),
    ({"category_prior": float("inf")}, "category_prior"), ({"max_iter": 2.5}, "max_iter"),
    ({"accelerate": "no"}, "accelerate"),
])
def test_bad_settings_are_refused_naming_the_parameter_and_the_fix(kwargs, name):
    """Each used to be accepted (tol NaN or negative, n_starts 1.7 rounded down to 1, n_classes
    True read as 1, the string 'no' read as accelerate=True) or to fail with a raw numpy
    TypeError (weight_prior 'x'); now a LatentError names the parameter, the value and the fix,
    at construction and again at fit when the setting was changed since."""
    value = next(iter(kwargs.values()))
    with pytest.raises(LatentError, match=name) as err:
        LatentClassModel(**kwargs)
    msg = str(err.value)
    assert repr(value) in msg and ("default" in msg or "pass" in msg or "True or False" in msg)
    m = LatentClassModel(2)
    setattr(m, name, value)
    with pytest.raises(LatentError, match=name):
        m.fit(_draw(100, 16), _schema())


def test_a_progress_that_is_not_callable_is_refused_before_the_fit():
    """It used to fail with a bare TypeError at the first EM step, after the selection's work."""
    m = LatentClassModel(2, rng=0)
    with pytest.raises(LatentError, match="progress must be a function"):
        m.fit(_draw(200, 16), _schema(), progress="yes")
    assert not hasattr(m, "weights_")


def test_whole_number_settings_are_kept_exactly():
    m = LatentClassModel(np.int64(3), n_starts=2.0, max_iter=np.int64(50), tol=0)
    assert (m.n_classes, m.n_starts, m.max_iter, m.tol) == (3, 2, 50, 0.0)
    assert LatentClassModel(np.array([2, 4])).n_classes == [2, 4]


def test_pooled_raw_records_and_reports():
    schema = _schema()
    x = _draw(20_000, 17)
    rep = RecordRandomizer(schema, "grr", 2.0 * len(SIZES)).randomize(x[10_000:], 18)
    m = LatentClassModel(2, rng=0).fit([x[:10_000], rep], schema)
    we, te = _match_error(m)
    # half the records raw, half through k-RR at eps = 2: between the raw and the channel bounds
    assert we < 0.04 and te < 0.06
    with pytest.raises(LatentError, match="a3"):  # codes up to 4 in a 4-category attribute
        LatentClassModel(2).fit([x], _schema((3, 4, 2, 4)))
    with pytest.raises(LatentError, match="schema"):  # reports of another schema
        LatentClassModel(2).fit([x[:10], rep], _schema((3, 4, 2, 6)))


def test_loglik_of_the_grouped_sparse_e_step_equals_the_records_log_prob():
    # raw records (identity channel, likelihood rows are the probabilities themselves), repeated
    # patterns and missing values: the fit's log-likelihood, computed on distinct patterns through
    # the one-hot product, equals the sum of log p(x) of every record at the fitted parameters
    schema = _schema()
    x = _draw(4_000, 19)
    x[np.random.default_rng(20).random(x.shape) < 0.1] = MISSING
    m = LatentClassModel(3, rng=0).fit(x, schema)
    assert m.fit_.n_patterns < x.shape[0]
    assert np.isclose(m.fit_.loglik, m.log_prob(x).sum(), rtol=1e-12, atol=1e-8)


def test_accelerated_fit_goes_further_along_the_same_objective():
    schema = _schema()
    x = _draw(5_000, 21)
    plain = LatentClassModel(3, rng=1, n_starts=1).fit(x, schema)
    fast = LatentClassModel(3, rng=1, n_starts=1, accelerate=True).fit(x, schema)
    # the same start (same draws); SQUAREM with its monotone safeguard never ends below two plain
    # EM steps, and the "noise" rule stops nearer the fixed point than the per-record gain rule
    assert fast.fit_.objective >= plain.fit_.objective - 1e-9 * abs(plain.fit_.objective)
    d = np.diff(fast.trace_)
    assert (d >= -1e-9 * np.abs(fast.trace_[1:])).all()
    back = LatentClassModel.from_dict(json.loads(json.dumps(fast.to_dict())))
    assert back.accelerate is True


def test_progress_reports_each_candidate_k_each_step_and_the_end():
    """fit(progress=...) is called after each scored candidate K, after every EM step of the
    final fit (numbered 1..n_iter) and once with done=True; the fit itself is unchanged."""
    schema = _schema()
    x = _draw(3_000, 23)
    events = []
    m = LatentClassModel(rng=4).fit(x, schema, progress=lambda note, done: events.append((note, done)))
    same = LatentClassModel(rng=4).fit(x, schema)
    np.testing.assert_array_equal(m.weights_, same.weights_)
    scored = [n for n, d in events if n.startswith("choosing K")]
    assert [int(n.split("K = ")[1].split()[0]) for n in scored] == [k for k, _ in m.fit_.selection]
    steps = [n for n, _ in events if "EM step " in n]
    assert steps == [f"K = {m.n_classes_} on all 3,000 records: EM step {t}"
                     for t in range(1, m.fit_.n_iter + 1)]
    assert [d for _, d in events].count(True) == 1 and events[-1][1]
