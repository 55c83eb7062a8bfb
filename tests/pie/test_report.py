"""The pie section of the demo report."""

import math

import pytest

from reidrisk.pie import bounds as b
from reidrisk.pie.report import calibrations, pie_section, plot_bounds
from reidrisk.report import Section, write_report


@pytest.mark.slow
def test_section_numbers_come_from_the_bounds(tmp_path):
    n, k = 20_000, 46_080
    s = pie_section(n, k)
    assert isinstance(s, Section) and s.title.startswith("Re-identification")
    assert f"n = {n:,}" in s.body and f"|X| = {k:,}" in s.body
    rr = b.calibrate(0.9, n, k, "rr")
    ldp = b.calibrate(0.9, n, k, "ldp")
    assert f">{rr.epsilon:.3g}<" in s.body and f">{ldp.epsilon:.3g}<" in s.body
    # the alpha table at eps = 1: RR's alpha and the error it guarantees
    a = b.alpha_rr(1.0, n, k)
    assert f"{a:.3g} ({b.bayes_error_bound(a, n):.3f})" in s.body
    (fig,) = s.figures
    assert fig.filename == "pie_bounds.png" and fig.png.startswith(b"\x89PNG")
    index = write_report([s], tmp_path / "r")
    assert "pie_bounds.png" in index.read_text() and (tmp_path / "r" / "pie_bounds.png").exists()


def test_small_n_says_what_is_needed():
    s = pie_section(500, 50)
    assert "not achievable" in s.body and "needs n &gt;= 1,024" in s.body
    cals = calibrations(500, 50)
    assert [c is None for t, m, c in cals] == [True] * 3 + [False] * 3
    assert all(math.isfinite(c.epsilon) for t, m, c in cals if c is not None)


def test_plot_accepts_explicit_epsilons():
    assert plot_bounds(3000, 1024, [0.5, 1, 2, 4]).startswith(b"\x89PNG")


def test_bad_input():
    with pytest.raises(b.BoundError, match=r"number of users n.*1"):
        pie_section(1, 10)
    with pytest.raises(b.BoundError, match=r"epsilons.*-1"):
        plot_bounds(100, 10, [-1.0])


@pytest.mark.slow
def test_demo_report_has_the_section(tmp_path):
    from reidrisk.demo import run_demo

    r = run_demo(out=tmp_path / "demo", n=300, epsilons=(1.0,), mechanisms=["grr"],
                 progress=False)
    page = r.report.read_text()
    assert "Re-identification risk bounds (PIE)" in page and "n = 300" in page
    assert (tmp_path / "demo" / "pie_bounds.png").exists()
