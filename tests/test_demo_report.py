"""The demo's report sections (reidrisk.demo_report): their order, and that each shows the run's
own numbers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from reidrisk.demo import run_demo
from reidrisk.demo_report import _shown_attributes, demo_sections
from reidrisk.report import Section
from reidrisk.schema import Attribute, Schema

SCHEMA = Schema((Attribute("colour", ("red", "green", "blue")),
                 Attribute("size", ("S", "M", "L", "XL", "XXL")),
                 Attribute("flag", ("yes", "no"))))


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], n),
                          "size": rng.choice(["S", "M", "L", "XL", "XXL"], n),
                          "flag": rng.choice(["yes", "no"], n)})
    return run_demo(frame, SCHEMA, out=None, epsilons=[1, 4], mechanisms=["grr", "oue"],
                    progress=False)


def test_sections_in_report_order_with_the_other_capabilities_before_the_parameters(result):
    extra = Section("Elsewhere", "<p>x</p>")
    titles = [s.title for s in demo_sections(dataclasses.replace(result, extra_sections=(extra,)))]
    assert titles == ["Overview", "Data", "Estimated distributions", "Error against budget",
                      "Numbers", "Elsewhere", "Run parameters"]


def test_numbers_and_data_are_the_runs_own(result):
    sections = {s.title: s for s in demo_sections(result)}
    numbers = sections["Numbers"].body
    for mech in result.mechanisms:
        for eps in result.epsilons:
            assert f"{result.error(mech, eps, 'marginal', 'em'):.4f}" in numbers
            assert f"{result.error(mech, eps, 'pair', 'em', 'tv'):.4f}" in numbers
    assert f"{result.reference['pair']:.4f}" in numbers
    data = sections["Data"].body
    assert all(name in data for name in SCHEMA.names)
    assert len(sections["Error against budget"].figures) == 2
    assert sections["Estimated distributions"].figures[0].filename == "distributions.png"


def test_the_demo_module_gives_the_same_sections(result):
    from reidrisk.demo import demo_sections as from_demo

    assert [s.title for s in from_demo(result)] == [s.title for s in demo_sections(result)]


def test_shown_attributes_are_the_largest_domain_and_a_middle_one():
    assert _shown_attributes(SCHEMA) == [1, 0]
    assert _shown_attributes(Schema((Attribute("a", ("x", "y")),))) == [0]
