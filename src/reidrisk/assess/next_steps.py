"""What a data holder can do next, measured on the table: a k-anonymous release, or LDP collection.

* ``candidate_release``: the greedy global recoding of ``reidrisk.linkage.k_anonymize`` to the safe
  k, its cost (rows suppressed, values merged) and the re-identification rate of the linkage
  attacks on it (``reidrisk.linkage.evaluate``, the true mapping known; paper 001).
* ``ldp_option``: collecting the same QIs under local differential privacy instead — the largest
  whole-record budget PIE certifies for a target identification error (``reidrisk.pie.calibrate``,
  paper 002, Cor. 3.9 with Prop. 4.1, which holds for every epsilon-LDP mechanism: the
  collection randomizes each QI apart, with k-ary randomized response at epsilon / q, so the
  whole-domain randomized-response bound of Thm 4.2/4.3 does not apply), and the P(unique) that
  paper 000's model predicts from reports randomized at that budget (``reidrisk.uniqueness``).

These are the ports through which ``assess`` uses its sibling capabilities (the layers contract in
pyproject.toml names them).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reidrisk.assess.classes import MISSING, AssessError, sample_frequencies
from reidrisk.assess.table import PreparedTable
from reidrisk.linkage import LinkageError, evaluate, k_anonymize
from reidrisk.mechanisms.record import RecordRandomizer
from reidrisk.pie import BoundError, calibrate
from reidrisk.uniqueness import Database, UniquenessModel

SUPPRESSED = "*"
"""How a missing QI value is written in the candidate release (a value of its own there)."""


@dataclass(frozen=True)
class CandidateRelease:
    """A k-anonymous release of the table by greedy global recoding, and its attack rates.

    Parameters
    ----------
    k_target : int
        The k asked for (the safe k of the threshold).
    k_reached : int
        The smallest QI class of the release.
    rows_suppressed : int
        Rows deleted as the recoding's last resort.
    merged_values : dict of str to int
        Per QI, how many of its values were merged into groups.
    cells_generalized : float
        The information lost: the share of the released rows' QI values written as a group
        instead of the original value.
    attack_rates : dict of str to tuple of float
        Per linkage attack, (rate, lower, upper) of the 95 % interval: the share of released rows
        the attack links to their true original row.
    note : str
        What was not measured, and why.
    """

    k_target: int
    k_reached: int
    rows_suppressed: int
    merged_values: dict[str, int]
    cells_generalized: float = 0.0
    attack_rates: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    note: str = ""

    def to_dict(self) -> dict:
        """The fields as JSON-ready data.

        Returns
        -------
        dict
            Field name to value.
        """
        return {"k_target": self.k_target, "k_reached": self.k_reached,
                "rows_suppressed": self.rows_suppressed, "merged_values": self.merged_values,
                "cells_generalized": self.cells_generalized,
                "attack_rates": {k: list(v) for k, v in self.attack_rates.items()},
                "note": self.note}


def _labels(table: PreparedTable) -> pd.DataFrame:
    """The QIs as the text a release would print: declared labels, ``*`` for missing."""
    out = {}
    for j, attr in enumerate(table.schema):
        codes = table.codes[:, j]
        labels = np.asarray(attr.categories + (SUPPRESSED,), dtype=object)
        out[attr.name] = labels[np.where(codes == MISSING, attr.size, codes)]
    return pd.DataFrame(out)


def _numeric_sensitive(table: PreparedTable, frame: pd.DataFrame) -> list[str]:
    """The SAs whose every value is a number (the distance attacks need numbers)."""
    out = []
    for s in table.sensitive:
        if s.ordered and not (s.codes == MISSING).any():
            frame[s.name] = pd.to_numeric(pd.Series(s.categories)).to_numpy(np.float64)[s.codes]
            out.append(s.name)
    return out


def candidate_release(table: PreparedTable, k: int, rng: np.random.Generator | int | None = 0
                      ) -> CandidateRelease:
    """Recode the table's QIs to k-anonymity and attack the result.

    Parameters
    ----------
    table : PreparedTable
        The table.
    k : int
        The smallest class size wanted.
    rng : Generator, int or None
        Breaks the attacks' ties.

    Returns
    -------
    CandidateRelease
        The release's k, cost and attack rates. Missing QI values are a value of their own (``*``)
        in the release, as a published file would show them. With no numeric SA, only E1 (a random
        pick among the QI matches) can be run.
    """
    frame = _labels(table)
    qi = list(frame.columns)
    sa = _numeric_sensitive(table, frame)
    try:
        release = k_anonymize(frame, qi, int(k))
    except LinkageError as exc:
        raise AssessError(f"no {k}-anonymous release: {exc}") from None
    detail = release.details[-1] if release.details else {}
    merged = {col: sum(len(v) for v in groups.values())
              for col, groups in detail.get("generalized", {}).items()}
    codes = np.column_stack([pd.factorize(release.data[c])[0] for c in qi]) if len(release.data) \
        else np.zeros((0, len(qi)), int)
    k_reached = int(sample_frequencies(codes, missing="value")[0].min()) if len(codes) else 0
    original = frame.iloc[release.truth][qi].to_numpy(object)
    changed = float(np.mean(release.data[qi].to_numpy(object) != original)) if len(codes) else 0.0
    attacks = ["E1", "E2", "EUC1", "EUC2", "assign"] if sa else ["E1"]
    note = "" if sa else ("only E1 was run: the distance attacks need a numeric sensitive "
                          "attribute without missing values (--sa)")
    with warnings.catch_warnings():  # without an SA the utility scores average empty columns
        warnings.simplefilter("ignore", RuntimeWarning)
        score = evaluate(frame, release, qi=qi, sa=sa, attacks=attacks, rng=rng)
    rates = {r.attack: (float(r.rate), float(r.low), float(r.high)) for r in score.rates}
    return CandidateRelease(int(k), k_reached, int(table.n - len(release.data)), merged, changed,
                            rates, note)


@dataclass(frozen=True)
class LdpOption:
    """Collecting the QIs under LDP instead: the budget PIE certifies and the uniqueness left.

    Parameters
    ----------
    target_error : float
        The identification error to guarantee (an attacker's Bayes error).
    epsilon : float
        The largest whole-record budget certified (split evenly over the QIs).
    certified_by : str
        The bound that certified it (paper 002: "ldp", Prop. 4.1).
    domain : int
        The record domain |X| (product of the QIs' domain sizes).
    mean_p_unique : float
        Mean P(unique in the population) the model predicts from reports at that budget.
    share_likely_unique : float
        Share of records with P(unique) > 0.5 at that budget.
    note : str
        What was not measured, and why.
    """

    target_error: float
    epsilon: float
    certified_by: str
    domain: int
    mean_p_unique: float = math.nan
    share_likely_unique: float = math.nan
    note: str = ""

    def to_dict(self) -> dict:
        """The fields as JSON-ready data.

        Returns
        -------
        dict
            Field name to value.
        """
        return {"target_error": self.target_error, "epsilon": self.epsilon,
                "certified_by": self.certified_by, "domain": self.domain,
                "mean_p_unique": self.mean_p_unique,
                "share_likely_unique": self.share_likely_unique, "note": self.note}


def ldp_option(table: PreparedTable, N: int, target_error: float = 0.9,
               rng: np.random.Generator | int | None = 0, model: bool = True) -> LdpOption:
    """The budget for collecting the table's QIs under LDP (each QI randomized apart by k-ary
    randomized response at epsilon / q), and the re-identification risk left at it.

    Parameters
    ----------
    table : PreparedTable
        The table (its QIs are what would be collected).
    N : int
        The population size.
    target_error : float
        The attacker's identification error to guarantee, in [0, 1).
    rng : Generator, int or None
        The randomization of the simulated reports and the model's randomness.
    model : bool
        Also predict P(unique) from reports randomized at that budget (paper 000's model).

    Returns
    -------
    LdpOption
        The certified budget and the predicted uniqueness.

    Raises
    ------
    AssessError
        When no budget certifies the target for this many records.
    """
    domain = int(np.prod([a.size for a in table.schema], dtype=np.float64))
    domain = min(domain, 2**62)
    try:
        cal = calibrate(target_error, table.n, domain, "ldp")
    except BoundError as exc:
        raise AssessError(f"no LDP budget: {str(exc).replace('--target-error', '--ldp-error')}"
                          ) from None
    eps = float(cal.epsilon)
    if not model or not math.isfinite(eps):
        return LdpOption(target_error, eps, str(cal.certified_by), domain)
    gen = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    complete = (table.codes != MISSING).all(axis=1)
    codes = table.codes[complete]
    reports = RecordRandomizer(table.schema, "grr", eps).randomize(codes, gen)
    fitted = UniquenessModel(rng=gen).fit([Database(reports, codes.shape[0] / N, "reports")], N)
    p = np.asarray(fitted.score(codes, T=(1,), keep_pmf=False).p_unique, dtype=np.float64)
    note = ("" if complete.all() else
            f"{int((~complete).sum())} records with a missing QI were left out of the simulation")
    return LdpOption(target_error, eps, str(cal.certified_by), domain, float(p.mean()),
                     float((p > 0.5).mean()), note)


__all__ = ["CandidateRelease", "LdpOption", "SUPPRESSED", "candidate_release", "ldp_option"]
