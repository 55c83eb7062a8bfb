"""Plots: the figures draw the numbers they are given (inspected on the matplotlib Figure), and the
PNGs have the declared size for any number of mechanisms, methods and attributes."""

from __future__ import annotations

import os
import struct
import warnings

import numpy as np
import pandas as pd
import pytest

from reidrisk.report import plots
from reidrisk.report.plots import (
    DPI,
    MissingGlyphWarning,
    distributions_figure,
    error_curves_figure,
    figure_png,
    plot_distributions,
    plot_error_curves,
)
from reidrisk.schema import Attribute


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def _table(mechs=("grr", "oue"), methods=("em", "norm_sub"), eps=(1.0, 2.0, 4.0)) -> pd.DataFrame:
    rows = []
    for i, m in enumerate(mechs):
        for e in eps:
            for method in methods:
                rows.append(dict(mechanism=m, epsilon=e, target="marginal", method=method,
                                 js=0.1 / e / (i + 1), tv=0.2 / e))
            rows.append(dict(mechanism=m, epsilon=e, target="pair", method="em", js=0.3 / e, tv=0.4 / e))
    return pd.DataFrame(rows)


def test_error_curves_png_has_the_figure_size():
    png = plot_error_curves(_table(), "js", reference={"marginal": 0.05, "pair": 0.2}, title="t")
    width, height = _png_size(png)
    # two panels of 5.2 x 4.2 inches at DPI
    assert (width, height) == (round(2 * 5.2 * DPI), round(4.2 * DPI))


def _data_lines(ax):
    """The curves of a panel: lines with one point per budget (the reference line has two)."""
    return [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]


def test_error_curves_draw_every_value_and_skip_zero_errors():
    table = _table(methods=("em",))
    table.loc[0, "js"] = 0.0  # an exact estimate cannot be drawn on a log axis; it is skipped
    fig = error_curves_figure(table, "js", reference={"marginal": 0.05, "pair": 0.2})
    marginal, pair = fig.axes[:2]
    for ax, target in ((marginal, "marginal"), (pair, "pair")):
        lines = _data_lines(ax)
        assert len(lines) == 2  # one per mechanism (one method)
        for line, mech in zip(lines, ("grr", "oue")):
            sub = table[(table.target == target) & (table.mechanism == mech)].sort_values("epsilon")
            np.testing.assert_allclose(line.get_xdata(), sub["epsilon"])
            y = sub["js"].to_numpy(float)
            np.testing.assert_allclose(line.get_ydata(), np.where(y > 0, y, np.nan))
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    assert np.isnan(_data_lines(marginal)[0].get_ydata()[0])
    # the uniform-guess line sits at the reference value of each panel, with its label
    refs = [ln for ln in marginal.get_lines() if len(ln.get_xdata()) == 2]
    assert len(refs) == 1 and np.allclose(refs[0].get_ydata(), 0.05)
    assert [t.get_text() for t in marginal.texts] == ["uniform guess"]
    refs = [ln for ln in pair.get_lines() if len(ln.get_xdata()) == 2]
    assert len(refs) == 1 and np.allclose(refs[0].get_ydata(), 0.2)


def test_error_curves_without_reference_have_no_uniform_line():
    fig = error_curves_figure(_table(), "tv")
    for ax in fig.axes[:2]:
        assert all(len(ln.get_xdata()) > 2 for ln in ax.get_lines()) and not ax.texts
    # two methods: solid EM and dashed norm-sub lines per mechanism in the marginal panel
    styles = sorted(ln.get_linestyle() for ln in _data_lines(fig.axes[0]))
    assert styles == ["-", "-", "--", "--"]


def test_distributions_draw_the_truth_as_bars_and_estimates_as_markers():
    attr = Attribute("colour", ("red", "green", "blue"))
    truth = [np.array([0.5, 0.3, 0.2])]
    est = {"grr": {"em": [np.array([0.45, 0.35, 0.2])], "norm_sub": [np.array([0.4, 0.4, 0.2])]}}
    fig = distributions_figure([attr], truth, est)
    ax = fig.axes[0]
    np.testing.assert_allclose([p.get_height() for p in ax.patches], truth[0])
    markers = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None"]
    np.testing.assert_allclose(markers[0].get_ydata(), est["grr"]["em"][0])
    np.testing.assert_allclose(markers[1].get_ydata(), est["grr"]["norm_sub"][0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["red", "green", "blue"]
    assert ax.get_title() == "grr"


@pytest.mark.slow
@pytest.mark.parametrize("n_mech", [1, 5])
def test_distributions_png_grows_with_the_grid(n_mech):
    attrs = [Attribute("a" * 30, tuple(f"category-{i}" for i in range(16))), Attribute("b", ("x", "y"))]
    truth = [np.full(16, 1 / 16), np.array([0.3, 0.7])]
    est = {f"m{i}": {"em": [t * 0.9 + 0.1 / t.size for t in truth], "norm_sub": truth}
           for i in range(n_mech)}
    width, height = _png_size(plot_distributions(attrs, truth, est, title="x"))
    assert width == round(max(2.6 * n_mech, 6.0) * DPI)
    assert height == round((2.7 * 2 + 0.6) * DPI)


CITIES = Attribute("city", ("東京", "Москва", "Zürich", "القاهرة"))


def _cities_png() -> bytes:
    p = np.full(4, 0.25)
    return figure_png(distributions_figure([CITIES], [p], {"grr": {"em": [p]}}))


def test_non_latin_labels_are_drawn_without_missing_glyphs():
    family = plots.font_family()
    if family == ("DejaVu Sans",):
        why = ("no font for CJK is installed (e.g. apt install fonts-noto-cjk or "
               "fonts-wqy-microhei); DejaVu Sans alone has no glyphs for 東京")
        if os.environ.get("CI", "").lower() == "true":  # .ci/run installs fonts-wqy-microhei
            pytest.fail(why)
        pytest.skip(why)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns once per glyph it cannot draw
        _cities_png()


def test_missing_glyphs_give_one_warning_that_names_the_fix(monkeypatch):
    monkeypatch.setattr(plots, "font_family", lambda: ("DejaVu Sans",))
    with pytest.warns(MissingGlyphWarning, match="2 character.*fonts-noto-cjk") as caught:
        _cities_png()
    assert len([w for w in caught if issubclass(w.category, MissingGlyphWarning)]) == 1
