"""reidrisk.pie.checks: every formula's arguments are refused with the parameter, the value and the
fix; scalars in give floats out."""

import numpy as np
import pytest

from reidrisk.mechanisms.base import MechanismError
from reidrisk.pie import bounds
from reidrisk.pie.checks import (
    BoundError,
    as_output,
    check_count,
    check_counts,
    check_epsilon,
    check_information,
    check_mechanism,
    check_probability,
    shown,
)


def test_bound_error_is_a_mechanism_error_and_keeps_its_home():
    assert issubclass(BoundError, MechanismError) and issubclass(BoundError, ValueError)
    assert bounds.BoundError is BoundError


@pytest.mark.parametrize("call, match", [
    (lambda: check_epsilon([1.0, -2.0]), r"epsilon must be finite and > 0, got -2\.0"),
    (lambda: check_epsilon([]), "epsilon is empty"),
    (lambda: check_epsilon("x"), "must be a number"),
    (lambda: check_count(True, "n"), "n must be an integer >= 2, got True"),
    (lambda: check_count(2.5, "n"), "n must be an integer >= 2, got 2.5"),
    (lambda: check_count(0, "t", low=1, fix="; pass 1"), "t must be an integer >= 1, got 0; pass 1"),
    (lambda: check_counts([4, 1.5], "g"), "g must be an integer >= 2, got 1.5"),
    (lambda: check_counts([], "g"), "got an empty array"),
    (lambda: check_probability(1.0, "level", open_high=True), r"in \[0, 1\), got 1\.0"),
    (lambda: check_probability(0.0, "lambda", open_low=True), r"in \(0, 1\], got 0\.0"),
    (lambda: check_information(-1.0), "information must be a number of bits >= 0"),
    (lambda: check_mechanism("oue"), r"mechanism must be one of \['ldp', 'rr', 'glh'\]"),
])
def test_bad_arguments_name_the_parameter_and_the_value(call, match):
    with pytest.raises(BoundError, match=match):
        call()


def test_good_arguments_pass_through():
    assert check_count(np.int64(7), "n") == 7 and check_count(8.0, "n") == 8
    np.testing.assert_array_equal(check_counts([2, 3.0], "g"), [2.0, 3.0])
    assert check_information(np.inf) == np.inf
    assert check_mechanism("GLH") == "glh"


def test_scalars_in_give_floats_out():
    assert isinstance(as_output(np.float64(0.5), 1.0, 2), float)
    out = as_output(np.array([0.5, 0.25]), [1.0, 2.0])
    assert isinstance(out, np.ndarray) and out.shape == (2,)
    assert shown(np.array([3.0])) == "3.0" and shown(np.arange(10)).startswith("array(")
