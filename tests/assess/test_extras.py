"""The extras ``reidrisk assess`` runs by default."""

from __future__ import annotations

from reidrisk.assess.extras import default_extras


def test_default_extras_are_callables():
    for extra in default_extras(2).values():
        assert callable(extra)
