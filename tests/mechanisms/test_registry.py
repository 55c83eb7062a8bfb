"""reidrisk.mechanisms.registry: ``MECHANISMS`` and ``make_mechanism`` (re-exported by the package)."""

import pytest

import reidrisk.mechanisms
from reidrisk.mechanisms import GRR, MechanismError, Subset
from reidrisk.mechanisms.registry import MECHANISMS, make_mechanism


def test_make_mechanism_by_name_with_options():
    m = make_mechanism("GRR", 1.0, 3)
    assert type(m) is GRR and (m.epsilon, m.k) == (1.0, 3)
    s = make_mechanism("subset", 1.0, 6, h=2)
    assert type(s) is Subset and s.h == 2


def test_unknown_name_lists_the_registry():
    with pytest.raises(MechanismError, match="unknown mechanism 'nope'; choose one of") as info:
        make_mechanism("nope", 1.0, 3)
    for name in MECHANISMS:
        assert repr(name) in str(info.value)


def test_the_package_and_the_base_keep_the_names():
    from reidrisk.mechanisms import base, randomness

    assert reidrisk.mechanisms.make_mechanism is make_mechanism
    assert reidrisk.mechanisms.MECHANISMS is MECHANISMS
    assert base.MechanismError is randomness.MechanismError is MechanismError
