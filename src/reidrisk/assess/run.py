"""The assessment of one table: every per-record and per-table measure, in one pass.

``assess(table)`` computes, on a ``PreparedTable``:

* per record: f_k and F_k (``classes``), the individual risk and the prosecutor risk 1 / f_k
  (``risk``), P(unique in the population) and E[population count] from paper 000's model, the SUDA
  score and minimal sample uniques (``suda``), the class's diversity of every sensitive attribute
  (``diversity``) and the QIs that drive the record's risk;
* per table: k-anonymity, the attacker models, expected re-identifications (the sum of the
  individual risks, sdcMicro's global risk), l-diversity, t-closeness, delta-disclosure and
  beta-likeness per SA, and the population uniques of every estimator;
* what lowers the risk, measured: the expected re-identifications after dropping or coarsening
  each QI and each pair of QIs (``options``).

The population size N comes from ``population``, else from the survey weights' sum, else the
table is taken to be the whole population (a census) and the summary says so.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reidrisk.assess.classes import MISSING, MISSING_RULES, AssessError, match_sums
from reidrisk.assess.risk import (
    AttackerRisk,
    UniquesFigure,
    attacker_risks,
    individual_risk,
    population_uniques,
)
from reidrisk.assess.table import PreparedTable

DEFAULT_THRESHOLD = 0.2
"""A record is at risk when its re-identification probability exceeds 0.2 (1 / 5: a class of
fewer than 5 people), the common threshold for public releases (El Emam 2013)."""

MAX_PAIR_QIS = 12
"""Dropping each pair of QIs is measured for at most this many QIs (66 pairs)."""

MAX_PAIR_ROWS = 1_000_000
"""... and for tables of at most this many distinct rows (each pair is a pass over them)."""

MAX_DRIVERS = 3
"""The most QIs named as a record's drivers."""


@dataclass(frozen=True)
class Option:
    """One way to lower the risk, measured on the table.

    Parameters
    ----------
    action : str
        "drop" or "coarsen".
    columns : tuple of str
        The QIs acted on.
    expected_reidentifications : float
        The sum of the individual risks after the action.
    k_anonymity : int
        The smallest f_k after it.
    records_at_risk : float
        The share of records with individual risk above the threshold after it.
    how : str
        What the action does, in words.
    """

    action: str
    columns: tuple[str, ...]
    expected_reidentifications: float
    k_anonymity: int
    records_at_risk: float
    how: str

    def to_dict(self) -> dict:
        """The fields as JSON-ready data.

        Returns
        -------
        dict
            Field name to value.
        """
        return {"action": self.action, "columns": list(self.columns),
                "expected_reidentifications": self.expected_reidentifications,
                "k_anonymity": self.k_anonymity, "records_at_risk": self.records_at_risk,
                "how": self.how}


@dataclass(frozen=True)
class Assessment:
    """The risk assessment of one table (``assess``).

    Parameters
    ----------
    table : PreparedTable
        The encoded table.
    N : int
        The population size used.
    census : bool
        True when no population size was given and the table was taken as the population.
    missing : str
        The missing-value rule.
    threshold : float
        The per-record risk above which a record is at risk.
    fk, Fk, risk, prosecutor : numpy.ndarray (n,)
        Sample and population frequencies, individual (journalist) risk, 1 / f_k.
    p_unique, expected_count : numpy.ndarray (n,) or None
        Paper 000's P(unique in the population) and E[count] (None when the model was skipped).
    drivers : list of str
        Per record, the QIs whose removal alone raises its f_k most (``;``-separated, empty for
        records not at risk).
    attackers : dict of str to AttackerRisk
        The prosecutor, journalist and marketer risks.
    uniques : dict of str to UniquesFigure
        Population uniques by every estimator.
    options : tuple of Option
        Measured ways to lower the risk.
    extras : dict
        Further measures (SUDA, diversity) added by their modules: per-record frames and summaries.
    seconds : dict of str to float
        Time of each stage.
    """

    table: PreparedTable
    N: int
    census: bool
    missing: str
    threshold: float
    fk: np.ndarray
    Fk: np.ndarray
    risk: np.ndarray
    prosecutor: np.ndarray
    p_unique: np.ndarray | None
    expected_count: np.ndarray | None
    drivers: list[str]
    attackers: dict[str, AttackerRisk]
    uniques: dict[str, UniquesFigure]
    options: tuple[Option, ...]
    extras: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.table.n

    @property
    def k_anonymity(self) -> int:
        return int(self.fk.min())

    @property
    def expected_reidentifications(self) -> float:
        return float((self.risk * self.table.multiplicity).sum())

    def records(self) -> pd.DataFrame:
        """The per-record measures.

        Returns
        -------
        pandas.DataFrame
            One row per input row, in input order (per distinct row for a table of ``counts``):
            fk, Fk, risk, prosecutor_risk, at_risk, p_unique and expected_count (with the model),
            the extras' columns and drivers.
        """
        data: dict[str, np.ndarray | list] = {
            "fk": self.fk, "Fk": self.Fk, "risk": self.risk, "prosecutor_risk": self.prosecutor,
            "at_risk": (self.risk > self.threshold).astype(np.int8)}
        if self.p_unique is not None and self.expected_count is not None:
            data["p_unique"] = self.p_unique
            data["expected_count"] = self.expected_count
        frame = pd.DataFrame(data)
        for extra in self.extras.values():
            per_record = extra.get("records")
            if per_record is not None:
                frame = pd.concat([frame, per_record.reset_index(drop=True)], axis=1)
        frame["drivers"] = self.drivers
        return frame

    def summary(self) -> dict:
        """The per-table measures.

        Returns
        -------
        dict
            JSON-ready figures: sizes, k-anonymity, risks, attacker models, population uniques,
            options, the extras' figures and each stage's seconds.
        """
        out = {
            "table": self.table.source,
            "records": self.n,
            "quasi_identifiers": self.table.qis,
            "sensitive_attributes": [s.name for s in self.table.sensitive],
            "population": self.N,
            "population_assumed_census": self.census,
            "missing_values": self.missing,
            "missing_qi_records": int(self.table.multiplicity[
                (self.table.codes == MISSING).any(axis=1)].sum()),
            "threshold": self.threshold,
            "k_anonymity": self.k_anonymity,
            "sample_uniques": int(self.table.multiplicity[self.fk == 1].sum()),
            "records_at_risk": _share(self.risk > self.threshold, self.table.multiplicity),
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk": self.expected_reidentifications / self.n,
            **{name: r.to_dict() for name, r in self.attackers.items()},
            "population_uniques": {name: u.to_dict() for name, u in self.uniques.items()},
            "options": [o.to_dict() for o in self.options],
            "seconds": self.seconds,
        }
        for extra in self.extras.values():
            out.update(extra.get("summary", {}))
        return out


def resolve_population(table: PreparedTable, population: int | None = None,
                       fraction: float | None = None) -> tuple[int, bool]:
    """The population size N and whether the table was assumed to be a census.

    Parameters
    ----------
    table : PreparedTable
        The table.
    population : int, optional
        N as given.
    fraction : float, optional
        The sampling fraction n / N, in (0, 1].

    Returns
    -------
    N : int
        The population size.
    census : bool
        True when nothing gave N (N = n).

    Raises
    ------
    AssessError
        When both are given, N < n, the fraction is outside (0, 1], or N is far from the weights'
        sum.
    """
    n = table.n
    if population is not None and fraction is not None:
        raise AssessError("give the population size (--population) or the sampling fraction "
                          "(--fraction), not both")
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise AssessError(f"--fraction {fraction!r} must lie in (0, 1]: the share of the "
                              "population the table holds")
        population = int(round(n / fraction))
    if population is not None:
        if population < n:
            raise AssessError(f"{table.source}: the population ({population:,}) is smaller than the "
                              f"table ({n:,} records); give the size of the population the table "
                              "was drawn from")
        if table.weights is not None:
            total = float(table.weights.sum())
            if abs(total - population) > 0.01 * population:
                raise AssessError(f"{table.source}: the weights sum to {total:,.0f} but --population "
                                  f"is {population:,}; survey weights already give the population "
                                  "size: leave --population out or rescale the weights")
        return int(population), False
    if table.weights is not None:
        return max(int(round(float(table.weights.sum()))), n), False
    return n, True


def _weights(table: PreparedTable, N: int) -> np.ndarray:
    """Each row's total weight: its records' survey weights, else N / n a record."""
    if table.weights is not None:
        return table.weights
    return table.multiplicity * (N / table.n)


def _frequencies(codes, mult, w, missing) -> tuple[np.ndarray, np.ndarray]:
    sums = match_sums(codes, np.column_stack([mult, w]), missing)
    return np.rint(sums[:, 0]).astype(np.int64), sums[:, 1]


def _share(mask: np.ndarray, mult: np.ndarray) -> float:
    """The share of records (rows weighted by their multiplicity) where ``mask`` holds."""
    return float(mult[mask].sum() / mult.sum()) if mult.size else 0.0


def _coarsened(codes: np.ndarray, j: int) -> np.ndarray:
    """Column j coarsened one level: neighbouring codes merged in pairs (bins twice as wide, or
    neighbouring categories in their declared order)."""
    out = codes.copy()
    col = out[:, j]
    present = col != MISSING
    col[present] //= 2
    return out


def _options(table: PreparedTable, w, missing, threshold, on_step) -> tuple[list, list[Option]]:
    """fk after dropping each QI (for the drivers) and the measured options."""
    codes, names, mult = table.codes, table.qis, table.multiplicity
    q = len(names)
    dropped_fk: list[np.ndarray] = []
    options: list[Option] = []

    def measure(action, cols, matrix, how):
        fk, Fk = _frequencies(matrix, mult, w, missing) if matrix.shape[1] else (
            np.full(table.rows, table.n), np.full(table.rows, float(w.sum())))
        r = individual_risk(fk, Fk)
        options.append(Option(action, cols, float((r * mult).sum()), int(fk.min()),
                              _share(r > threshold, mult), how))
        return fk

    for j in range(q):
        keep = [i for i in range(q) if i != j]
        dropped_fk.append(measure("drop", (names[j],), codes[:, keep], f"leave {names[j]} out"))
        on_step()
    for j in range(q):
        if table.schema[j].size > 2:
            how = (f"merge neighbouring {'bins' if table.schema[j].is_numeric else 'categories'} "
                   f"of {names[j]} in pairs")
            measure("coarsen", (names[j],), _coarsened(codes, j), how)
        on_step()
    if 2 < q <= MAX_PAIR_QIS and table.rows <= MAX_PAIR_ROWS:
        for a, b in itertools.combinations(range(q), 2):
            keep = [i for i in range(q) if i not in (a, b)]
            measure("drop", (names[a], names[b]), codes[:, keep],
                    f"leave {names[a]} and {names[b]} out")
            on_step()
    options.sort(key=lambda o: o.expected_reidentifications)
    return dropped_fk, options


def _drivers(fk: np.ndarray, dropped_fk: list[np.ndarray], names: list[str], at_risk: np.ndarray
             ) -> list[str]:
    """Per record at risk, the QIs whose removal alone raises its f_k most (those that raise it)."""
    if not dropped_fk:
        return [""] * fk.size
    gain = np.column_stack(dropped_fk) / fk[:, None]
    order = np.argsort(-gain, axis=1, kind="stable")[:, :MAX_DRIVERS]
    top_gain = np.take_along_axis(gain, order, axis=1)
    q = len(names)
    # the drivers are a prefix of each row's order (gains sorted descending): code each row's
    # kept prefix as one integer (q for "none"), join the names once per distinct code
    kept = np.where((top_gain > 1) & np.asarray(at_risk)[:, None], order, q)
    codes = (kept * (q + 1) ** np.arange(kept.shape[1])).sum(axis=1)
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    labels = np.array([";".join(names[j] for j in kept[i] if j < q) for i in first], dtype=object)
    return labels[inverse.ravel()].tolist()


Extra = Callable[[PreparedTable, np.ndarray, str], dict]
"""A further measure: ``extra(table, fk, missing) -> {"records": DataFrame, "summary": dict}``."""


def assess(table: PreparedTable, *, population: int | None = None, fraction: float | None = None,
           threshold: float = DEFAULT_THRESHOLD, missing: str = "wildcard", model: bool = True,
           options: bool = True, extras: dict[str, Extra] | None = None,
           rng: np.random.Generator | int | None = 0,
           progress: Callable[[str], None] | None = None) -> Assessment:
    """Assess the re-identification risk of a table's records.

    Parameters
    ----------
    table : PreparedTable
        From ``prepare_table``.
    population, fraction : optional
        The population size N, or the sampling fraction n / N (``resolve_population``).
    threshold : float
        Per-record risk above which a record is at risk, in (0, 1].
    missing : {"wildcard", "value"}
        The missing-value rule (``reidrisk.assess.classes``).
    model : bool
        Fit paper 000's model (P(unique), E[count]).
    options : bool
        Measure dropping and coarsening QIs.
    extras : dict of str to callable, optional
        Further measures (SUDA, diversity), each ``extra(table, fk, missing)``.
    rng : Generator, int or None
        The model's randomness.
    progress : callable, optional
        Called with the name of each stage as it starts.

    Returns
    -------
    Assessment
        Every measure.

    Raises
    ------
    AssessError
        On a bad threshold, rule or population.
    """
    if missing not in MISSING_RULES:
        raise AssessError(f"missing rule {missing!r} is not one of {', '.join(MISSING_RULES)}")
    if not 0 < threshold <= 1:
        raise AssessError(f"the risk threshold must lie in (0, 1], got {threshold!r}")
    say = progress or (lambda stage: None)
    seconds: dict[str, float] = {}
    N, census = resolve_population(table, population, fraction)
    w = _weights(table, N)

    t0 = time.perf_counter()
    say("class sizes")
    mult = table.multiplicity
    fk, Fk = _frequencies(table.codes, mult, w, missing)
    risk = individual_risk(fk, Fk)
    attackers = attacker_risks(fk, risk, threshold, mult)
    seconds["classes"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("population uniques")
    model = model and table.counts is None  # the model reads records, not aggregated rows
    uniques = population_uniques(table.codes, fk, table.schema, N, model=model and not census,
                                 rng=rng, counts=table.counts)
    p_unique = expected = None
    if model:
        if census:
            p_unique, expected = (fk == 1).astype(np.float64), fk.astype(np.float64)
        else:
            p_unique = uniques["reidrisk"].record_p_unique
            expected = uniques["reidrisk"].record_expected
    seconds["uniques"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("options")
    dropped, opts = _options(table, w, missing, threshold, lambda: None) if options else ([], [])
    drivers = _drivers(fk, dropped, table.qis, risk > threshold)
    seconds["options"] = time.perf_counter() - t0

    done = {}
    for name, extra in (extras or {}).items():
        t0 = time.perf_counter()
        say(name)
        done[name] = extra(table, fk, missing)
        seconds[name] = time.perf_counter() - t0
    return Assessment(table, N, census, missing, threshold, fk, Fk, risk, 1.0 / fk, p_unique,
                      expected, drivers, attackers, uniques, tuple(opts), done, seconds)


__all__ = ["Assessment", "DEFAULT_THRESHOLD", "Extra", "Option", "assess", "resolve_population"]
