"""reidrisk.mechanisms.base: the shared checks and the default channel of a Mechanism."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from reidrisk.mechanisms import GRR, MECHANISMS, MechanismError, make_mechanism
from reidrisk.mechanisms.base import as_generator, check_codes, check_epsilon, check_integer
from reidrisk.schema import MISSING


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "x"])
def test_check_epsilon_refuses_non_budgets(bad):
    with pytest.raises(MechanismError, match="epsilon must be"):
        check_epsilon(bad)


def test_check_integer_bounds():
    assert check_integer(3.0, "n", 1, 3) == 3
    for bad in (True, 2.5, 0, 4):
        with pytest.raises(MechanismError, match=r"n must be an integer in 1\.\.3"):
            check_integer(bad, "n", 1, 3)


def test_check_codes_names_the_bad_value():
    np.testing.assert_array_equal(check_codes([0, MISSING, 2], 3), [0, MISSING, 2])
    with pytest.raises(MechanismError):
        check_codes([0, 3], 3)


def test_as_generator_seed_is_reproducible_and_generator_passes_through():
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    assert as_generator(7).random() == np.random.default_rng(7).random()


def test_default_channel_support_matrix_and_loss():
    # GRR at epsilon = ln 3, k = 2: Q[y, x] = 3/4 on the diagonal, 1/4 off it
    m = GRR(math.log(3.0), 2)
    np.testing.assert_allclose(m.channel(), [[0.75, 0.25], [0.25, 0.75]], atol=1e-15)
    np.testing.assert_allclose(m.support_matrix(), [[0.75, 0.25], [0.25, 0.75]], atol=1e-15)
    assert m.privacy_loss == pytest.approx(math.log(3.0), abs=1e-12)
    assert m.params() == {"mechanism": "grr", "epsilon": math.log(3.0), "k": 2}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_report_layout_says_how_a_report_names_its_support(name):
    """``report_layout`` is what code that writes support rows straight from the reports relies
    on: the rows it implies must be the mechanism's own ``support``, entry for entry (missing
    reports: empty rows)."""
    rng = np.random.default_rng(11)
    k = 7
    mech = make_mechanism(name, 1.0, k)
    codes = rng.integers(0, k, 300).astype(np.int32)
    codes[::5] = MISSING
    reports = mech.perturb(codes, rng)
    s = mech.support(reports)
    support = np.asarray(s.toarray() if sp.issparse(s) else s) != 0
    layout = mech.report_layout
    assert layout in {"code", "codes", "bits", None}
    if layout is None:
        return
    if layout == "bits":
        implied = np.asarray(reports.unpack() if hasattr(reports, "unpack") else reports) == 1
        implied &= ~np.asarray(mech.is_missing(reports))[:, None]
    else:
        rows = np.asarray(reports).reshape(len(codes), -1)
        present = rows[:, 0] != MISSING
        implied = np.zeros((len(codes), k), dtype=bool)
        r, c = np.nonzero(present[:, None] & np.ones(rows.shape, dtype=bool))
        implied[r, rows[r, c]] = True
        assert (rows.shape[1] == 1) == (layout == "code")
    np.testing.assert_array_equal(implied, support)


def test_report_layout_of_the_registered_mechanisms():
    """GRR, subset and the unary encodings are written from their reports; local hashing only
    through its support."""
    assert {n: c.report_layout for n, c in MECHANISMS.items()} == {
        "grr": "code", "subset": "codes", "oue": "bits", "rappor": "bits", "glh": None,
        "olh": None}
