"""The demo report's uniqueness section: what it measures at the demo's own size, and what it says."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.data.synthetic import make_population
from reidrisk.demo import DEFAULT_DEPENDENCE, DEFAULT_SIZES, UNIQUENESS_POPULATION, UNIQUENESS_RATE
from reidrisk.report import render_html
from reidrisk.uniqueness.report import run_uniqueness_demo, uniqueness_section


@pytest.fixture(scope="module")
def demo():
    pop = make_population(UNIQUENESS_POPULATION, DEFAULT_SIZES, dependence=DEFAULT_DEPENDENCE, rng=0)
    return run_uniqueness_demo(pop.schema, pop.codes, rate=UNIQUENESS_RATE, rng=0)


def test_truth_is_the_count_in_the_population(demo):
    assert demo.N == UNIQUENESS_POPULATION and demo.truth.min() >= 1
    # a record's true count is the number of population records equal to it; here checked against
    # the unique share the section states (drawn without replacement from the population)
    assert 0.05 < np.mean(demo.truth == 1) < 0.6


def test_at_the_demos_size_the_section_agrees_with_the_results_page(demo):
    # docs/results/uniqueness.md (synthetic copula population, 10 seeds): reidrisk is at least as
    # balanced as the paper's method and better calibrated, and every method beats the majority rule
    # in balanced accuracy; these are the section's claims at the demo's size and seed
    m = demo.metrics
    for t in (1.0, 10.0):
        assert m[("reidrisk", t)].balanced_accuracy >= m[("paper", t)].balanced_accuracy
        assert m[("reidrisk", t)].accuracy > m[("majority rule", t)].accuracy
    assert demo.reliability.max_gap(50) < demo.paper_reliability.max_gap(50)


def test_section_explains_where_reidrisk_trails(demo):
    body = uniqueness_section(demo).body
    m = demo.metrics
    for t in (1.0, 10.0):
        if m[("reidrisk", t)].accuracy < m[("paper", t)].accuracy:
            assert "less accurate than the paper's method" in body
            assert f"{m[('reidrisk', t)].accuracy:.3f} against {m[('paper', t)].accuracy:.3f}" in body
    assert f"{demo.paper_reliability.max_gap(50):.3f} for the paper's method" in body
    assert "majority rule) is right" in body
    render_html([uniqueness_section(demo)], "t")


def test_section_names_the_world_model_and_measures_the_other_one(demo):
    # the demo's database is raw, so world="auto" takes the Gaussian copula (uniqueness.model);
    # the latent class world is scored on the same records as a row of its own
    assert demo.world == "copula"
    body = uniqueness_section(demo).body
    assert "the Gaussian copula world, chosen by" in body
    assert "&amp;lt;" not in body  # nothing escaped twice
    m = demo.metrics
    for t in (1.0, 10.0):
        row = m[("reidrisk, latent world", t)]
        assert f"<td>reidrisk, latent world</td><td class=\"num\">{t:g}</td>" in body
        assert f"{row.balanced_accuracy:.3f}" in body
    gap = demo.other_reliability.max_gap(50)
    assert f"({gap:.3f} for reidrisk with the latent class world)" in body
