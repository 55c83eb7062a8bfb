"""Plots: valid PNGs of the declared size, for any number of mechanisms, methods and attributes."""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

from reidrisk.report.plots import DPI, plot_distributions, plot_error_curves
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


def test_error_curves_tolerate_zero_errors_and_one_method():
    table = _table(methods=("em",))
    table.loc[0, "js"] = 0.0  # an exact estimate cannot be drawn on a log axis; it is skipped
    _png_size(plot_error_curves(table, "tv"))


@pytest.mark.parametrize("n_mech", [1, 5])
def test_distributions_png_grows_with_the_grid(n_mech):
    attrs = [Attribute("a" * 30, tuple(f"category-{i}" for i in range(16))), Attribute("b", ("x", "y"))]
    truth = [np.full(16, 1 / 16), np.array([0.3, 0.7])]
    est = {f"m{i}": {"em": [t * 0.9 + 0.1 / t.size for t in truth], "norm_sub": truth}
           for i in range(n_mech)}
    width, height = _png_size(plot_distributions(attrs, truth, est, title="x"))
    assert width == round(max(2.6 * n_mech, 6.0) * DPI)
    assert height == round((2.7 * 2 + 0.6) * DPI)
