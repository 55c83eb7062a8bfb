"""The measured next steps: a k-anonymous candidate release and the LDP budget."""

from __future__ import annotations

import math

import pytest

from reidrisk.assess.next_steps import candidate_release, ldp_option
from reidrisk.assess.table import prepare_table
from reidrisk.pie import calibrate


@pytest.fixture
def prepared(table):
    return prepare_table(table, ["sex", "zip", "marital-status", "age"], ["income"],
                         bins={"age": 10})


def test_candidate_release_reaches_k_and_is_attacked(prepared):
    cand = candidate_release(prepared, 5)
    assert cand.k_reached >= 5
    assert cand.rows_suppressed <= max(4, int(0.02 * prepared.n))
    assert 0 < cand.cells_generalized < 1
    assert set(cand.attack_rates) == {"E1", "E2", "EUC1", "EUC2", "assign"}
    for rate, low, high in cand.attack_rates.values():
        assert 0 <= low <= rate <= high <= 1


def test_without_a_numeric_sa_only_e1_runs(table):
    prepared = prepare_table(table, ["sex", "zip", "marital-status"], ["diagnosis"])
    cand = candidate_release(prepared, 3)
    assert set(cand.attack_rates) == {"E1"} and "numeric sensitive" in cand.note


def test_ldp_budget_is_pie_calibrate(prepared):
    opt = ldp_option(prepared, 4000, 0.8, model=False)
    domain = math.prod(a.size for a in prepared.schema)
    assert opt.domain == domain
    assert opt.epsilon == calibrate(0.8, prepared.n, domain, "ldp").epsilon
    assert opt.certified_by == "ldp"
    assert math.isnan(opt.mean_p_unique)


@pytest.mark.slow
def test_ldp_uniqueness_left(prepared):
    opt = ldp_option(prepared, 4000, 0.8, model=True)
    assert 0 <= opt.mean_p_unique <= 1 and 0 <= opt.share_likely_unique <= 1


def test_an_unreachable_error_names_the_option(prepared):
    from reidrisk.assess.classes import AssessError

    with pytest.raises(AssessError, match="lower --ldp-error"):
        ldp_option(prepared, 4000, 0.99, model=False)
