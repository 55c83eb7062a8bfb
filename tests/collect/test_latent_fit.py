"""``CollectPipeline(model="latent")`` (reidrisk.collect.latent_fit): a latent class model fitted on
the reports, answering the collection model's queries, in the same model file."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import chi2

from reidrisk.cli import cli
from reidrisk.collect import CollectPipeline, CollectWarning, Protocol
from reidrisk.collect.model_io import (
    LATENT_MODEL_VERSION,
    MODEL_VERSION,
    CollectError,
    CollectModel,
    ModelFileError,
)
from reidrisk.collect.protocol import variance_factor
from reidrisk.collect.reports_io import CollectedReports, write_reports
from reidrisk.estimation.pairs import pair_counts
from reidrisk.mechanisms.grr import GRR
from reidrisk.mechanisms.oue import OUE
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

SIZES = (3, 4, 3, 2)
SCHEMA = Schema(tuple(Attribute(f"a{j}", tuple(f"v{x}" for x in range(f)))
                      for j, f in enumerate(SIZES)))
WEIGHTS = np.array([0.5, 0.3, 0.2])
N = 40_000
MISSING_RATE = 0.2
EPS_PER_ATTRIBUTE = 3.0
COLS = [0, 1, 2]


def _profiles() -> list[np.ndarray]:
    """Class h puts 0.8 on value h (mod f) of every attribute, the rest spread evenly."""
    out = []
    for f in SIZES:
        t = np.full((3, f), 0.2 / (f - 1))
        t[np.arange(3), np.arange(3) % f] = 0.8
        out.append(t)
    return out


PROFILES = _profiles()


def _population_table(cols) -> np.ndarray:
    letters = "abc"[:len(cols)]
    spec = ",".join(["k"] + [f"k{x}" for x in letters]) + "->" + letters
    return np.einsum(spec, WEIGHTS, *[PROFILES[j] for j in cols])


def _records(rng) -> np.ndarray:
    h = rng.choice(3, size=N, p=WEIGHTS)
    codes = np.empty((N, len(SIZES)), dtype=np.int64)
    for j, t in enumerate(PROFILES):
        u = rng.random(N)[:, None]
        codes[:, j] = (u > np.cumsum(t[h], axis=1)).sum(axis=1)
    codes[rng.random(codes.shape) < MISSING_RATE] = MISSING
    return codes


def _reports(kind: str, seed: int) -> RecordReports:
    rng = np.random.default_rng(seed)
    codes = _records(rng)
    cls = {"grr": GRR, "oue": OUE}[kind]
    mechs = tuple(cls(EPS_PER_ATTRIBUTE, f) for f in SIZES)
    return RecordReports(SCHEMA, mechs, tuple(m.perturb(codes[:, j], rng)
                                              for j, m in enumerate(mechs)))


@pytest.fixture(scope="module", params=["grr", "oue"])
def fitted(request):
    rr = _reports(request.param, seed=5)
    return rr, CollectPipeline(model="latent").fit(rr)


def test_recovers_a_latent_class_populations_three_way_table(fitted):
    rr, model = fitted
    truth = _population_table(COLS)
    # Tolerance. The inversion estimate of the 3-way table from the n_c reports having all three
    # attributes is the mean of a_0 (x) a_1 (x) a_2, a_j = (B_j - q_j) / (p_j - q_j); its expectation
    # is the population table T and E||a_j||^2 = 1 + S_j (``variance_factor``), the channels acting
    # independently, so E||T_inv - T||^2 = (prod_j (1 + S_j) - ||T||^2) / n_c (the pipeline's pair
    # formula, module doc "Shrinkage options", for three attributes; record sampling included).
    # The latent class model here is correctly specified (K = 3 lies within the candidates' reach)
    # and fitted by (MAP) maximum likelihood on every report, so its error is asymptotically no
    # larger than the unrestricted inversion estimate's. That error is asymptotically Gaussian,
    # ||e||^2 = sum_i lambda_i z_i^2 with sum_i lambda_i = V; for a threshold above 1.54 V such a
    # form exceeds it at most as often as V z^2 does (Szekely & Bakirov 2003, extremal
    # probabilities of Gaussian quadratic forms), so ||e|| > sqrt(V chi2_1(0.999)) has chance
    # below 0.1 %.
    n_c = int(rr.present()[:, COLS].all(axis=1).sum())
    var = (math.prod(1 + variance_factor(m) for m in np.asarray(rr.mechanisms)[COLS])
           - float(np.sum(truth ** 2))) / n_c
    tol = math.sqrt(var * chi2.isf(1e-3, 1))
    err = float(np.linalg.norm(model.table(COLS) - truth))
    assert err < tol, (err, tol)
    # the tolerance separates the truth from independence, so the check can fail
    indep = np.einsum("a,b,c->abc", *[truth.sum(axis=tuple(i for i in range(3) if i != a))
                                      for a in range(3)])
    assert np.linalg.norm(indep - truth) > 2 * tol
    assert model.kind == "latent" and model.copula is None
    assert model.latent is not None and model.latent.n_classes_ >= 2


def test_queries_and_records_come_from_the_mixture(fitted):
    rr, model = fitted
    t3 = model.table(["a0", "a1", "a2"])
    assert t3.shape == (3, 4, 3) and math.isclose(t3.sum(), 1.0)
    # the stored marginals and pair tables are the mixture's own
    np.testing.assert_allclose(model.marginals[1], t3.sum(axis=(0, 2)), atol=1e-12)
    np.testing.assert_allclose(model.pair_tables[(0, 2)], t3.sum(axis=1), atol=1e-12)
    assert model.report.n == N and model.report.n_present == tuple(rr.present().sum(axis=0))
    # synthetic records: their 2-way table within 4 sd of the model's (multinomial counts)
    codes = model.synthesize(200_000, rng=1)
    assert codes.shape == (200_000, 4) and codes.dtype == np.int32
    p = model.table([0, 3])
    emp = np.bincount(codes[:, 0] * 2 + codes[:, 3], minlength=6).reshape(3, 2) / codes.shape[0]
    assert np.all(np.abs(emp - p) < 4 * np.sqrt(p * (1 - p) / codes.shape[0]))
    sampled = model.table([0, 3], exact=False, n=1000, rng=2)
    assert sampled.shape == (3, 2) and math.isclose(sampled.sum(), 1.0)
    assert np.array_equal(model.synthesize(50, rng=3), model.synthesize(50, rng=3))
    with pytest.raises(CollectError, match="no copula correlation"):
        model.correlation  # noqa: B018


def test_save_load_round_trip(fitted, tmp_path):
    _, model = fitted
    path = model.save(tmp_path / "m.json")
    d = json.loads(path.read_text())
    assert d["model"] == "latent" and d["version"] == LATENT_MODEL_VERSION and d["copula"] is None
    back = CollectModel.load(path)
    assert back.kind == "latent"
    for cols in ([0], [1, 3], [0, 1, 2, 3]):
        assert np.array_equal(back.table(cols), model.table(cols))
    assert np.array_equal(back.synthesize(100, rng=7), model.synthesize(100, rng=7))
    assert back.report.settings["model"] == "latent"
    # a latent model needs its version; the kind must be one this reader knows
    bad = dict(d, version=MODEL_VERSION)
    with pytest.raises(ModelFileError, match="latent model in a version 1 file"):
        CollectModel.from_dict(bad)
    with pytest.raises(ModelFileError, match="kind 'forest'"):
        CollectModel.from_dict(dict(d, model="forest"))
    with pytest.raises(ModelFileError, match="lacks the entry 'latent'"):
        CollectModel.from_dict({k: v for k, v in d.items() if k != "latent"})


def test_copula_files_say_so_and_files_without_the_kind_are_copulas(tmp_path):
    rr = _reports("grr", seed=6).take(np.arange(3000))
    model = CollectPipeline().fit(rr)
    d = model.to_dict()
    assert d["model"] == "copula" and d["version"] == MODEL_VERSION
    del d["model"]  # written before the kind existed
    old = CollectModel.from_dict(d)
    assert old.kind == "copula" and old.latent is None
    assert np.array_equal(old.table([0, 1]), model.table([0, 1]))


def test_attribute_sampled_reports():
    rng = np.random.default_rng(9)
    codes = _records(rng)[:10_000]
    proto = Protocol(6.0, attributes_per_person=2)
    rr = proto.randomize(SCHEMA, codes, rng)
    model = CollectPipeline(model="latent").fit(CollectedReports(rr, proto))
    assert model.protocol == proto and model.kind == "latent"
    assert rr.present().sum(axis=1).max() <= 2
    # the pairs were never all reported together, yet the 3-way table is a distribution
    t = model.table(COLS)
    assert t.shape == (3, 4, 3) and math.isclose(t.sum(), 1.0)
    assert model.pair_n[(0, 1)] == int((rr.present()[:, 0] & rr.present()[:, 1]).sum())


def test_no_mixture_where_the_reports_show_no_dependence():
    # independent fair coins: the pipeline's tests find nothing, so the latent model falls back as
    # the copula does (latent_fit module doc, "Fallback") instead of fitting the LDP noise
    rng = np.random.default_rng(11)
    schema = Schema(tuple(Attribute(f"c{j}", ("h", "t")) for j in range(6)))
    proto = Protocol(2.0)
    rr = proto.randomize(schema, rng.integers(0, 2, (3000, 6)), rng)
    with pytest.warns(CollectWarning, match="no latent class model was fitted: fallback to"):
        model = CollectPipeline(model="latent").fit(CollectedReports(rr, proto))
    assert model.kind == "copula" and model.fallback in ("independence", "uniform")
    assert model.report.settings["model"] == "latent"
    forced = CollectPipeline(model="latent", fallback=False).fit(rr)
    assert forced.kind == "latent" and forced.fallback == "none"


def test_bad_input():
    with pytest.raises(CollectError, match="model must be one of"):
        CollectPipeline(model="forest")
    with pytest.raises(CollectError, match="shrink would be ignored"):
        CollectPipeline(model="latent", shrink="eb")
    with pytest.raises(CollectError, match="estimator, exact_em would be ignored"):
        CollectPipeline("norm_sub", exact_em="marginals", model="latent")
    rr = _reports("grr", seed=7).take(np.arange(500))
    pipe = CollectPipeline(model="latent")
    assert pipe.needs_reports and pipe.settings()["model"] == "latent"
    with pytest.raises(CollectError, match="fitted on the whole reports"):
        pipe.fit_counts(pair_counts(rr), SCHEMA, rr.mechanisms)
    empty = RecordReports(SCHEMA, rr.mechanisms,
                          rr.reports[:2] + (rr.mechanisms[2].perturb(np.full(500, MISSING), 1),)
                          + rr.reports[3:])
    with pytest.raises(CollectError, match="attribute 'a2' has no present reports"):
        pipe.fit(empty)
    with pytest.raises(CollectError, match="RecordReports or CollectedReports"):
        pipe.fit(np.zeros((5, 4), dtype=np.int64))


def test_cli_model_option(tmp_path):
    rr = _reports("grr", seed=8).take(np.arange(4000))
    write_reports(tmp_path / "r.csv", rr, Protocol(4 * EPS_PER_ATTRIBUTE, mechanism="grr"))

    def run(*args):
        return CliRunner().invoke(cli, ["collect", *map(str, args)])

    r = run("fit", tmp_path / "r.csv", "-o", tmp_path / "m.json", "--model", "latent")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "m.json").read_text())["model"] == "latent"
    r = run("table", tmp_path / "m.json", "-o", "-", "-c", "a0,a1,a2")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0] == "a0,a1,a2,probability" and len(lines) == 1 + 3 * 4 * 3
    probs = np.array([float(x.rsplit(",", 1)[1]) for x in lines[1:]])
    np.testing.assert_allclose(probs, CollectModel.load(tmp_path / "m.json").table([0, 1, 2]).ravel(),
                               rtol=1e-12)  # the exact mixture table, not counted records
    r = run("synth", tmp_path / "m.json", "-o", tmp_path / "s.csv", "-n", 50, "--seed", 1)
    assert r.exit_code == 0, r.output
    r = run("fit", tmp_path / "r.csv", "-o", tmp_path / "x.json", "--model", "forest")
    assert r.exit_code != 0 and "'forest' is not one of 'copula', 'latent'" in r.output
    r = run("fit", tmp_path / "r.csv", "-o", tmp_path / "x.json", "--model", "latent", "--shrink", "eb")
    assert r.exit_code != 0 and "--shrink would be ignored" in r.output
    assert not (tmp_path / "x.json").exists()
    parts = tmp_path / "parts"  # a directory: partitioned reports, fitted from their counts
    parts.mkdir()
    r = run("fit", parts, "-o", tmp_path / "x.json", "--model", "latent")
    assert r.exit_code != 0 and "partitioned reports are fitted from their counts" in r.output


def test_cli_table_of_a_latent_model_quotes_no_copula_cost(tmp_path, monkeypatch):
    """The per-cell cost of an exact table is the copula's (multivariate normal rectangles); a
    latent class model's table is a sum of K outer products. Its note and its refusal beyond
    EXACT_HARD_LIMIT must not quote the copula's duration, nor announce a long computation."""
    from reidrisk.collect import cli as collect_cli
    from reidrisk.collect import model_io

    rr = _reports("grr", seed=8).take(np.arange(4000))
    model = CollectPipeline(model="latent").fit(rr)
    assert model.kind == "latent"
    model.save(tmp_path / "m.json")
    # a copula would be slow: 36 cells x 3 attributes x 1 s (the estimate model_io computes for the
    # command and the service)
    monkeypatch.setattr(model_io, "EXACT_SECONDS_PER_CELL", 1.0)
    monkeypatch.setattr(collect_cli, "EXACT_TABLE_MAX_CELLS", 5)

    def table(*args):
        return CliRunner().invoke(cli, ["collect", "table", str(tmp_path / "m.json"), "-o", "-", "-c",
                                        "a0,a1,a2", *args])

    r = table()  # 36 cells, within the latent model's limit: exact, silently
    assert r.exit_code == 0 and r.stderr == "", r.output
    np.testing.assert_allclose(
        [float(x.rsplit(",", 1)[1]) for x in r.stdout.strip().splitlines()[1:]],
        model.table([0, 1, 2]).ravel(), rtol=1e-12)
    monkeypatch.setattr(collect_cli, "EXACT_HARD_LIMIT", 10)
    r = table()  # beyond it: counted, and the note says why without a duration
    assert r.exit_code == 0, r.output
    assert "36 cells; more than the 10 computed exactly" in r.stderr, r.stderr
    assert "would take" not in r.stderr and "--exact" not in r.stderr
    r = table("--exact")
    assert r.exit_code == 2 and "more than the 10 that can be computed exactly;" in r.output
    assert "would take" not in r.output


def test_the_latent_method_averages_its_fits():
    """The model is the equal-weight average of N_FITS fits with seeds 0..N_FITS-1 (latent_fit
    module doc): its classes are theirs, its tables their mean, and its log-likelihood on the
    reports, from the E-step, is the sum of the logs of report_likelihoods, which scores every
    person through the model's own tables instead."""
    from reidrisk.collect.latent_fit import LATENT_SEED, N_FITS, report_likelihoods
    from reidrisk.latent import LatentClassModel

    rr = _reports("grr", seed=3).take(np.arange(3000))
    model = CollectPipeline(model="latent", fallback=False).fit(rr)
    fits = [LatentClassModel("auto", rng=LATENT_SEED + b).fit(rr) for b in range(N_FITS)]
    assert N_FITS == 5
    assert model.latent.n_classes_ == sum(m.n_classes_ for m in fits)
    np.testing.assert_allclose(model.table(COLS), np.mean([m.table(COLS) for m in fits], axis=0),
                               atol=1e-12)
    lik = report_likelihoods(model, rr)
    assert math.isclose(float(np.log(lik).sum()), model.latent.fit_.loglik, rel_tol=1e-9)
    assert f"the average of {N_FITS} fits" in model.report.notes[-1]
    # and the file keeps the averaged model
    again = CollectModel.from_dict(json.loads(json.dumps(model.to_dict())))
    np.testing.assert_allclose(again.table(COLS), model.table(COLS), atol=1e-12)


def test_report_likelihoods_by_hand():
    """One person with reports of a0 and a1, one with a0 only, one with none: the likelihood is
    sum_x M[r0, x0] M[r1, x1] T[x0, x1] with each channel row scaled by its maximum."""
    from reidrisk.collect.latent_fit import report_likelihoods

    rr = _reports("grr", seed=4).take(np.arange(2000))
    model = CollectPipeline(model="latent", fallback=False).fit(rr)
    m0, m1 = rr.mechanisms[0], rr.mechanisms[1]
    reps = (np.array([1, 2, MISSING]), np.array([3, MISSING, MISSING]),
            np.full(3, MISSING), np.full(3, MISSING))
    three = RecordReports(SCHEMA, rr.mechanisms, reps)

    def rows(m, r):
        p = np.exp(m.log_prob(np.array([r]))).reshape(-1)
        return p / p.max()

    t01, t0 = model.table([0, 1]), model.table([0])
    want = [rows(m0, 1) @ t01 @ rows(m1, 3), rows(m0, 2) @ t0, 1.0]
    np.testing.assert_allclose(report_likelihoods(model, three), want, rtol=1e-12)


def test_blend_weight_maximizes_the_held_out_likelihood():
    # persons (l_latent, l_copula) = (3, 1) and (1, 2): log(1 + 2 lam) + log(2 - lam) is largest
    # at lam = 3/4
    from reidrisk.collect.latent_fit import blend_weight

    lam, scores = blend_weight(np.array([1.0, 2.0]), np.array([3.0, 1.0]),
                               np.array([0.0, 0.25, 0.5, 0.75, 1.0]))
    assert lam == 0.75
    np.testing.assert_allclose(scores[3], (math.log(2.5) + math.log(1.25)) / 2)
    assert blend_weight(np.array([2.0]), np.array([1.0]))[0] == 0.0  # the copula alone


def test_average_fits_blend_weight_and_report_likelihoods_check_their_input():
    """Each names the bad value: before, n_fits=0 failed inside numpy (np.concatenate), n_fits=2.5
    fitted 2 models, blend_weight spread one person's likelihood over all the others, and reports
    of another schema failed inside np.einsum."""
    import warnings

    from reidrisk.collect.latent_fit import average_fits, blend_weight, report_likelihoods

    rr = _reports("grr", seed=7).take(np.arange(300))
    for bad in (0, 2.5, True, "5"):
        with pytest.raises(CollectError, match="n_fits must be an integer >= 1"):
            average_fits(rr, bad)
    with pytest.raises(CollectError, match="seed must be an integer >= 0"):
        average_fits(rr, 1, seed=-1)
    with pytest.raises(CollectError, match="same held-out people"):
        blend_weight(np.ones(3), np.ones(1))
    with pytest.raises(CollectError, match="finite and >= 0"):
        blend_weight(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(CollectError, match=r"weights in \[0, 1\]"):
        blend_weight(np.ones(2), np.ones(2), np.array([0.5, 1.5]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollectWarning)
        model = CollectPipeline(fallback=False).fit(rr)
    sizes = (3, 4, 3, 3)
    other = Schema(tuple(Attribute(f"a{j}", tuple(f"v{x}" for x in range(f)))
                         for j, f in enumerate(sizes)))
    mechs = tuple(GRR(EPS_PER_ATTRIBUTE, f) for f in sizes)
    rr2 = RecordReports(other, mechs, tuple(m.perturb(np.zeros(50, dtype=np.int64), 0) for m in mechs))
    with pytest.raises(CollectError, match=r"domain sizes \[3, 4, 3, 3\]\) differ from the model's"):
        report_likelihoods(model, rr2)


def test_a_model_file_written_before_the_average_of_fits_still_loads():
    """A latent model file written by one fit (f7f3c79: `collect fit --model latent`, 1,500
    people, K = 2 chosen among 1, 2, 4, 8) loads as it was: its tables are its own mixture's,
    sum_h w_h prod_a theta_ha, and its fit keeps the K selection (averaged models have none)."""
    from pathlib import Path

    path = Path(__file__).parent / "data" / "latent_model_one_fit_f7f3c79.json"
    raw = json.loads(path.read_text())["latent"]
    w = np.array(raw["weights"])
    probs = [np.array(t) for t in raw["probs"]]
    model = CollectModel.load(path)
    assert model.kind == "latent" and model.latent.n_classes_ == 2
    assert [k for k, _ in model.latent.fit_.selection] == [1, 2, 4, 8]
    want = np.einsum("h,ha,hb,hc->abc", w, *probs)
    np.testing.assert_allclose(model.table([0, 1, 2]), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.table([2, 0]), want.sum(axis=1).T, rtol=1e-12, atol=1e-15)
