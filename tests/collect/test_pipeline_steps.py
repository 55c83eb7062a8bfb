"""collect's pipeline steps pinned on a 4-row table worked out by hand (no randomness).

The fixture: two binary attributes A and B, each reported through GRR with k = 2 and
epsilon = ln 3, so p = e^eps / (e^eps + k - 1) = 3 / 4 and q = 1 / (e^eps + k - 1) = 1 / 4.
The reports (not the true values; written down, not drawn):

    row   A   B
     0    0   0
     1    0   1
     2    1   1
     3    0   -      (B missing)

Counts (step 1, ``pair_counts``): A has n_A = 4 present reports with c_A = (3, 1); B has n_B = 3
with c_B = (1, 2); rows 0-2 have both, n_AB = 3, and their pair counts are

    W = [[1, 1],      (A=0,B=0): row 0; (A=0,B=1): row 1
         [0, 1]]      (A=1,B=0): none;  (A=1,B=1): row 2

Marginals (step 2): the unbiased GRR estimate of a count is (c - n q) / (p - q), with p - q = 1/2:
    A: (3 - 4/4) / (1/2) = 4, (1 - 1) / (1/2) = 0         -> pi_A = (4, 0) / 4 = (1, 0)
    B: (1 - 3/4) / (1/2) = 1/2, (2 - 3/4) / (1/2) = 5/2   -> pi_B = (1/2, 5/2) / 3 = (1/6, 5/6)
Both lie on the simplex, so the projection ("norm_sub") leaves them as they are.

Pair table (step 3): each attribute's channel is M = (p - q) I + q 11^T = [[3/4, 1/4], [1/4, 3/4]],
whose inverse is M^-1 = [[3/2, -1/2], [-1/2, 3/2]] (check: M M^-1 = I). The unbiased table of
counts is Z = M^-1 W M^-T:
    M^-1 W       = [[3/2, 1], [-1/2, 1]]
    (M^-1 W) M^-1 = [[3/2*3/2 - 1/2, -3/4 + 3/2], [-3/4 - 1/2, 1/4 + 3/2]]
                  = [[7/4, 3/4], [-5/4, 7/4]]          (sums to n_AB = 3)
so the inversion is Z / 3 = [[7/12, 1/4], [-5/12, 7/12]]. Its projection onto {Z >= 0, sum 3}
(norm_sub): drop the negative cell, subtract the excess (7/4 + 3/4 + 7/4 - 3) / 3 = 5/12 from
the three positive cells: (4/3, 1/3, 0, 4/3), all still positive, so the table is
[[4/9, 1/9], [0, 4/9]].

The "raw" estimator (DF+Copula: report frequencies as they are) gives (3/4, 1/4), (1/3, 2/3) and
W / 3 = [[1/3, 1/3], [0, 1/3]].
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from reidrisk.collect import CollectPipeline
from reidrisk.estimation import estimate_marginal, estimate_pairs, pair_counts
from reidrisk.mechanisms import GRR
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Attribute, Schema

EPS = math.log(3.0)
SCHEMA = Schema((Attribute("A", ("a0", "a1")), Attribute("B", ("b0", "b1"))))
A = np.array([0, 0, 1, 0], dtype=np.int32)
B = np.array([0, 1, 1, MISSING], dtype=np.int32)

PI_A = np.array([1.0, 0.0])
PI_B = np.array([1 / 6, 5 / 6])
INVERTED = np.array([[7 / 12, 1 / 4], [-5 / 12, 7 / 12]])
PROJECTED = np.array([[4 / 9, 1 / 9], [0.0, 4 / 9]])


@pytest.fixture()
def reports() -> RecordReports:
    mechs = (GRR(EPS, 2), GRR(EPS, 2))
    return RecordReports(SCHEMA, mechs, (A, B))


def test_the_channel_is_the_one_worked_out(reports):
    for m in reports.mechanisms:
        assert m.p_support == pytest.approx(3 / 4, abs=1e-15)
        assert m.q_support == pytest.approx(1 / 4, abs=1e-15)


def test_step1_pair_counts(reports):
    c = pair_counts(reports)
    np.testing.assert_array_equal(c.n_pair, [[4, 3], [3, 3]])
    np.testing.assert_array_equal(c.counts(0), [3, 1])
    np.testing.assert_array_equal(c.counts(1), [1, 2])
    np.testing.assert_array_equal(c.block(0, 1), [[1, 1], [0, 1]])
    assert c.n_present(0) == 4 and c.n_present(0, 1) == 3


def test_step2_marginals_by_inversion(reports):
    for j, want in enumerate((PI_A, PI_B)):
        est = estimate_marginal(reports.mechanisms[j], reports.reports[j], "inversion",
                                shrink=False)
        np.testing.assert_allclose(est.probs, want, rtol=0, atol=1e-12)
    margs, iters = CollectPipeline(estimator="norm_sub").estimate_marginals(reports)
    np.testing.assert_allclose(margs[0], PI_A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(margs[1], PI_B, rtol=0, atol=1e-12)
    assert iters == [0, 0]  # closed forms


def test_step3_pair_table_inverted_and_projected(reports):
    inv = estimate_pairs(reports, "inversion", shrink=False)
    np.testing.assert_allclose(inv.tables[(0, 1)], INVERTED, rtol=0, atol=1e-12)
    assert inv.n_present[(0, 1)] == 3
    proj = estimate_pairs(reports, "norm_sub", shrink=False)
    np.testing.assert_allclose(proj.tables[(0, 1)], PROJECTED, rtol=0, atol=1e-12)


def test_pipeline_estimate_gives_the_hand_tables(reports):
    est = CollectPipeline(estimator="norm_sub").estimate(reports)
    np.testing.assert_allclose(est.marginals[0], PI_A, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.marginals[1], PI_B, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.tables[(0, 1)], PROJECTED, rtol=0, atol=1e-12)
    assert est.n_pair == {(0, 1): 3}


def test_pipeline_raw_estimator_gives_the_report_frequencies(reports):
    est = CollectPipeline(estimator="raw").estimate(reports)
    np.testing.assert_allclose(est.marginals[0], [3 / 4, 1 / 4], rtol=0, atol=1e-15)
    np.testing.assert_allclose(est.marginals[1], [1 / 3, 2 / 3], rtol=0, atol=1e-15)
    np.testing.assert_allclose(est.tables[(0, 1)], [[1 / 3, 1 / 3], [0, 1 / 3]], rtol=0,
                               atol=1e-15)
