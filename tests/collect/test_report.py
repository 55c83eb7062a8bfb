"""The collection report section: method comparison, JS divergence, figures and the Section."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from reidrisk.collect.protocol import choose_attributes_per_person
from reidrisk.collect.report import (
    DEFAULT_COLUMNS_ADULT,
    collect_section,
    compare_methods,
    default_columns,
    js_bits,
    method_specs,
    planned_attributes_per_person,
    planned_k,
    plot_histograms,
)
from reidrisk.data.synthetic import make_population
from reidrisk.data.tables import contingency
from reidrisk.report import render_html
from reidrisk.schema import Attribute, Schema, SchemaError

FAST = ["reidrisk", "s2mb", "indep", "uniform", "true_pairs_copula"]


@pytest.fixture(scope="module")
def population():
    return make_population(2_000, [2, 3, 4, 3], dependence=0.6, rng=3)


@pytest.fixture(scope="module")
def comparison(population):
    return compare_methods(population.schema, population.codes, cols=[0, 1, 2], epsilon=8.0,
                           missing_rate=0.3, methods=FAST, reps=2, rng=5)


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def test_js_bits_limits():
    p = np.array([0.2, 0.3, 0.5])
    assert js_bits(p, p) == 0.0
    assert js_bits([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    # tables are compared cell by cell whatever their shape
    t = np.arange(1, 7, dtype=float).reshape(2, 3)
    assert js_bits(t, t[::-1]) == pytest.approx(js_bits(t.ravel(), t[::-1].ravel()))


def test_js_bits_ignores_subnormal_cells():
    # a subnormal probability facing a zero cell must not make the divergence infinite (-> 1 bit)
    p = np.array([0.5, 0.5, 0.0])
    q = np.array([0.5, 0.5, 5e-324])
    assert js_bits(p, q) == pytest.approx(0.0, abs=1e-12)


def test_planned_k_is_the_chosen_attributes_per_person_at_the_planning_rate():
    sizes = [6, 8, 5, 9, 9, 7, 9, 6, 5, 2, 3, 3, 7, 8, 2]
    k = planned_attributes_per_person(sizes, 5.0, 32_561)
    assert k == choose_attributes_per_person(
        sizes, 5.0, n=32_561, missing_rate=0.5).attributes_per_person
    assert 2 <= k <= len(sizes)
    assert planned_attributes_per_person([4], 1.0, 100) == 1
    with pytest.warns(DeprecationWarning, match="'planned_k' is deprecated"):
        assert planned_k(sizes, 5.0, 32_561) == k


def test_method_specs_cover_the_paper_and_the_floors():
    keys = [s.key for s in method_specs()]
    for k in ("reidrisk", "paper", "orappor", "s2mb", "mdn", "pde_ete", "df_copula", "indep",
              "uniform", "true_pairs_copula"):
        assert k in keys
    assert [s.key for s in method_specs(["uniform", "s2mb"])] == ["uniform", "s2mb"]
    with pytest.raises(ValueError, match="unknown method"):
        method_specs(["nope"])
    sampling = {s.key for s in method_specs() if s.sampling}
    assert sampling == {"reidrisk", "latent"}  # the same clients, two server models


def test_default_columns():
    names = ["age", *DEFAULT_COLUMNS_ADULT, "sex"]
    schema = Schema(tuple(Attribute(n, ("a", "b", "c")) for n in names))
    assert default_columns(schema) == [1, 2, 3]
    other = Schema(tuple(Attribute(f"A{i}", tuple("abcdefg"[:f])) for i, f in enumerate([5, 2, 7, 3, 2])))
    assert default_columns(other) == [1, 3, 4]


def test_comparison_scores_every_method(population, comparison):
    truth = contingency(population.codes, population.schema.sizes, [0, 1, 2])
    np.testing.assert_allclose(comparison.truth, truth)
    assert [m.key for m in comparison.methods] == FAST
    for m in comparison.methods:
        assert m.table.shape == truth.shape
        assert m.table.sum() == pytest.approx(1.0)
        assert len(m.js) == 2 and len(m.seconds) == 2
        assert all(0.0 <= v <= 1.0 for v in m.js)
    by = {m.key: m for m in comparison.methods}
    # the uniform table is deterministic: its divergence is the same in every repetition
    expected = js_bits(truth, np.full(truth.shape, 1.0 / truth.size))
    assert by["uniform"].js == pytest.approx((expected, expected))
    # the copula on the true pairs reads the data, not the reports: identical in both repetitions
    assert by["true_pairs_copula"].js[0] == pytest.approx(by["true_pairs_copula"].js[1])
    assert 2 <= comparison.attributes_per_person <= 4
    with pytest.warns(DeprecationWarning, match="attribute 'k' is deprecated"):
        assert comparison.k == comparison.attributes_per_person
    assert set(comparison.js()) == {m.label for m in comparison.methods}


def test_compare_methods_rejects_bad_arguments(population):
    with pytest.raises(SchemaError):
        compare_methods(population.schema, population.codes, cols=[0, 0], methods=["uniform"])
    with pytest.raises(ValueError, match="reps"):
        compare_methods(population.schema, population.codes, methods=["uniform"], reps=0)
    with pytest.raises(ValueError, match="missing_rate"):
        compare_methods(population.schema, population.codes, methods=["uniform"], missing_rate=1.0)


@pytest.mark.slow
def test_section_has_table_and_figures(comparison):
    section = collect_section(comparison)
    assert len(section.figures) == 2
    for fig in section.figures:
        w, h = _png_size(fig.png)
        assert w > 100 and h > 100
    for m in comparison.methods:
        assert m.label in section.body
    page = render_html([section], "t")
    assert "collect_histograms.png" in page and "collect_js.png" in page
    assert _png_size(plot_histograms(comparison, max_cells=5))[0] > 100


def test_histograms_name_the_cells_they_show(comparison):
    from reidrisk.collect.report import HISTOGRAM_MAX_TICKS, histograms_figure

    fig = histograms_figure(comparison)
    truth = comparison.truth.ravel()
    order = np.argsort(-truth, kind="stable")
    cats = [comparison.schema[j].categories for j in comparison.cols]
    expected = [" / ".join(cats[a][i] for a, i in enumerate(np.unravel_index(k, comparison.truth.shape)))
                for k in order]
    step = max(1, -(-truth.size // HISTOGRAM_MAX_TICKS))
    visible = [ax for ax in fig.axes if ax.get_visible()]
    labelled = [ax for ax in visible if any(t.get_text() for t in ax.get_xticklabels())]
    ncol = 3 if len(visible) > 4 else 2
    assert len(labelled) == min(ncol, len(visible))  # the bottom panel of each column
    for ax in labelled:
        assert [t.get_text() for t in ax.get_xticklabels()] == expected[::step]
        assert ax.get_xlabel() == f"cell ({' / '.join(comparison.col_names)})"
    # the true panel's bars are the true cell probabilities, most probable first
    heights = [p.get_height() for p in visible[0].patches]
    np.testing.assert_allclose(heights, truth[order])


@pytest.mark.slow
def test_sd_column_only_with_several_runs(population, comparison):
    one = compare_methods(population.schema, population.codes, cols=[0, 1, 2], epsilon=8.0,
                          missing_rate=0.3, methods=["uniform"], reps=1, rng=5)
    assert "sd over runs" not in collect_section(one).body
    assert "sd over runs" in collect_section(comparison).body


def test_run_method_former_keyword_k_warns_and_agrees():
    from reidrisk.collect.baselines import Indep
    from reidrisk.collect.report import MethodSpec, run_method

    pop = make_population(200, [3, 3, 3], rng=1)
    spec = MethodSpec("indep", "Indep", lambda: Indep("norm_sub"), sampling=True)
    new, _ = run_method(spec, pop.schema, pop.codes, pop.codes, 4.0, 5, attributes_per_person=1)
    with pytest.warns(DeprecationWarning, match="'k' is deprecated; use 'attributes_per_person'"):
        old, _ = run_method(spec, pop.schema, pop.codes, pop.codes, 4.0, 5, k=1)
    np.testing.assert_array_equal(old.table([0, 1]), new.table([0, 1]))
