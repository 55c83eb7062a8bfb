"""Re-identification risk of a sample's records: individual risk, attacker models, uniques.

* ``individual_risk``: Benedetti & Franconi (1998), Franconi & Polettini (2004) — the posterior
  mean of 1 / F_k given the sample frequency f_k and the weights (sdcMicro's ``indivRisk``).
* ``attacker_risks``: El Emam & Dankar (2008) — the prosecutor (the attacker knows the person is in
  the table: 1 / f_k), journalist (the attacker matches against the population: the individual
  risk) and marketer (the share of all records a mass attack re-identifies) models, each as the
  highest risk, the average and the share of records above a threshold (ARX's summaries).
* ``population_uniques``: how many records of the table are unique in the population, by the
  frequency-of-frequencies estimators of ``reidrisk.uniqueness.estimators`` (Pitman, Zayatz, SNB,
  Dankar's rule) and by paper 000's model (``reidrisk.uniqueness.UniquenessModel`` on the table
  as a raw database).

Definitions and sources: docs/design/assess.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import hyp2f1

from reidrisk.assess.classes import AssessError, DistinctRows, sample_frequencies
from reidrisk.schema import Schema
from reidrisk.uniqueness import (
    Database,
    SampleFrequencies,
    UniquenessModel,
    estimate_population_uniques,
)

ESTIMATORS = ("pitman", "zayatz", "snb", "dankar")
"""The frequency-of-frequencies estimators, by their ``reidrisk.uniqueness`` names."""

MODEL = "reidrisk"
"""The name of paper 000's model among the population-uniques estimates."""

ASSUMES: Mapping[str, str] = {
    "pitman": "class sizes follow a Pitman (two-parameter Poisson-Dirichlet) partition; "
              "suited to small sampling fractions (Hoshino 2001)",
    "zayatz": "a sample unique is a population unique as often as a hypergeometric draw from the "
              "sample's own class sizes says (Zayatz 1991)",
    "snb": "population class sizes are negative binomial (Chen & Keller-McNulty 1998)",
    "dankar": "Pitman when the sampling fraction is at most 0.1, else the smaller of Zayatz and "
              "SNB (Dankar et al. 2012)",
    MODEL: "paper 000: each record's population count has a prior fitted on the table's own "
           "matches and a Gaussian-copula model of the QIs; uses every record's values, not only "
           "class sizes",
}
"""What each population-uniques estimate assumes, as the report states it."""


def individual_risk(fk: np.ndarray, Fk: np.ndarray) -> np.ndarray:
    """Benedetti–Franconi individual risk: E[1 / F_k | f_k] for every record.

    With p_k = f_k / F_k, the population frequency given the sample frequency is f_k plus a
    negative binomial number of failures, P(F_k = h | f_k) = C(h-1, f_k-1) p_k^f_k (1-p_k)^(h-f_k)
    (Franconi & Polettini 2004, eq. 3). Its mean of 1 / F_k has the closed form

        r_k = p_k / f_k * 2F1(1, 1; f_k + 1; 1 - p_k)

    (the Euler transform of sdcMicro's series; f_k = 1 gives p log(1/p) / (1 - p), the vignette's
    first closed form). Exact for every f_k, where sdcMicro approximates f_k > 3.

    Parameters
    ----------
    fk : numpy.ndarray (n,)
        Sample frequencies, >= 1.
    Fk : numpy.ndarray (n,)
        Estimated population frequencies (sums of weights), >= fk (clipped to fk: p_k <= 1).

    Returns
    -------
    numpy.ndarray (n,) float64
        The risks, in (0, 1]; 1 / f_k where F_k = f_k (a census).

    Raises
    ------
    AssessError
        When fk < 1 or Fk is not finite and positive.
    """
    f = np.asarray(fk, dtype=np.float64)
    F = np.asarray(Fk, dtype=np.float64)
    if f.shape != F.shape:
        raise AssessError(f"fk {f.shape} and Fk {F.shape} must have the same shape")
    if f.size and (f.min() < 1 or not np.isfinite(F).all() or F.min() <= 0):
        raise AssessError("fk must be >= 1 and Fk finite and > 0 (each record counts itself)")
    p = np.minimum(f / np.maximum(F, f), 1.0)
    out = np.empty_like(p)
    census = p >= 1.0
    out[census] = 1.0 / f[census]
    rest = ~census
    out[rest] = p[rest] / f[rest] * _hyp2f1_11(f[rest] + 1.0, 1.0 - p[rest])
    return np.clip(out, 0.0, 1.0)


SERIES_FROM = 50.0
"""From this f_k on, 2F1(1, 1; f_k + 1; z) is summed as its series (SciPy's routine overflows
there for z near 1); the series' ratio of terms is z j / (f_k + j), so ``SERIES_TERMS`` terms
leave a remainder below 2^-52 of the sum."""

SERIES_TERMS = 600


def _hyp2f1_11(c: np.ndarray, z: np.ndarray) -> np.ndarray:
    """2F1(1, 1; c; z) for c >= 2, 0 <= z < 1."""
    out = np.empty_like(z)
    small = c < SERIES_FROM
    out[small] = hyp2f1(1.0, 1.0, c[small], z[small])
    big = ~small
    if big.any():
        pairs, inverse = np.unique(np.column_stack([c[big], z[big]]), axis=0, return_inverse=True)
        j = np.arange(1, SERIES_TERMS, dtype=np.float64)
        log_terms = np.cumsum(np.log(j)[None, :] - np.log(pairs[:, :1] + j[None, :] - 1.0)
                              + np.log(np.maximum(pairs[:, 1:], 1e-300)), axis=1)
        out[big] = (1.0 + np.exp(log_terms).sum(axis=1))[inverse.ravel()]
    return out


@dataclass(frozen=True)
class AttackerRisk:
    """One attacker model's risk over a table (ARX's three summaries).

    Parameters
    ----------
    model : str
        "prosecutor", "journalist" or "marketer".
    highest : float
        The largest per-record risk (for the marketer: its single figure).
    average : float
        The mean per-record risk: the expected share of records re-identified.
    records_at_risk : float
        The share of records whose risk exceeds ``threshold`` (the marketer: 0 or 1, whether its
        figure does).
    threshold : float
        The threshold.
    meaning : str
        What the attacker knows, in one sentence.
    """

    model: str
    highest: float
    average: float
    records_at_risk: float
    threshold: float
    meaning: str

    def to_dict(self) -> dict:
        """The fields as JSON-ready data.

        Returns
        -------
        dict
            Field name to value.
        """
        return {"highest": self.highest, "average": self.average,
                "records_at_risk": self.records_at_risk, "threshold": self.threshold,
                "meaning": self.meaning}


def attacker_risks(fk: np.ndarray, risk: np.ndarray, threshold: float,
                   counts: np.ndarray | None = None) -> dict[str, AttackerRisk]:
    """The prosecutor, journalist and marketer risks (El Emam & Dankar 2008).

    Parameters
    ----------
    fk : numpy.ndarray (n,)
        Sample frequencies.
    risk : numpy.ndarray (n,)
        Individual risks (``individual_risk``): the journalist's per-record risk.
    threshold : float
        The per-record risk above which a record counts as at risk, in (0, 1].
    counts : numpy.ndarray (n,), optional
        How many records each entry stands for (default one each).

    Returns
    -------
    dict of str to AttackerRisk
        ``prosecutor``: per record 1 / f_k; ``journalist``: per record the individual risk;
        ``marketer``: the expected share of the table a mass attack re-identifies (the journalist's
        average).
    """
    if not 0 < threshold <= 1:
        raise AssessError(f"the risk threshold must lie in (0, 1], got {threshold!r}")
    pros = 1.0 / np.asarray(fk, dtype=np.float64)
    jour = np.asarray(risk, dtype=np.float64)
    c = np.ones_like(jour) if counts is None else np.asarray(counts, dtype=np.float64)
    total = float(c.sum())

    def mean(x: np.ndarray) -> float:
        return float((x * c).sum() / total) if total else 0.0

    market = mean(jour)
    return {
        "prosecutor": AttackerRisk(
            "prosecutor", float(pros.max(initial=0.0)), mean(pros),
            mean((pros > threshold).astype(np.float64)), threshold,
            "knows the person is in this table and picks one of the records matching them"),
        "journalist": AttackerRisk(
            "journalist", float(jour.max(initial=0.0)), market,
            mean((jour > threshold).astype(np.float64)), threshold,
            "knows the person's QIs but not whether they are in the table; matches against the "
            "population"),
        "marketer": AttackerRisk(
            "marketer", market, market, float(market > threshold), threshold,
            "re-identifies as many records as possible at once; counts the share matched right"),
    }


@dataclass(frozen=True)
class UniquesFigure:
    """One estimate of how many of the table's records are unique in the population.

    Parameters
    ----------
    estimator : str
        "pitman", "zayatz", "snb", "dankar" or "reidrisk" (paper 000's model).
    in_table : float
        Expected number of the table's records that are population uniques.
    in_population : float
        Estimated population uniques in the whole population (NaN where the estimator failed).
    record_p_unique : numpy.ndarray (n,)
        Per record P(unique in the population).
    valid : bool
        The estimator converged to a finite figure.
    assumes : str
        What the estimator assumes.
    note : str
        Why it failed, or which model the rule chose.
    record_expected : numpy.ndarray (n,), optional
        Per record E[population count] (paper 000's model only).
    """

    estimator: str
    in_table: float
    in_population: float
    record_p_unique: np.ndarray
    valid: bool
    assumes: str
    note: str = ""
    record_expected: np.ndarray | None = None

    def to_dict(self) -> dict:
        """The fields as JSON-ready data.

        Returns
        -------
        dict
            Field name to value.
        """
        return {"in_table": self.in_table, "in_population": self.in_population,
                "valid": self.valid, "assumes": self.assumes, "note": self.note}


def frequencies_of(fk: np.ndarray, counts: np.ndarray | None = None) -> SampleFrequencies:
    """The frequency of frequencies of a sample from its records' class sizes.

    With missing values as wildcards classes overlap, and the number of classes of size j is
    taken as (records with f_k = j) / j, rounded up; with no missing value it is exact.

    Parameters
    ----------
    fk : numpy.ndarray (n,)
        Each entry's class size.
    counts : numpy.ndarray (n,), optional
        How many records each entry stands for (default one each).

    Returns
    -------
    SampleFrequencies
        n, the class sizes and the number of classes of each (per-record class sizes only when
        ``counts`` is None).
    """
    f = np.asarray(fk, dtype=np.int64)
    c = np.ones(f.size, np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    sizes, inverse = np.unique(f, return_inverse=True)
    records = np.bincount(inverse.ravel(), weights=c).astype(np.int64)
    keep = records > 0
    sizes, records = sizes[keep], records[keep]
    classes = np.ceil(records / sizes).astype(np.int64)
    return SampleFrequencies(int(c.sum()), sizes, classes, f if counts is None else None)


def population_uniques(codes: np.ndarray, fk: np.ndarray, schema: Schema, N: int,
                       estimators: tuple[str, ...] = ESTIMATORS, model: bool = True,
                       rng: np.random.Generator | int | None = 0,
                       counts: np.ndarray | None = None) -> dict[str, UniquesFigure]:
    """How many of the table's records are unique in a population of N, by every estimator.

    Parameters
    ----------
    codes : numpy.ndarray (n, q)
        The QI codes under ``schema`` (``MISSING`` allowed).
    fk : numpy.ndarray (n,)
        Sample frequencies (``classes.sample_frequencies``).
    schema : Schema
        The QIs' domains.
    N : int
        Population size, >= n.
    estimators : tuple of str
        Which frequency-of-frequencies estimators to run.
    model : bool
        Also fit paper 000's model (``UniquenessModel``, the package's default preset, with the
        table as one raw database at rate n / N).
    rng : Generator, int or None
        The model's randomness (its quasi-Monte Carlo points).
    counts : numpy.ndarray (rows,), optional
        How many records each row of ``codes`` stands for (an aggregated table; the model needs
        records and is refused with it).

    Returns
    -------
    dict of str to UniquesFigure
        One entry per estimator (and ``"reidrisk"`` for the model). ``in_population`` of the
        model is the Horvitz–Thompson total sum P(unique) / (n / N).
    """
    rows = int(np.asarray(codes).shape[0])
    n = rows if counts is None else int(np.sum(counts))
    if N < n:
        raise AssessError(f"the population ({N}) cannot be smaller than the table ({n} records)")
    if model and counts is not None:
        raise AssessError("paper 000's model reads records: give the table, not its counts")
    freq = frequencies_of(fk, counts)
    out: dict[str, UniquesFigure] = {}
    for name in estimators:
        est = estimate_population_uniques(freq, N, name)
        risk = (est.record_risk if est.record_risk is not None else
                np.where(np.asarray(fk) == 1, est.unique_given_sample_unique, 0.0))
        note = "" if est.valid else "did not converge on these class sizes"
        if name == "dankar":
            note = f"chose {est.estimator}"
        mult = 1.0 if counts is None else np.asarray(counts, dtype=np.float64)
        out[name] = UniquesFigure(name, float(np.sum(risk * mult)), float(est.population_uniques),
                                  np.asarray(risk, dtype=np.float64), est.valid, ASSUMES[name], note)
    if model:
        p, expected = model_scores(codes, schema, N, rng)
        out[MODEL] = UniquesFigure(MODEL, float(p.sum()), float(p.sum() * N / n), p, True,
                                   ASSUMES[MODEL], record_expected=expected)
    return out


def model_scores(codes: np.ndarray, schema: Schema, N: int,
                 rng: np.random.Generator | int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """Paper 000's P(unique in the population) and E[population count] of every record.

    Parameters
    ----------
    codes : numpy.ndarray (n, q)
        The table's QI codes under ``schema``.
    schema : Schema
        The QIs' domains.
    N : int
        Population size.
    rng : Generator, int or None
        The model's randomness.

    Returns
    -------
    p_unique, expected : numpy.ndarray (n,)
        P(X = 1) and E[X] of each record's population count X. A record that f_k >= 2 records of
        the table match (missing values as wildcards) has P(X = 1) = 0 and E[X] >= f_k; N = n
        (a census) gives the table's own counts.
    """
    n = int(codes.shape[0])
    fk = sample_frequencies(codes)[0]
    if N == n:  # a census: the table is the population
        return (fk == 1).astype(np.float64), fk.astype(np.float64)
    fitted = UniquenessModel(rng=rng).fit([Database(codes, n / N, "table")], N, schema)
    distinct = DistinctRows.of(codes)  # equal rows have equal answers: score each once
    scores = fitted.score(distinct.rows, T=(1,), keep_pmf=False)
    p = np.asarray(scores.p_unique, dtype=np.float64)[distinct.inverse]
    expected = np.asarray(scores.expected, dtype=np.float64)[distinct.inverse]
    # a record that other records of the table match (a missing value matching theirs) cannot be
    # singled out: the model's count skips records missing a QI the query has
    p[fk >= 2] = 0.0
    return p, np.maximum(expected, fk)


__all__ = [
    "ASSUMES",
    "AttackerRisk",
    "ESTIMATORS",
    "MODEL",
    "UniquesFigure",
    "attacker_risks",
    "frequencies_of",
    "individual_risk",
    "model_scores",
    "population_uniques",
]
