"""The linkage section of the demo report."""

import numpy as np
import pytest

from reidrisk.data.microdata import make_microdata
from reidrisk.linkage import ATTACKS
from reidrisk.linkage.report import linkage_section, run_linkage_demo


def test_section_on_a_small_table():
    m = make_microdata(300, rng=1)
    demo = run_linkage_demo(m.data, qi=list(m.qi[:6]), sa=list(m.sa[:4]), rng=0)
    rates = demo.rates()
    assert list(rates.index) == list(ATTACKS) and rates.shape[1] == 8
    assert np.all((rates.to_numpy() >= 0) & (rates.to_numpy() <= 1))
    # the untouched original: EUC1 finds every row (continuous SA, distinct per QI block)
    assert rates.loc["EUC1", "original"] == 1.0
    # shuffling keeps every row: EUC1 gives up on none and still links all (it never reads order)
    assert rates.loc["EUC1", "shuffled"] == 1.0
    # k-anonymity: S1 >= 5
    assert demo.cards["5-anonymity"].security.S1_min_class >= 5
    section = linkage_section(demo)
    assert section.title.startswith("Linkage")
    assert section.figures[0].png.startswith(b"\x89PNG")
    assert "U1 meanMAE" in section.body and "strongest attack" in section.body


@pytest.mark.slow
def test_default_section_runs_on_adult_or_the_synthetic_table():
    demo = run_linkage_demo(rng=0)
    assert demo.n == 1500 and len(demo.cards) == 8
    assert "Adult" in demo.source or "synthetic" in demo.source
