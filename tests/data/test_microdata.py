import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reidrisk.data.microdata import QI_COLUMNS, SA_COLUMNS, make_microdata

N = 20_000


@pytest.fixture(scope="module")
def micro():
    return make_microdata(N, rng=7)


def test_shape_and_types_are_the_papers(micro):
    # paper 001, Section 2.1: attributes 1-13 discrete (QI), 14-25 continuous (SA)
    assert len(micro.qi) == 13 and len(micro.sa) == 12
    assert list(micro.data.columns) == [*QI_COLUMNS, *SA_COLUMNS]
    assert micro.n == N and micro.data.index.equals(pd.RangeIndex(N))
    assert all(micro.data[c].dtype == np.int64 for c in micro.qi)
    assert all(micro.data[c].dtype == np.float64 for c in micro.sa)
    assert micro.income.shape == (N,)


def test_default_size_is_the_papers():
    assert make_microdata(rng=0).n == 8_333


def test_same_seed_same_table_other_seed_other_table():
    a, b, c = make_microdata(500, rng=3), make_microdata(500, rng=3), make_microdata(500, rng=4)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)


def test_household_composition_is_consistent(micro):
    d = micro.data
    assert d["household_size"].between(1, 8).all()
    assert (d["n_children"] + d["n_elderly"] <= d["household_size"]).all()
    assert (d["n_earners"] <= d["household_size"] - d["n_children"]).all()
    assert ((d["head_occupation"] == 0) == (d["n_earners"] == 0)).all()
    assert ((d["industry"] == 0) == (d["head_occupation"] == 0)).all()
    # income deciles from ranks: every decile holds n/10 rows (+-1 from the integer division)
    counts = d["income_decile"].value_counts()
    assert set(counts.index) == set(range(1, 11)) and (counts - N / 10).abs().max() <= 1


def test_amounts_nonnegative_whole_yen_and_right_skewed(micro):
    sa = micro.data[list(micro.sa)].to_numpy()
    assert (sa >= 0).all() and np.array_equal(sa, np.rint(sa))
    zero_cols = {c for c in micro.sa if (micro.data[c] == 0).any()}
    assert zero_cols == {"education", "housing"}
    assert (sa[:, [micro.sa.index(c) for c in micro.sa if c not in zero_cols]] > 0).all()
    # lognormal amounts: sample skewness > 0 in every column; the standard error of the skewness
    # is about sqrt(6 / N) = 0.017, so 0.5 is far above what a symmetric column could show
    assert (stats.skew(sa, axis=0) > 0.5).all()


def test_spending_follows_income_and_the_amounts_are_correlated(micro):
    d = micro.data
    total = d[list(micro.sa)].sum(axis=1)
    # Spearman's rho under independence has standard error 1/sqrt(N - 1) = 0.007: 0.3 is > 40 SE
    assert stats.spearmanr(micro.income, total).statistic > 0.3
    always = [c for c in micro.sa if c not in ("education", "housing")]  # no structural zeros
    rho = d[always].corr(method="spearman").to_numpy()
    off = rho[~np.eye(len(always), dtype=bool)]
    assert (off > 0.05).all()  # the shared total makes every such pair positive (SE 0.007)
    assert (off < 0.95).all()  # ... but the per-amount noise keeps them apart


def test_engel_law_food_share_falls_with_income(micro):
    d = micro.data
    share = d["food"] / d[list(micro.sa)].sum(axis=1)
    by_decile = share.groupby(d["income_decile"]).mean()
    # 2,000 households per decile, share sd about 0.1: the mean's SE is about 0.002, and the
    # model's share falls by a factor of about exp(0.45 * 1.5) across the deciles
    assert by_decile.iloc[0] > by_decile.iloc[-1] + 0.1
    assert stats.spearmanr(by_decile.index, by_decile.to_numpy()).statistic < -0.9


def test_education_needs_children_and_rent_needs_renters(micro):
    d = micro.data
    kids = d["n_children"] > 0
    assert (d.loc[~kids, "education"] == 0).all()
    # with children: a month without education spending with probability 0.3; the share's
    # binomial SE over the ~6,700 such households is about 0.006, so +-0.03 is five SE
    assert abs((d.loc[kids, "education"] == 0).mean() - 0.3) < 0.03
    # paper 001, Section 4.4: 76 of 100 households have 0 in attribute 21 (the 8th SA column)
    assert micro.sa[7] == "education"
    assert 0.70 < (d["education"] == 0).mean() < 0.82
    owned = d["tenure"] == 0
    assert (d.loc[~owned, "housing"] > 0).all()
    assert abs((d.loc[owned, "housing"] == 0).mean() - 0.6) < 0.03
    assert d.loc[~owned, "housing"].median() > 3 * d.loc[owned, "housing"].median()


def test_qi_make_most_households_unique():
    # paper 001, Table 13: S2 (mean class size) is 1.031 on its 100-row sample
    d = make_microdata(100, rng=11).data
    assert d[list(QI_COLUMNS)].value_counts().mean() < 1.1


@pytest.mark.parametrize("n", [0, -5, 2.5, True, "10"])
def test_bad_size_is_refused(n):
    with pytest.raises(ValueError, match="positive integer"):
        make_microdata(n)
