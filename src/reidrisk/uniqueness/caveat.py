"""When P(unique) under LDP is not calibrated: the measured reliability gap by epsilon, and the
caveat the uniqueness CLI prints where that gap is above ``GAP_LIMIT``.

Design: docs/design/uniqueness.md#model. Without a raw database the prior of the counts is
calibrated on a population simulated from the fitted world, and how clumped the population is beyond
what the world captures cannot be read from LDP reports; the reliability of P(X = 1) was measured
per epsilon (``benchmarks/uniqueness_accuracy.py``). The table below copies those measurements so
that an installed package (without docs/) can state them; ``tests/uniqueness/test_caveat.py``
checks it against ``RESULTS_FILES`` whenever they are present.
"""

from __future__ import annotations

from collections.abc import Mapping

GAP_LIMIT = 0.1
"""Largest reliability gap of P(X = 1) (mean prediction against observed share unique, over bins
with >= 50 records) under which P(unique) is read as a probability without a caveat."""

RESULTS_FILES = ("docs/results/uniqueness.json", "docs/results/uniqueness_epsilon_targets.json")
"""Where ``MEASURED_GAPS`` comes from: the points of these benchmark outputs with
``dataset == "adult"``, ``private``, ``metric == "calibration_max_gap"`` and ``method``
``"reidrisk, <world> world"``, either the default point (epsilon = 1; it has no ``sweep`` key) or
the epsilon sweep (``sweep == "epsilon"``). At each epsilon the number is the point measured on
the most records (``params["records"]``), a tie going to the earlier file: one number per
epsilon, the better-measured one. At the committed results: epsilon = 1 the default point of
uniqueness.json (10 seeds x 1,000 records; the targets run's sweep point has as many), 2 and 10
the targets run's sweep (10 seeds), the others uniqueness.json's sweep (2 seeds)."""

RESULTS_FILE = RESULTS_FILES[0]
"""The main benchmark output of ``RESULTS_FILES`` (where a point not in ``MEASURED_SOURCES`` is
said to come from)."""

MEASURED_DATASET = "UCI Adult"

MEASURED_GAPS: Mapping[str, Mapping[float, float]] = {
    # world -> {epsilon per attribute: largest reliability gap}; Adult, paper 000's 9 attributes,
    # one 10 % database randomized with k-RR; epsilon = 1, 2 and 10 from
    # docs/results/uniqueness_epsilon_targets.md (10 seeds), elsewhere the epsilon sweep of
    # docs/results/uniqueness.md (2 seeds; noisier: compare with the calibrated predictor's gap
    # that page reports at each point)
    "latent": {0.1: 0.754, 0.3: 0.672, 0.5: 0.34, 1.0: 0.151, 2.0: 0.257, 3.0: 0.346, 5.0: 0.119,
               10.0: 0.206},
    "copula": {0.1: 0.793, 0.3: 0.83, 0.5: 0.695, 1.0: 0.472, 2.0: 0.468, 3.0: 0.462, 5.0: 0.378,
               10.0: 0.461},
}

MEASURED_SOURCES: Mapping[float, str] = {
    0.1: RESULTS_FILES[0], 0.3: RESULTS_FILES[0], 0.5: RESULTS_FILES[0], 1.0: RESULTS_FILES[0],
    2.0: RESULTS_FILES[1], 3.0: RESULTS_FILES[0], 5.0: RESULTS_FILES[0], 10.0: RESULTS_FILES[1],
}
"""The file of ``RESULTS_FILES`` each epsilon's gaps in ``MEASURED_GAPS`` come from (both worlds
come from the same run at each epsilon)."""


def measured_gap(epsilon: float, world: str = "latent",
                 table: Mapping[str, Mapping[float, float]] | None = None) -> tuple[float, float]:
    """The measured reliability gap that speaks for ``epsilon`` per attribute in ``world``'s row.

    A measured epsilon gives its own gap. Between two measured points the larger of their two
    gaps (the gap is not monotone in epsilon, so the conservative neighbour is used), reported
    with that neighbour's epsilon; below the smallest or above the largest measured epsilon, that
    end point's gap.

    Parameters
    ----------
    epsilon : float
        The budget per attribute.
    world : {"latent", "copula"}
        The world the prior was simulated from (a row of the table).
    table : mapping, optional
        {world: {epsilon: gap}} (default ``MEASURED_GAPS``).

    Returns
    -------
    epsilon : float
        The measured epsilon whose gap is used.
    gap : float
        Its largest reliability gap of P(X = 1).

    Raises
    ------
    KeyError
        For a world that has no row in the table.
    """
    row = (MEASURED_GAPS if table is None else table)[world]
    eps = sorted(row)
    e = float(epsilon)
    if e in row:
        return e, float(row[e])
    if e < eps[0]:
        return eps[0], float(row[eps[0]])
    if e > eps[-1]:
        return eps[-1], float(row[eps[-1]])
    hi = next(x for x in eps if x > e)
    lo = max(x for x in eps if x < e)
    pick = lo if row[lo] >= row[hi] else hi
    return pick, float(row[pick])


def ldp_caveat(epsilon: float, world: str = "latent",
               table: Mapping[str, Mapping[float, float]] | None = None) -> str | None:
    """The note the CLI prints after scoring databases that are all LDP reports.

    The databases were randomized with ``epsilon`` per attribute (the smallest over attributes
    and databases), and the prior simulated from the fitted ``world``.

    Parameters
    ----------
    epsilon : float
        The smallest budget per attribute over attributes and databases.
    world, table
        As in ``measured_gap``.

    Returns
    -------
    str or None
        The note, naming the measured point and its gap; None where the measured gap is
        <= ``GAP_LIMIT``.
    """
    at, gap = measured_gap(epsilon, world, table)
    if gap <= GAP_LIMIT:
        return None
    e, measured = float(epsilon), sorted((MEASURED_GAPS if table is None else table)[world])
    where = f"epsilon = {at:g} per attribute" + (
        "" if at == e else
        f", the measured point nearest to {e:g}" if e < measured[0] or e > measured[-1] else
        f", the worse of the two measured points around {e:g}")
    return (
        f"Note: no database holds raw records, so the counts' prior was calibrated on a population "
        f"simulated from the fitted model (the {world} world), and P(unique) is not calibrated at "
        f"this budget: "
        f"on {MEASURED_DATASET} with k-RR at {where}, the mean predicted P(unique) and the observed "
        f"share unique differed by up to {gap:.2f} (above {GAP_LIMIT:g}; "
        f"{MEASURED_SOURCES.get(at, RESULTS_FILE)}). Rank "
        f"records by it rather than reading it as a probability, or add a raw sample "
        f"(--db FILE:RATE) to calibrate it."
    )


__all__ = ["GAP_LIMIT", "MEASURED_GAPS", "MEASURED_SOURCES", "RESULTS_FILE", "RESULTS_FILES",
           "ldp_caveat", "measured_gap"]
