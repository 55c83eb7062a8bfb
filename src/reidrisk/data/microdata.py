"""A synthetic household expenditure survey with the shape of paper 001's data.

Paper 001 (Ito and Kikuchi, PWSCUP 2015, Section 2.1) evaluates its linkage attacks on the
National Statistics Center's synthesized micro dataset: 8,333 households of the 2004 Japanese
family income and expenditure survey, 13 discrete attributes (quasi-identifiers, QI: family size,
age, ...) and 12 continuous ones (sensitive attributes, SA: spending by category). That file is
not public; ``make_microdata`` draws a table with the same shape and the dependence such a survey
has, so that the attacks and anonymizations of ``reidrisk.linkage`` meet realistic data:

- the household (QI) is drawn first: size, composition (children, elderly, earners, with
  ``children + elderly <= size`` and ``earners <= size - children``), the head's age class, sex,
  occupation and industry, region, city size, tenure and number of rooms;
- a latent log income depends on the earners, the head's age (a hump), occupation, city size and
  tenure, plus Gaussian noise; its decile in the table is the QI ``income_decile``;
- log total spending rises with log income (elasticity ``0.6``) and household size (``0.3`` on
  log size), plus a household-wide Gaussian taste term, so all 12 amounts are positively
  correlated through the total;
- the total is split into 12 categories by shares that follow Engel's law (the food share falls
  with income, recreation, transport and education rise), education needs children and medical
  care rises with the elderly, rent is paid by renters only; each amount gets its own lognormal
  noise (sigma ``0.35``), so amounts are right-skewed and correlated but not proportional;
- like a one-month diary survey, some categories are often exactly 0: education in every
  household without children and in 30 % of the months of those with children (about 76 % zeros
  overall; paper 001, Section 4.4, reports that 76 of its 100 sampled households have 0 in
  attribute 21, the 8th SA column, which is why ``education`` is the 8th column here), housing
  (rent and repairs) in 60 % of owner-occupied households.

Amounts are monthly yen, rounded to whole yen (float64). QI columns are int64 codes starting
at 0 or 1 as their names say (``household_size`` 1..8, ``n_children`` 0..4, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reidrisk.mechanisms.base import as_generator

#: the 13 discrete quasi-identifiers, in column order
QI_COLUMNS = (
    "household_size",   # 1..8 people
    "n_children",       # 0..4 under 18
    "n_elderly",        # 0..3 aged 65 or more
    "n_earners",        # 0..4
    "head_age",         # age class of the head: 0 = under 30, 1 = 30-39, ..., 5 = 75 or more
    "head_sex",         # 0 = male, 1 = female
    "head_occupation",  # 0..7 (0 = not working)
    "industry",         # 0..9 (0 = none)
    "region",           # 0..9
    "city_size",        # 0 = metropolis .. 3 = rural
    "tenure",           # 0 = owned, 1 = private rent, 2 = public rent, 3 = company housing
    "rooms",            # 1..8
    "income_decile",    # 1..10, deciles of the household's income in this table
)

#: the 12 continuous sensitive attributes (monthly spending by category, yen), in column order
SA_COLUMNS = (
    "food",
    "housing",
    "utilities",
    "furniture",
    "clothing",
    "medical",
    "transport",
    "education",
    "recreation",
    "social_expenses",
    "other_consumption",
    "taxes",
)

# Engel curves: log share weight = base + income slope * (log income - its mean) + effects below.
_BASE = np.log(np.array([0.24, 0.07, 0.07, 0.035, 0.04, 0.045, 0.12, 0.04, 0.10, 0.07, 0.10, 0.065]))
_INCOME_SLOPE = np.array([-0.45, -0.1, -0.25, 0.1, 0.2, -0.05, 0.25, 0.3, 0.35, 0.1, 0.15, 0.6])
_AMOUNT_SIGMA = 0.35  # idiosyncratic lognormal noise of each amount
_TOTAL_SIGMA = 0.25   # household-wide taste for spending (shared by all 12 amounts)
_EDUCATION_ZERO = 0.3  # months without education spending in households with children
_HOUSING_ZERO = 0.6    # owner-occupied households without rent or repairs in the month


@dataclass(frozen=True, eq=False)
class Microdata:
    """A synthetic expenditure table.

    Parameters
    ----------
    data : pandas.DataFrame
        The QI columns ``qi`` (int64 codes) then the SA columns ``sa`` (float64 yen), rows
        0..n-1.
    qi : tuple of str
        The quasi-identifier columns.
    sa : tuple of str
        The sensitive columns.
    income : numpy.ndarray (n,)
        The latent monthly income (yen) the spending was drawn from (not a column of ``data``).
    """

    data: pd.DataFrame
    qi: tuple[str, ...]
    sa: tuple[str, ...]
    income: np.ndarray

    @property
    def n(self) -> int:
        return len(self.data)


def _draw(rng: np.random.Generator, p, n: int) -> np.ndarray:
    p = np.asarray(p, float)
    return rng.choice(p.size, size=n, p=p / p.sum()).astype(np.int64)


def _deciles(x: np.ndarray) -> np.ndarray:
    """1..10: the decile of each value among ``x`` (ranks, so ties cannot make empty deciles)."""
    ranks = np.argsort(np.argsort(x, kind="stable"), kind="stable")
    return (ranks * 10 // x.size + 1).astype(np.int64)


def make_microdata(n: int = 8_333, *, rng=None) -> Microdata:
    """Draw ``n`` households with 13 discrete QI and 12 continuous SA (see the module docstring).

    Vectorized (no loop over households).

    Parameters
    ----------
    n : int
        Number of households; the default is the size of paper 001's data (Section 2.1: 8,333
        records x 25 attributes).
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).

    Returns
    -------
    Microdata
        The table and the latent incomes.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (the number of households), got {n!r}")
    n = int(n)
    g = as_generator(rng)

    # ---- the household (QI) ----
    size = 1 + _draw(g, [0.27, 0.30, 0.18, 0.15, 0.06, 0.025, 0.01, 0.005], n)
    head_age = _draw(g, [0.10, 0.17, 0.19, 0.20, 0.19, 0.15], n)
    # children: only where someone else lives in the household, and rarer for old heads
    child_room = np.minimum(size - 1, 4)
    young = head_age <= 2
    child_share = np.where(young, 0.6, np.where(head_age == 3, 0.25, 0.03))
    children = g.binomial(child_room, child_share).astype(np.int64)
    elderly_room = np.minimum(size - children, 3)
    elderly_p = np.where(head_age >= 4, 0.75, np.where(head_age == 3, 0.15, 0.05))
    elderly = g.binomial(elderly_room, elderly_p).astype(np.int64)
    adults = size - children
    working_age = np.maximum(adults - elderly, 0)
    earner_p = np.where(head_age >= 4, 0.35, 0.8)
    earners = np.minimum(g.binomial(working_age, earner_p) + g.binomial(elderly, 0.15), 4)
    earners = earners.astype(np.int64)
    sex = (g.random(n) < np.where(size == 1, 0.45, 0.12)).astype(np.int64)
    occupation = np.where(earners == 0, 0, 1 + _draw(g, [0.22, 0.2, 0.16, 0.12, 0.1, 0.1, 0.1], n))
    industry = np.where(occupation == 0, 0, 1 + _draw(g, [0.18, 0.1, 0.14, 0.16, 0.08, 0.1, 0.08,
                                                          0.08, 0.08], n))
    region = _draw(g, [0.05, 0.08, 0.3, 0.12, 0.15, 0.06, 0.08, 0.04, 0.08, 0.04], n)
    city = _draw(g, [0.3, 0.3, 0.25, 0.15], n)
    tenure_p = np.where((head_age[:, None] >= 3),
                        np.array([0.82, 0.12, 0.05, 0.01]), np.array([0.45, 0.38, 0.07, 0.10]))
    tenure = (g.random(n)[:, None] > np.cumsum(tenure_p, axis=1)[:, :-1]).sum(1).astype(np.int64)
    rooms = np.clip(np.rint(1.5 + 0.7 * size + np.where(tenure == 0, 1.5, 0.0)
                            + 0.4 * city + g.normal(0, 1.0, n)), 1, 8).astype(np.int64)

    # ---- latent income ----
    occ_effect = np.array([-0.6, 0.35, 0.25, 0.1, 0.0, -0.1, -0.05, -0.2])[occupation]
    age_effect = np.array([-0.25, 0.0, 0.15, 0.2, -0.15, -0.3])[head_age]
    log_income = (np.log(300_000.0) + 0.35 * np.log1p(earners) + occ_effect + age_effect
                  - 0.08 * city + np.where(tenure == 0, 0.1, 0.0) + g.normal(0, 0.35, n))
    income = np.exp(log_income)
    decile = _deciles(log_income)

    # ---- spending (SA) ----
    li = log_income - log_income.mean()
    log_total = (np.log(240_000.0) + 0.6 * li + 0.3 * np.log(size / 2.0)
                 + g.normal(0, _TOTAL_SIGMA, n))
    w = _BASE + np.outer(li, _INCOME_SLOPE)
    k = SA_COLUMNS.index
    w[:, k("food")] += 0.25 * np.log(size)
    w[:, k("housing")] += np.array([-1.2, 1.0, 0.6, -0.2])[tenure]
    w[:, k("education")] += np.where(children > 0, 0.6 * np.log1p(children), -2.5)
    w[:, k("medical")] += 0.35 * elderly + 0.1 * head_age
    w[:, k("transport")] += 0.25 * city  # cars outside the cities
    w[:, k("taxes")] += np.where(earners > 0, 0.3, -0.8)
    share = np.exp(w - w.max(axis=1, keepdims=True))
    share /= share.sum(axis=1, keepdims=True)
    amounts = np.exp(log_total)[:, None] * share * np.exp(g.normal(0, _AMOUNT_SIGMA, share.shape))
    zero_education = (children == 0) | (g.random(n) < _EDUCATION_ZERO)
    zero_housing = (tenure == 0) & (g.random(n) < _HOUSING_ZERO)
    amounts[:, k("education")] = np.where(zero_education, 0.0, amounts[:, k("education")])
    amounts[:, k("housing")] = np.where(zero_housing, 0.0, amounts[:, k("housing")])
    amounts = np.rint(amounts)

    qi_values = (size, children, elderly, earners, head_age, sex, occupation, industry, region,
                 city, tenure, rooms, decile)
    frame = pd.DataFrame({name: v.astype(np.int64) for name, v in zip(QI_COLUMNS, qi_values)})
    sa_frame = pd.DataFrame(amounts, columns=list(SA_COLUMNS))
    data = pd.concat([frame, sa_frame], axis=1)
    return Microdata(data=data, qi=QI_COLUMNS, sa=SA_COLUMNS, income=income)
