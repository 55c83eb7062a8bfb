"""Missing values pass through every mechanism; bad parameters and bad reports are refused with a
message that names the value."""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_checks import NAMES, dense

from reidrisk.mechanisms import (
    GLH,
    MECHANISMS,
    MISSING_BITS,
    OLH,
    MechanismError,
    RecordRandomizer,
    Subset,
    make_mechanism,
)
from reidrisk.mechanisms.subset import sample_subsets
from reidrisk.schema import MISSING, Attribute, Schema

VALUES = np.array([0, MISSING, 4, 2, MISSING, 1, 3, MISSING])


def test_registry_lists_every_mechanism():
    assert set(MECHANISMS) == set(NAMES)
    with pytest.raises(MechanismError, match="'nope'"):
        make_mechanism("nope", 1.0, 3)


@pytest.mark.parametrize("name", NAMES)
def test_missing_passes_through_and_supports_nothing(name):
    mech = make_mechanism(name, 1.0, 5)
    reports = mech.perturb(VALUES, 0)
    missing = VALUES == MISSING
    np.testing.assert_array_equal(mech.is_missing(reports), missing)
    s = dense(mech.support(reports))
    assert s.shape == (VALUES.size, 5)
    assert (s[missing] == 0).all() and (s[~missing].sum(axis=1) > 0).any()
    lp = mech.log_prob(reports)
    assert (lp[missing] == 0).all() and (lp[~missing] < 0).all()
    w, n_present = mech.support_counts(reports)
    assert n_present == (~missing).sum() and w.shape == (5,)
    mech.validate_reports(reports)


@pytest.mark.parametrize("name", NAMES)
def test_all_missing_and_empty_inputs(name):
    mech = make_mechanism(name, 1.0, 4)
    r = mech.perturb(np.full(3, MISSING), 0)
    assert mech.is_missing(r).all()
    assert mech.support_counts(r)[1] == 0
    empty = mech.perturb(np.zeros(0, dtype=np.int64), 0)
    assert len(empty) == 0 and dense(mech.support(empty)).shape == (0, 4)


def test_missing_representations():
    assert (Subset(1.0, 5).perturb(np.array([MISSING]), 0) == MISSING).all()
    assert (make_mechanism("oue", 1.0, 5).perturb(np.array([MISSING]), 0) == MISSING_BITS).all()
    assert (make_mechanism("olh", 1.0, 5).perturb(np.array([MISSING]), 0) == MISSING).all()


@pytest.mark.parametrize("name", NAMES)
def test_record_randomizer_keeps_missingness(name):
    schema = Schema((
        Attribute("a", ("x", "y")),
        Attribute("b", tuple("abcde")),
        Attribute("c", tuple("abcdefghi")),
    ))
    rng = np.random.default_rng(1)
    codes = np.column_stack([rng.integers(0, f, 500) for f in (2, 5, 9)]).astype(np.int32)
    codes[rng.random(codes.shape) < 0.3] = MISSING
    rr = RecordRandomizer(schema, name, 3.0).randomize(codes, rng)
    np.testing.assert_array_equal(rr.present(), codes != MISSING)
    assert rr.validate() is rr
    assert np.isclose(rr.epsilon, 3.0)
    for j, s in enumerate(rr.supports()):
        s = dense(s)
        assert s.shape == (500, schema[j].size)
        assert (s[codes[:, j] == MISSING] == 0).all()
    assert all(m.name == name for m in rr.mechanisms)


# ---- bad parameters ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), "abc", None])
def test_bad_epsilon(name, eps):
    with pytest.raises(MechanismError, match="epsilon"):
        make_mechanism(name, eps, 5)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("k", [1, 0, -3, 2.5, True, "abc", None, float("inf"), float("nan")])
def test_bad_domain_size(name, k):
    with pytest.raises(MechanismError, match="k must be an integer >= 2"):
        make_mechanism(name, 1.0, k)


@pytest.mark.parametrize("name", NAMES)
def test_values_outside_domain(name):
    mech = make_mechanism(name, 1.0, 5)
    with pytest.raises(MechanismError, match=r"values\[1\] = 5 is outside the domain 0..4"):
        mech.perturb(np.array([0, 5]), 0)
    with pytest.raises(MechanismError, match=r"values\[0\] = -2"):
        mech.perturb(np.array([-2, 1]), 0)
    with pytest.raises(MechanismError, match="integer codes"):
        mech.perturb(np.array([0.0, 1.0]), 0)
    with pytest.raises(MechanismError, match="1-D"):
        mech.perturb(np.zeros((2, 2), dtype=int), 0)


@pytest.mark.parametrize(
    "kwargs,match",
    [({"h": 0}, "h must be an integer in 1..4, got 0"), ({"h": 5}, "h must be an integer in 1..4"),
     ({"h": 1.5}, "h must be"), ({"h": "two"}, "h must be .* got 'two'")],
)
def test_bad_subset_size(kwargs, match):
    with pytest.raises(MechanismError, match=match):
        make_mechanism("subset", 1.0, 5, **kwargs)


def test_explicit_subset_size_is_used():
    mech = make_mechanism("subset", 1.0, 5, h=3)
    assert mech.h == 3 and mech.perturb(np.array([1]), 0).shape == (1, 3)


def test_unknown_subset_sampler():
    with pytest.raises(MechanismError, match="'fast'"):
        sample_subsets(np.array([0]), np.array([True]), 5, 2, np.random.default_rng(0), "fast")


@pytest.mark.parametrize(
    "kwargs,match",
    [({"g": 1}, "g must be an integer >= 2, got 1"), ({"g": 2.5}, "g must be"),
     ({"g": "x"}, "g must be"),
     ({"prime": 8}, "prime must be a prime number, got 8"),
     ({"prime": 3}, "prime must lie in k=5"),
     ({"prime": 2_147_483_659}, "prime must lie in"),
     ({"tables": np.zeros((2, 4), dtype=int)}, r"shape \(m, k=5\)"),
     ({"g": 3, "tables": np.full((2, 5), 3)}, "0..g-1 = 0..2"),
     ({"prime": 7, "tables": np.zeros((1, 5), dtype=int)}, "not both")],
)
def test_bad_glh_parameters(kwargs, match):
    with pytest.raises(MechanismError, match=match):
        GLH(1.0, 5, **kwargs)


def test_bad_olh_parameters():
    with pytest.raises(MechanismError, match="OLH fixes g"):
        OLH(1.0, 5, g=3)
    with pytest.raises(MechanismError, match="m must be an integer >= 1"):
        GLH.with_random_tables(1.0, 5, 0)
    with pytest.raises(MechanismError, match="epsilon"):
        GLH.with_random_tables("x", 5, 2)
    with pytest.raises(MechanismError, match="beyond 2\\^31 - 1"):
        OLH(30.0, 5)


# ---- bad reports ---------------------------------------------------------------------------------
def _good(name, k=5):
    mech = make_mechanism(name, 1.0, k)
    return mech, mech.perturb(np.array([0, 1, 2, MISSING]), 0)


@pytest.mark.parametrize("name", NAMES)
def test_reports_of_wrong_shape(name):
    mech, rep = _good(name)
    wrong = rep[:, :-1] if rep.ndim == 2 else rep[:, None].repeat(2, axis=1)
    with pytest.raises(MechanismError, match="shape"):
        mech.validate_reports(wrong)
    with pytest.raises(MechanismError, match="shape"):
        mech.support(wrong)


def test_grr_report_out_of_domain():
    mech, rep = _good("grr")
    rep[1] = 7
    with pytest.raises(MechanismError, match=r"report\[1\] = 7"):
        mech.validate_reports(rep)


def test_subset_reports_out_of_domain():
    mech, rep = _good("subset")
    rep[2, 1] = 9
    with pytest.raises(MechanismError, match="row 2 holds 9, outside the domain 0..4"):
        mech.validate_reports(rep)


def test_subset_reports_with_duplicates():
    mech, rep = _good("subset")
    rep[1] = [3, 3]
    with pytest.raises(MechanismError, match=r"row 1 = \[3, 3\] repeats a value"):
        mech.validate_reports(rep)


def test_subset_reports_partly_missing():
    mech, rep = _good("subset")
    rep[0, 0] = MISSING
    with pytest.raises(MechanismError, match="row 0 .* mixes -1"):
        mech.validate_reports(rep)


def test_subset_reports_must_be_integers():
    mech, rep = _good("subset")
    with pytest.raises(MechanismError, match="integer codes"):
        mech.validate_reports(rep.astype(float))


def test_subset_unsorted_client_rows_are_accepted():
    mech, rep = _good("subset")
    flipped = rep[:, ::-1].copy()
    mech.validate_reports(flipped)
    np.testing.assert_array_equal(dense(mech.support(flipped)), dense(mech.support(rep)))


@pytest.mark.parametrize("name", ["oue", "rappor"])
def test_unary_reports_bad_bit(name):
    mech, rep = _good(name)
    rep[2, 3] = 2
    with pytest.raises(MechanismError, match="row 2, bit 3 is 2"):
        mech.validate_reports(rep)


@pytest.mark.parametrize("name", ["oue", "rappor"])
def test_unary_reports_partly_missing(name):
    mech, rep = _good(name)
    rep[1, 0] = MISSING_BITS
    with pytest.raises(MechanismError, match="row 1 .*mixes 255"):
        mech.validate_reports(rep)


def test_unary_reports_bool_dtype_accepted():
    mech, rep = _good("oue")
    bits = rep[:3] == 1
    assert mech.validate_reports(bits).dtype == np.uint8


@pytest.mark.parametrize("name", ["glh", "olh"])
def test_hash_reports_bad_parameters(name):
    mech, rep = _good(name)
    rep[1, 0] = 0  # a = 0 is not in the family
    match = r"row 1 has hash parameters \[0, .*a in 1..2147483646"
    with pytest.raises(MechanismError, match=match):
        mech.validate_reports(rep)


@pytest.mark.parametrize("name", ["glh", "olh"])
def test_hash_reports_bad_value(name):
    mech, rep = _good(name)
    rep[0, 2] = mech.g
    with pytest.raises(MechanismError, match=f"row 0 has hash value y={mech.g} outside"):
        mech.validate_reports(rep)


def test_hash_reports_partly_missing():
    mech, rep = _good("olh")
    rep[2, 0] = MISSING
    with pytest.raises(MechanismError, match="row 2 .* mixes -1"):
        mech.validate_reports(rep)


def test_table_reports_bad_index():
    mech = GLH.with_random_tables(1.0, 5, 3, g=3, rng=0)
    rep = mech.perturb(np.array([0, 1]), 0)
    assert rep.shape == (2, 2)
    rep[1, 0] = 3
    with pytest.raises(MechanismError, match="table index in 0..2"):
        mech.validate_reports(rep)


def test_record_reports_validate_names_attribute():
    schema = Schema((Attribute("a", ("x", "y", "z")), Attribute("b", ("u", "v", "w", "t"))))
    codes = np.array([[0, 1], [2, 3], [1, MISSING]], dtype=np.int32)
    rr = RecordRandomizer(schema, "subset", 1.0).randomize(codes, 0)
    bad = rr.reports[1].copy()
    bad[0] = 9
    broken = type(rr)(rr.schema, rr.mechanisms, (rr.reports[0], bad))
    with pytest.raises(MechanismError, match="attribute 'b': subset report row 0 holds 9"):
        broken.validate()
