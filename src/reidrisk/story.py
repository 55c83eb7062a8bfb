"""The main job on one real table: assess it, release it, collect it under LDP instead, and the
risk that remains. ``reidrisk demo`` runs it (``reidrisk demo --sweep``: the mechanism x budget
sweep of ``reidrisk.demo``).

One population throughout: the ``EXTRACT_ROWS`` people of the UCI Adult extract shipped in the
package (``reidrisk.data.adult.load_adult_extract``). The data holder's table is a simple random
sample of ``sample`` of them, holding their quasi-identifiers (QIs: age in 10-year bins, sex,
race, marital status, education) and two sensitive attributes (hours per week, income). Every
"truth" below is known because the whole population is known:

1. **Assess** (``reidrisk.assess``): k-anonymity, records at risk, expected re-identifications,
   the QIs that drive the risk, and how many of the table's records are unique in the population
   by the frequency estimators and paper 000's model, beside the true count.
2. **Release**: the k-anonymous release of the table (k from the risk threshold, 1 / 0.2 = 5) and
   the share of its rows the linkage attacks of paper 001 re-identify
   (``reidrisk.assess.next_steps.candidate_release``).
3. **Collect under LDP instead**: the largest whole-record budget whose PIE bound (paper 002)
   guarantees an attacker's identification error of at least ``target_error`` for ``sample``
   people. The collection randomizes each QI with k-ary randomized response at epsilon / g (paper
   004), an epsilon-LDP mechanism of the whole record, so the bound that certifies it is Prop. 4.1
   (any epsilon-LDP mechanism; ``reidrisk.pie.calibrate(..., "ldp")``). The same people's QIs are
   randomized at that budget, ``reidrisk.collect.CollectPipeline`` estimates every marginal and a
   3-way table, and each is scored against the table's truth (total variation distance) beside a
   uniform guess.
4. **The risk that remains**: a linkage attack on the randomized reports (an attacker who knows a
   person's QIs picks the report agreeing with them on the most QIs, ties at random), measured
   against PIE's guarantee; and paper 000's model fitted on the reports (``reidrisk.uniqueness``,
   the reports a sample at rate sample / population), predicting who is unique in the population,
   against the truth.

Each step is a function of the previous one's result (the same sample, the same k, the same
budget), gathered in a ``Story``; ``reidrisk.story_report`` writes it as HTML.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reidrisk.assess.next_steps import CandidateRelease, candidate_release
from reidrisk.assess.run import DEFAULT_THRESHOLD, Assessment, assess
from reidrisk.assess.table import PreparedTable, prepare_table
from reidrisk.collect import CollectPipeline, CollectWarning
from reidrisk.data.adult import load_adult_extract
from reidrisk.data.tables import contingency
from reidrisk.errors import ReidriskError
from reidrisk.mechanisms.record import RecordRandomizer, RecordReports
from reidrisk.pie import calibrate
from reidrisk.report.progress import Stage
from reidrisk.uniqueness import Database, UniquenessModel

QIS: tuple[str, ...] = ("age", "sex", "race", "marital-status", "education")
"""The quasi-identifiers: what an attacker may know about a person from elsewhere."""

SENSITIVE: tuple[str, ...] = ("hours-per-week", "income")
"""The sensitive attributes (hours per week is numeric, which the distance attacks need)."""

AGE_WIDTH = 10
"""Age is a QI in bins of this many years (``[20, 30)``, ...)."""

DEFAULT_SAMPLE = 3_000
"""People in the data holder's table (a few thousand keeps paper 000's model to seconds)."""

DEFAULT_TARGET_ERROR = 0.5
"""The identification error the LDP budget must guarantee: an attacker is wrong at least half the
time (a modest guarantee; higher targets leave budgets at which little can be estimated from a few
thousand reports, and the report says so when that happens)."""

TABLE_QIS: tuple[str, ...] = ("age", "marital-status", "education")
"""The 3-way contingency table estimated from the LDP reports."""


class StoryError(ReidriskError, ValueError):
    """A story parameter out of range (the message names it and its range)."""


@dataclass(frozen=True)
class Collection:
    """What the LDP collection estimated, scored against the truth of the table.

    Parameters
    ----------
    epsilon : float
        The whole-record budget (epsilon / g per QI).
    marginal_tv, uniform_tv : dict of str to float
        Per QI, the total variation distance of the estimated marginal and of a uniform guess to
        the true marginal of the table.
    table_cols : tuple of str
        The QIs of the 3-way table.
    table_tv, table_uniform_tv : float
        Its estimate's and a uniform guess's total variation distance to the truth.
    fallback : str
        The model's fallback (``"none"``, ``"independence"``, ``"uniform"``).
    """

    epsilon: float
    marginal_tv: dict[str, float]
    uniform_tv: dict[str, float]
    table_cols: tuple[str, ...]
    table_tv: float
    table_uniform_tv: float
    fallback: str


@dataclass(frozen=True)
class Remaining:
    """The re-identification risk left in the LDP reports.

    Parameters
    ----------
    link_rate : float
        Share of people whose own report an attacker knowing their QIs picks (measured).
    link_chance : float
        The same share for a blind guess, 1 / sample.
    p_unique : numpy.ndarray (n,)
        Paper 000's P(unique in the population) per person, from the reports.
    raw_p_unique : numpy.ndarray (n,) or None
        The same from the raw table (section 1), for comparison.
    truly_unique : numpy.ndarray (n,) of bool
        Whether the person is unique in the population (the truth).
    """

    link_rate: float
    link_chance: float
    p_unique: np.ndarray
    raw_p_unique: np.ndarray | None
    truly_unique: np.ndarray


@dataclass(frozen=True)
class Story:
    """Every step's result, on one population.

    Parameters
    ----------
    population : int
        People in the population (the extract).
    table : PreparedTable
        The data holder's table (the sample), encoded.
    truly_unique : numpy.ndarray (n,) of bool
        Per record, whether its QIs are unique in the population.
    assessment : Assessment
        Step 1.
    release : CandidateRelease
        Step 2.
    target_error : float
        The identification error asked of the LDP budget.
    collection : Collection
        Step 3.
    remaining : Remaining
        Step 4.
    seed : int
        The seed of every draw.
    seconds : dict of str to float
        Each step's wall time.
    """

    population: int
    table: PreparedTable
    truly_unique: np.ndarray
    assessment: Assessment
    release: CandidateRelease
    target_error: float
    collection: Collection
    remaining: Remaining
    seed: int
    seconds: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.table.n

    @property
    def k(self) -> int:
        """The k of the release: the class size below which a record is at risk."""
        return self.release.k_target


def _key(frame: pd.DataFrame, qis: Sequence[str]) -> pd.Series:
    """One text key per row of the QIs, age in ``AGE_WIDTH``-year bins (as ``prepare_table``)."""
    parts = [(frame[c] // AGE_WIDTH * AGE_WIDTH).astype(str) if c == "age" else frame[c].astype(str)
             for c in qis]
    return pd.concat(parts, axis=1).agg("|".join, axis=1)


def population_counts(population: pd.DataFrame, table: pd.DataFrame,
                      qis: Sequence[str] = QIS) -> np.ndarray:
    """Per row of ``table``, how many people of ``population`` share its QIs (age binned).

    Parameters
    ----------
    population, table : pandas.DataFrame
        The population and a table of some of its people (``table``'s rows are in
        ``population``).
    qis : sequence of str
        The QIs.

    Returns
    -------
    numpy.ndarray (len(table),) int64
        The population class size of each row (1: unique in the population).
    """
    sizes = _key(population, qis).value_counts()
    return _key(table, qis).map(sizes).fillna(0).to_numpy(np.int64)


def link_reports(codes: np.ndarray, reports: np.ndarray, rng: np.random.Generator) -> float:
    """Share of people whose own report is the one agreeing with their QIs on the most values.

    The attacker knows each person's true QIs and holds all reports (row i is person i's); for
    each person they pick, among the reports with the most agreeing QIs, one at random.

    Parameters
    ----------
    codes, reports : numpy.ndarray (n, g)
        The true QI codes and the reported codes, row-aligned.
    rng : numpy.random.Generator
        Breaks the ties.

    Returns
    -------
    float
        The share of people linked to their own report.
    """
    n = codes.shape[0]
    hits = 0
    block = max(1, 4_000_000 // max(n * codes.shape[1], 1))
    for start in range(0, n, block):  # blocks of people keep the (block, n) matrix small
        rows = codes[start:start + block]
        agree = (rows[:, None, :] == reports[None, :, :]).sum(axis=2).astype(np.float64)
        agree += rng.random(agree.shape) * 0.5  # a random order among equal agreements
        hits += int((agree.argmax(axis=1) == np.arange(start, start + rows.shape[0])).sum())
    return hits / n


def _collect(table: PreparedTable, epsilon: float, rng: np.random.Generator
             ) -> tuple[Collection, RecordReports]:
    """Randomize the table's QIs at ``epsilon``, fit the collection model, score it."""
    import warnings

    schema, codes = table.schema, table.codes
    reports = RecordRandomizer(schema, "grr", epsilon).randomize(codes, rng)
    with warnings.catch_warnings():  # the fallback is reported in the section, not as a warning
        warnings.simplefilter("ignore", CollectWarning)
        model = CollectPipeline().fit(reports)
    sizes = [a.size for a in schema]
    tv = lambda p, q: float(0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum())  # noqa: E731
    marg, unif = {}, {}
    for j, attr in enumerate(schema):
        truth = contingency(codes, sizes, [j])
        marg[attr.name] = tv(model.marginals[j], truth)
        unif[attr.name] = tv(np.full(attr.size, 1 / attr.size), truth)
    cols = [table.qis.index(c) for c in TABLE_QIS]
    truth = contingency(codes, sizes, cols)
    est = model.table(cols)
    collection = Collection(float(epsilon), marg, unif, TABLE_QIS, tv(est, truth),
                            tv(np.full(truth.shape, 1 / truth.size), truth),
                            str(model.fallback))
    return collection, reports


def run_story(sample: int = DEFAULT_SAMPLE, target_error: float = DEFAULT_TARGET_ERROR,
              seed: int = 0, progress: bool = True,
              log: Callable[[str], None] | None = None) -> Story:
    """Run the four steps (module doc) on the shipped Adult extract.

    Parameters
    ----------
    sample : int
        People in the data holder's table, 200 to ``EXTRACT_ROWS``.
    target_error : float
        The identification error the LDP budget must guarantee, in (0, 1).
    seed : int
        The seed of every draw (the sample, the attacks' ties, the randomization, the models).
    progress : bool
        Show each step's elapsed time on standard error while it runs (``Stage``).
    log : callable, optional
        Called with a line as each step starts.

    Returns
    -------
    Story
        Every step's result.

    Raises
    ------
    StoryError
        When ``sample`` or ``target_error`` is out of range, or no budget certifies the target.
    """
    people = load_adult_extract()
    if not 200 <= int(sample) <= len(people):
        raise StoryError(f"--sample {sample} is out of range: the table is a sample of 200 to "
                         f"{len(people):,} of the extract's people")
    if not 0 < float(target_error) < 1:
        raise StoryError(f"--target-error {target_error} is out of range: pass a value in (0, 1), "
                         "e.g. 0.8")
    say = log or (lambda line: None)
    seq = np.random.SeedSequence(seed)
    rng_sample, rng_release, rng_ldp, rng_link, rng_model = (np.random.default_rng(s)
                                                             for s in seq.spawn(5))
    seconds: dict[str, float] = {}

    def stage(name: str):
        say(name)
        return Stage(name, enabled=progress)

    t0 = time.perf_counter()
    with stage(f"1/4 assessing {int(sample):,} records (population {len(people):,})"):
        frame = people.iloc[np.sort(rng_sample.choice(len(people), int(sample), replace=False))]
        frame = frame.reset_index(drop=True)
        table = prepare_table(frame, list(QIS), list(SENSITIVE), bins={"age": AGE_WIDTH},
                              source="the Adult extract")
        unique = population_counts(people, frame) == 1
        result = assess(table, population=len(people), rng=int(rng_model.integers(2**31)))
    seconds["assess"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    k = int(round(1 / DEFAULT_THRESHOLD))
    with stage(f"2/4 a {k}-anonymous release, attacked"):
        release = candidate_release(table, k, rng_release)
    seconds["release"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    domain = int(np.prod([a.size for a in table.schema]))
    epsilon = float(calibrate(float(target_error), table.n, domain, "ldp").epsilon)
    with stage(f"3/4 collecting the QIs under LDP at epsilon {epsilon:.3g}"):
        collection, reports = _collect(table, epsilon, rng_ldp)
    seconds["collect"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with stage("4/4 the risk left in the reports (linkage, paper 000's model)"):
        link = link_reports(table.codes, np.column_stack(reports.reports), rng_link)
        fitted = UniquenessModel(rng=rng_model).fit(
            [Database(reports, table.n / len(people), "reports")], len(people))
        p = np.asarray(fitted.score(table.codes, T=(1,), keep_pmf=False).p_unique, np.float64)
    seconds["remaining"] = time.perf_counter() - t0
    remaining = Remaining(link, 1 / table.n, p, result.p_unique, unique)
    return Story(len(people), table, unique, result, release, float(target_error), collection,
                 remaining, int(seed), seconds)


__all__ = ["AGE_WIDTH", "Collection", "DEFAULT_SAMPLE", "DEFAULT_TARGET_ERROR", "QIS", "Remaining",
           "SENSITIVE", "Story", "StoryError", "TABLE_QIS", "link_reports", "population_counts",
           "run_story"]
