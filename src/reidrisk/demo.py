"""The main job: a simulated LDP collection with missing values, scored against the truth.

``run_demo`` takes a population (the built-in synthetic one, or the user's file and schema), removes
values completely at random, and then for every mechanism and every budget

1. randomizes every record on the "client side" (``RecordRandomizer``; paper 004 Algorithm 1: every
   present attribute j is randomized with budget epsilon / g, missing values stay missing),
2. estimates every single-attribute distribution (EM of paper 004 eq. 8-11 as corrected in
   docs/design/core.md#count-em-correction, and the norm-sub projection of the inversion, eq. 6) and
   every pairwise distribution (pair EM on the Gram counts, paper 004 eq. 12-13),
3. scores the estimates against the true tables of the data the clients hold, over present values
   only: Jensen-Shannon divergence in bits (paper 004 Section 5.1) and total variation distance.

The results go to an HTML report (``reidrisk.report``; the demo's sections are built in
``reidrisk.demo_report``) and a terminal summary.

Budgets
-------
``epsilons`` are whole-record budgets (docs/design/core.md#conventions), split evenly over the g
attributes as in the paper. The default sweep 1..16 with the default g = 6 attributes is 0.17..2.7
per attribute: from budgets at which the estimates of the larger domains are barely better than a
uniform guess to budgets at which every marginal and pair is close to the truth, so the curves show
the whole range. The paper's default (epsilon = 5 over 10 binary attributes) is 0.5 per attribute.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk import __version__
from reidrisk.data.io import read_encoded, read_table
from reidrisk.data.missing import mcar
from reidrisk.data.synthetic import make_population
from reidrisk.data.tables import contingency
from reidrisk.estimation.frequency import estimate_marginals
from reidrisk.estimation.information import js_divergence
from reidrisk.estimation.pairs import estimate_pairs
from reidrisk.mechanisms import MECHANISMS, RecordRandomizer
from reidrisk.mechanisms.base import MechanismError, check_epsilon
from reidrisk.schema import MISSING, Schema, SchemaError

DEFAULT_EPSILONS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
"""Whole-record budgets of the default sweep (epsilon / g per attribute)."""

DEFAULT_SIZES: tuple[int, ...] = (2, 3, 5, 8, 12, 16)
"""Domain sizes of the built-in synthetic population's attributes."""

DEFAULT_N = 20_000
DEFAULT_MISSING_RATE = 0.3
DEFAULT_DEPENDENCE = 0.5
REPORT_TITLE = "reidrisk demo: private collection and re-identification risk on one population"
"""Title of the demo report: every capability adds its sections to the same report."""

UNIQUENESS_POPULATION = 10_000
"""People of the uniqueness section's population (a random subset of the complete records). Paper 000 is about
populations in which a share of people is unique: 10,000 people with the default 6 attributes
leave about 17% unique, where accuracy still tells methods apart (with 20,000, 89% share their
values and always answering "not unique" is hard to beat in accuracy)."""

UNIQUENESS_RATE = 0.2
"""Sampling rate of the uniqueness section's one raw database (2,000 of the 10,000 people)."""

METHODS: tuple[str, ...] = ("em", "norm_sub")
"""Marginal estimators compared; pairs use the pair EM."""

PAIR_METHOD = "em"
MARGINAL_METHODS: tuple[str, ...] = ("em", "norm_sub", "exact_em")
"""Estimators ``run_demo`` accepts: those that return distributions (the raw inversion may not)."""


@dataclass(frozen=True)
class Measurement:
    """Error of one estimator for one mechanism at one budget.

    Parameters
    ----------
    mechanism : str
        Registry name of the mechanism (``reidrisk.mechanisms.MECHANISMS``).
    epsilon : float
        Whole-record budget.
    target : str
        ``"marginal"`` (mean over the g attributes) or ``"pair"`` (mean over the g (g - 1) / 2
        pairs).
    method : str
        The estimator.
    js : float
        Mean Jensen-Shannon divergence in bits (0..1).
    js_max : float
        The worst attribute's or pair's Jensen-Shannon divergence.
    tv : float
        Mean total variation distance (0..1).
    """

    mechanism: str
    epsilon: float
    target: str
    method: str
    js: float
    js_max: float
    tv: float


@dataclass(frozen=True)
class DemoResult:
    """What ``run_demo`` computed and where it wrote the report (the codes are not kept).

    Parameters
    ----------
    schema : Schema
        The collected attributes.
    n : int
        Records.
    source : str
        Where the records came from, in words.
    missing : numpy.ndarray
        Share of missing values per attribute, shape (g,).
    epsilons : tuple of float
        Whole-record budgets, ascending.
    mechanisms : tuple of str
        Registry names of the mechanisms compared.
    methods : tuple of str
        Marginal estimators compared.
    measurements : tuple of Measurement
        One per mechanism, budget, target and estimator.
    reference : mapping of str to float
        Errors of a uniform guess: ``"marginal"`` and ``"pair"`` (mean JS divergence, bits),
        ``"marginal_tv"`` and ``"pair_tv"`` (mean total variation distance).
    truth : tuple of numpy.ndarray
        The true marginal distributions over present values, one array (f_j,) per attribute.
    examples : mapping
        The estimated marginals at ``plot_epsilon``: ``examples[mechanism][method]`` is a tuple
        of g arrays.
    plot_epsilon : float
        The budget whose estimates the report draws.
    timings : mapping of str to float
        Seconds per mechanism (all budgets: randomize and estimate).
    parameters : mapping of str to object
        The run's parameters as the report lists them.
    seconds : float
        Wall time of the run.
    out, report : Path, optional
        The report's folder and its ``index.html`` (``None`` without a report).
    extra_sections : tuple of reidrisk.report.Section
        The other capabilities' sections of the report.
    """

    schema: Schema
    n: int
    source: str
    missing: np.ndarray
    epsilons: tuple[float, ...]
    mechanisms: tuple[str, ...]
    methods: tuple[str, ...]
    measurements: tuple[Measurement, ...]
    reference: Mapping[str, float]
    truth: tuple[np.ndarray, ...]
    examples: Mapping[str, Mapping[str, tuple[np.ndarray, ...]]]
    plot_epsilon: float
    timings: Mapping[str, float]
    parameters: Mapping[str, object]
    seconds: float = 0.0
    out: Path | None = None
    report: Path | None = None
    extra_sections: tuple = ()

    @property
    def g(self) -> int:
        return len(self.schema)

    def table(self) -> pd.DataFrame:
        """All measurements in long format (one row per mechanism, epsilon, target, method).

        Returns
        -------
        pandas.DataFrame
            The measurements.
        """
        return pd.DataFrame([dataclasses.asdict(m) for m in self.measurements])

    def error(self, mechanism: str, epsilon: float, target: str = "marginal", method: str = "em",
              metric: str = "js") -> float:
        """One number of the table, e.g. ``error("grr", 4.0, "pair")``.

        Parameters
        ----------
        mechanism : str
            Registry name of the mechanism.
        epsilon : float
            Whole-record budget (compared with ``math.isclose``).
        target : str
            ``"marginal"`` or ``"pair"``.
        method : str
            The estimator.
        metric : str
            ``"js"``, ``"js_max"`` or ``"tv"`` (a field of ``Measurement``).

        Returns
        -------
        float
            The measured error.

        Raises
        ------
        KeyError
            When the run has no such measurement.
        """
        for m in self.measurements:
            if (m.mechanism, m.target, m.method) == (mechanism, target, method) and \
                    math.isclose(m.epsilon, epsilon):
                return float(getattr(m, metric))
        raise KeyError(f"no measurement for {mechanism!r} at epsilon={epsilon!r}, {target}/{method}")

    def summary(self) -> str:
        """A compact text table: mechanism x epsilon -> mean JS divergence (EM) of the marginals
        and of the pairs.

        Returns
        -------
        str
            The table's lines.
        """
        eps_head = "".join(f"{_fmt_eps(e):>9}" for e in self.epsilons)
        width = max(len("pairs of attributes"), *(len(m) for m in self.mechanisms)) + 2
        lines = [
            f"n = {self.n} records, g = {self.g} attributes ({self.source}); "
            f"missing {_pct(float(self.missing.mean()))} of values",
            "Mean Jensen-Shannon divergence (bits) between true and estimated distributions (EM);",
            f"epsilon = budget of a whole record (epsilon / {self.g} per attribute).",
        ]
        marginal_method = "em" if "em" in self.methods else self.methods[0]
        for target, label in (("marginal", "single attributes"), ("pair", "pairs of attributes")):
            lines.append("")
            lines.append(f"{label:<{width}}{eps_head}")
            for mech in self.mechanisms:
                method = marginal_method if target == "marginal" else PAIR_METHOD
                vals = "".join(f"{self.error(mech, e, target, method):>9.4f}" for e in self.epsilons)
                lines.append(f"{mech:<{width}}{vals}")
            lines.append(f"{'(uniform)':<{width}}" + f"{self.reference[target]:>9.4f}" * len(self.epsilons))
        return "\n".join(lines)

    def sections(self) -> list:
        """The report sections of this run (see ``reidrisk.report``).

        Returns
        -------
        list of reidrisk.report.Section
            The sections.
        """
        return demo_sections(self)


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _rng(entropy: int, *labels: object) -> np.random.Generator:
    """An independent stream per purpose: the same seed and labels always give the same draws, and
    adding a mechanism or budget to a run does not change the others' draws."""
    words = [zlib.crc32(str(lab).encode()) for lab in labels]
    return np.random.default_rng(np.random.SeedSequence([entropy, *words]))


def _load_schema(schema: Schema | str | Path | None) -> Schema | None:
    if schema is None or isinstance(schema, Schema):
        return schema
    path = Path(schema)
    if not path.is_file():
        raise FileNotFoundError(f"schema file {str(path)!r} does not exist; check the path or create "
                                "one with `reidrisk schema infer DATA -o schema.json`")
    return Schema.load(path)


def _prepare(data, schema, n, missing_rate, sizes, dependence, entropy, log
             ) -> tuple[Schema, np.ndarray, str, float, np.ndarray]:
    """(schema, codes, source, injected missing rate, codes before the injection) ready for
    collection."""
    if data is None:
        if schema is not None:
            raise SchemaError("a schema was given without data; pass the data it describes, or "
                              "neither to use the built-in synthetic population")
        n = DEFAULT_N if n is None else n
        rate = DEFAULT_MISSING_RATE if missing_rate is None else missing_rate
        pop = make_population(n, sizes, dependence=dependence, rng=_rng(entropy, "population"))
        codes = pop.codes
        if rate > 0:
            codes = mcar(codes, rate, _rng(entropy, "missing"))
        source = (f"synthetic population, domain sizes {list(sizes)}, dependence {dependence:g}, "
                  f"{_pct(rate)} of values missing completely at random")
        return pop.schema, np.asarray(codes, dtype=np.int32), source, rate, pop.codes

    schema = _load_schema(schema)
    if isinstance(data, np.ndarray):
        if schema is None:
            raise SchemaError("encoded data (an integer matrix) needs its schema; pass schema=")
        codes = schema.validate_codes(data)
        source = f"encoded matrix of {codes.shape[0]} records"
    elif isinstance(data, pd.DataFrame):
        if schema is None:
            schema = Schema.infer(data)
            log(f"Inferred a schema of {len(schema)} attributes from the data frame")
        codes = schema.encode(data)
        source = f"data frame of {len(data)} records"
    else:
        path = Path(data)
        if not path.is_file():
            raise FileNotFoundError(f"data file {str(path)!r} does not exist; pass the path of a CSV "
                                    "or Parquet file")
        if schema is None:
            frame = read_table(path)
            if len(frame) == 0:
                raise SchemaError(f"data file {str(path)!r} has a header but no rows; nothing to collect")
            schema = Schema.infer(frame)
            log(f"Inferred a schema of {len(schema)} attributes from {path.name} "
                "(save and review one with `reidrisk schema infer`)")
            codes = schema.encode(frame)
        else:
            codes = read_encoded(path, schema)
        source = f"{path.name}"
    if n is not None and n < codes.shape[0]:
        rows = np.sort(_rng(entropy, "sample").choice(codes.shape[0], size=n, replace=False))
        codes = codes[rows]
        source += f", random sample of {n} records"
    rate = 0.0 if missing_rate is None else missing_rate
    before = codes
    if rate > 0:
        codes = mcar(codes, rate, _rng(entropy, "missing"))
        source += f", plus {_pct(rate)} of values removed completely at random"
    return schema, np.asarray(codes, dtype=np.int32), source, rate, before


def _check_present(schema: Schema, codes: np.ndarray) -> None:
    if len(schema) < 2:
        raise SchemaError(f"the demo needs at least 2 attributes (it estimates every pair); the "
                          f"schema has only {schema.names}. Add another column to the schema")
    present = (codes != MISSING).sum(axis=0)
    empty = [schema.names[j] for j in np.flatnonzero(present == 0)]
    if empty:
        raise SchemaError(f"column(s) {empty} have no present values; drop them from the schema")
    both = (codes != MISSING).astype(np.int64)
    co = both.T @ both
    g = len(schema)
    bad = [(schema.names[a], schema.names[b]) for a in range(g) for b in range(a + 1, g) if co[a, b] == 0]
    if bad:
        raise SchemaError(f"no record has both attributes of the pair(s) {bad[:3]}; their joint "
                          "distribution cannot be estimated. Drop one attribute of each pair")


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------
def _js(p: np.ndarray, q: np.ndarray) -> float:
    return float(js_divergence(np.ravel(p), np.ravel(q), base=2))


def _tv(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance 1/2 sum |p - q| of two distributions."""
    return float(0.5 * np.abs(np.ravel(p) - np.ravel(q)).sum())


def _pair_table(estimates, pair: tuple[int, int]) -> np.ndarray:
    return np.asarray(estimates[pair], dtype=np.float64)


def _score(mech, eps, target, method, truths, ests) -> Measurement:
    js = np.array([_js(t, e) for t, e in zip(truths, ests)])
    tv = np.array([_tv(t, e) for t, e in zip(truths, ests)])
    return Measurement(mech, float(eps), target, method, float(js.mean()), float(js.max()),
                       float(tv.mean()))


# ---------------------------------------------------------------------------------------------
# the job
# ---------------------------------------------------------------------------------------------
def run_demo(
    data: str | Path | pd.DataFrame | np.ndarray | None = None,
    schema: Schema | str | Path | None = None,
    out: str | Path | None = "reidrisk-report",
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    mechanisms: Sequence[str] | None = None,
    n: int | None = None,
    missing_rate: float | None = None,
    seed: int | None = 0,
    progress: bool = True,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    dependence: float = DEFAULT_DEPENDENCE,
    methods: Sequence[str] = METHODS,
    plot_epsilon: float | None = None,
    log: Callable[[str], None] | None = None,
) -> DemoResult:
    """Simulate an LDP collection with missing values and score the server's estimates.

    Parameters
    ----------
    data : str, Path, pandas.DataFrame, numpy.ndarray or None
        ``None`` for the built-in synthetic population (``n`` records, default 20000, with domain
        sizes ``sizes`` and pairwise ``dependence``), or a CSV/Parquet path, a DataFrame, or an
        encoded (n, g) int matrix.
    schema : Schema, str or Path, optional
        A ``Schema`` or a schema JSON path for that data (inferred from a file or frame when
        omitted).
    out : str or Path, optional
        Report folder (written atomically), or ``None`` for no report.
    epsilons : sequence of float
        Whole-record budgets, split evenly over the attributes.
    mechanisms : sequence of str, optional
        Registry names (default: all in ``reidrisk.mechanisms.MECHANISMS``).
    n : int, optional
        Records of the synthetic population; with ``data`` given, samples that many rows.
    missing_rate : float, optional
        Share of values removed completely at random before collection (default 0.3 for the
        synthetic population, 0 for user data, which keeps its own missing values).
    seed : int, optional
        All random draws; ``None`` draws fresh entropy (recorded in ``parameters``).
    progress : bool
        Progress on stderr (a bar on a terminal, plain lines every few seconds otherwise:
        ``reidrisk.report.progress``).
    sizes : sequence of int
        Domain sizes of the synthetic population.
    dependence : float
        Pairwise dependence of the synthetic population.
    methods : sequence of str
        Marginal estimators.
    plot_epsilon : float, optional
        The budget whose estimates are drawn (the nearest of ``epsilons`` in log scale; default:
        the middle one).
    log : callable, optional
        Receives one-line status messages.

    Returns
    -------
    DemoResult
        The measurements, the true and estimated distributions, and the report's path when one
        was written.
    """
    t0 = time.perf_counter()
    log = log or (lambda msg: None)
    eps_list, mech_names, methods = _check_arguments(epsilons, mechanisms, methods, n, missing_rate)
    seed_seq = np.random.SeedSequence(seed)
    entropy = int(seed_seq.entropy)  # type: ignore[arg-type]  # an int: seeded by an int or fresh

    schema, codes, source, rate, before = _prepare(data, schema, n, missing_rate, tuple(sizes),
                                                   dependence, entropy, log)
    _check_present(schema, codes)
    truth = _Truth.of(schema, codes)
    plot_epsilon = _shown_budget(eps_list, plot_epsilon)
    measurements, examples, timings = _collect_and_score(
        schema, codes, truth, mech_names, eps_list, methods, plot_epsilon, entropy, progress)
    result = DemoResult(
        schema=schema,
        n=codes.shape[0],
        source=source,
        missing=(codes == MISSING).mean(axis=0),
        epsilons=eps_list,
        mechanisms=mech_names,
        methods=methods,
        measurements=tuple(measurements),
        reference=truth.reference,
        truth=truth.marginals,
        examples=examples,
        plot_epsilon=float(plot_epsilon),
        timings=timings,
        parameters=_parameters(seed if seed is not None else entropy, schema, codes, source, rate,
                               eps_list, mech_names, methods, plot_epsilon),
    )
    if out is not None:
        extra = _capability_sections(schema, codes, before, entropy, log, progress)
        from reidrisk.report.progress import Stage  # jinja2 (reidrisk.report): only with a report

        with Stage("writing the report", enabled=progress):
            result = _write(dataclasses.replace(result, extra_sections=extra), out, t0, log)
    return dataclasses.replace(result, seconds=time.perf_counter() - t0)


def _check_arguments(epsilons, mechanisms, methods, n, missing_rate
                     ) -> tuple[tuple[float, ...], tuple[str, ...], tuple[str, ...]]:
    """(budgets sorted, mechanism names, marginal estimators), each checked and without repeats;
    ``n`` and ``missing_rate`` checked."""
    eps_list = tuple(sorted({check_epsilon(e, "epsilon") for e in epsilons}))
    if not eps_list:
        raise MechanismError("no budget given; pass at least one epsilon > 0")
    mech_names = tuple(dict.fromkeys(m.lower() for m in (mechanisms or MECHANISMS)))
    unknown = [m for m in mech_names if m not in MECHANISMS]
    if unknown:
        raise MechanismError(f"unknown mechanism(s) {unknown}; choose from {list(MECHANISMS)}")
    methods = tuple(dict.fromkeys(methods))
    bad = [m for m in methods if m not in MARGINAL_METHODS]
    if not methods or bad:
        raise ValueError(f"methods must name marginal estimators among {list(MARGINAL_METHODS)}, "
                         f"got {list(methods)}")
    if missing_rate is not None and not (0.0 <= float(missing_rate) < 1.0):
        raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate!r}")
    if n is not None and (isinstance(n, bool) or int(n) != n or n < 2):
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    return eps_list, mech_names, methods


@dataclass(frozen=True)
class _Truth:
    """The true tables of the answers the clients hold, and the errors of a uniform guess."""

    pairs: tuple[tuple[int, int], ...]
    marginals: tuple[np.ndarray, ...]
    pair_tables: tuple[np.ndarray, ...]
    reference: Mapping[str, float]

    @classmethod
    def of(cls, schema: Schema, codes: np.ndarray) -> _Truth:
        g, sizes = len(schema), schema.sizes
        pairs = tuple((a, b) for a in range(g) for b in range(a + 1, g))
        marginals = tuple(contingency(codes, sizes, [j]) for j in range(g))
        tables = tuple(contingency(codes, sizes, [a, b]) for a, b in pairs)

        def uniform(metric, truths) -> float:
            return float(np.mean([metric(t, np.full(t.shape, 1.0 / t.size)) for t in truths]))

        reference = {"marginal": uniform(_js, marginals), "pair": uniform(_js, tables),
                     "marginal_tv": uniform(_tv, marginals), "pair_tv": uniform(_tv, tables)}
        return cls(pairs, marginals, tables, reference)


def _shown_budget(eps_list: tuple[float, ...], wanted: float | None) -> float:
    """The budget whose estimates are drawn: the nearest of ``eps_list`` to ``wanted`` in log scale,
    the middle one by default."""
    if wanted is None:
        return eps_list[len(eps_list) // 2]
    return min(eps_list, key=lambda e: abs(math.log(e) - math.log(wanted)))


def _collect_and_score(schema, codes, truth: _Truth, mech_names, eps_list, methods, plot_epsilon,
                       entropy, progress):
    """Randomize, estimate and score every (mechanism, budget): (measurements, the marginal
    estimates at ``plot_epsilon`` per mechanism and estimator, seconds per mechanism)."""
    measurements: list[Measurement] = []
    examples: dict[str, dict[str, tuple[np.ndarray, ...]]] = {}
    timings: dict[str, float] = {m: 0.0 for m in mech_names}
    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report.progress import Progress

    bar = Progress(len(mech_names) * len(eps_list), "collect + estimate", unit="runs",
                   enabled=progress)
    try:
        for mech in mech_names:
            for eps in eps_list:
                t = time.perf_counter()
                reports = RecordRandomizer(schema, mech, eps).randomize(codes, _rng(entropy, mech, eps))
                em_marginals = None
                for method in methods:
                    fitted = estimate_marginals(reports, method)
                    if method == PAIR_METHOD:
                        em_marginals = fitted  # the pair EM starts from these; no need to refit
                    ests = [e.probs for e in fitted]
                    measurements.append(_score(mech, eps, "marginal", method, truth.marginals, ests))
                    if eps == plot_epsilon:
                        examples.setdefault(mech, {})[method] = tuple(ests)
                pair_est = estimate_pairs(reports, estimator=PAIR_METHOD, marginals=em_marginals)
                ests = [_pair_table(pair_est, p) for p in truth.pairs]
                measurements.append(_score(mech, eps, "pair", PAIR_METHOD, truth.pair_tables, ests))
                timings[mech] += time.perf_counter() - t
                bar.update(note=f"{mech} eps={_fmt_eps(eps)}")
    finally:
        bar.close()
    return measurements, examples, timings


def _parameters(seed, schema, codes, source, rate, eps_list, mech_names, methods, plot_epsilon
                ) -> dict[str, object]:
    """The run's parameters as the report lists them."""
    g = len(schema)
    return {
        "seed": seed,
        "records": codes.shape[0],
        "attributes": g,
        "data": source,
        "missing rate injected": f"{rate:g}",
        "epsilons (whole record)": ", ".join(_fmt_eps(e) for e in eps_list),
        "epsilon per attribute": "epsilon / g = " + ", ".join(f"{e / g:.3g}" for e in eps_list),
        "mechanisms": ", ".join(mech_names),
        "marginal estimators": ", ".join(methods),
        "pair estimator": PAIR_METHOD,
        "distributions shown at epsilon": _fmt_eps(plot_epsilon),
        **_versions(),
    }


# ---------------------------------------------------------------------------------------------
# the other capabilities' sections, each on the same population
# ---------------------------------------------------------------------------------------------
def _capability_sections(schema: Schema, codes: np.ndarray, before: np.ndarray, entropy: int,
                         log: Callable[[str], None], progress: bool = True) -> tuple:
    """The sections the collection, uniqueness, linkage and PIE capabilities add to the report,
    in that order (a section is left out when the data cannot support it); each shows its running
    time while it runs (``reidrisk.report.progress.Stage``) when ``progress``."""
    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report.progress import Stage

    steps = (("collection", lambda: _collect_section(schema, codes, entropy, log)),
             ("uniqueness", lambda: _uniqueness_section(schema, before, entropy, log)),
             ("linkage", lambda: _linkage_section(entropy, log)),
             ("PIE", lambda: _pie_section(schema, codes.shape[0], log)))
    sections = []
    for i, (name, make) in enumerate(steps, 1):
        with Stage(f"report section {i}/{len(steps)}, {name}", enabled=progress):
            sections.append(make())
    return tuple(s for s in sections if s is not None)


def _collect_section(schema, codes, entropy, log):
    """Paper 004 Fig. 10: the true and estimated table of every collection method."""
    if len(schema) < 2:
        return None
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.report import demo_collect_section

    log("Comparing the collection methods on one contingency table")
    return demo_collect_section(schema, codes, missing_rate=0.0, seed=entropy)


def _uniqueness_section(schema, before, entropy, log):
    """Paper 000: who is unique in the population?

    The people exist with all their values (the values removed before collection are a property
    of the collection, not of the people), so the population is the complete records before that
    removal, at most ``UNIQUENESS_POPULATION`` of them.
    """
    complete = np.asarray(before)[(np.asarray(before) != MISSING).all(axis=1)]
    if len(schema) < 2 or complete.shape[0] < 200:
        return None
    # kept off the command line's start: loaded only by this command
    from reidrisk.uniqueness.report import run_uniqueness_demo, uniqueness_section

    if complete.shape[0] > UNIQUENESS_POPULATION:
        keep = _rng(entropy, "uniqueness population").choice(
            complete.shape[0], UNIQUENESS_POPULATION, replace=False)
        complete = complete[np.sort(keep)]
    log(f"Scoring uniqueness in a population of {complete.shape[0]} complete records")
    return uniqueness_section(run_uniqueness_demo(
        schema, complete, rate=UNIQUENESS_RATE, n_records=min(1000, complete.shape[0]),
        rng=entropy))


def _linkage_section(entropy, log):
    """Paper 001: how many rows of an anonymized release link back to their owners?

    On its own table (a UCI Adult sample when installed, else a synthetic survey; a few seconds).
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.linkage.report import linkage_section, run_linkage_demo

    log("Attacking anonymized releases of a table (linkage)")
    return linkage_section(run_linkage_demo(rng=_rng(entropy, "linkage")))


def _pie_section(schema, n_records, log):
    """Paper 002: how much epsilon can n records afford against re-identification?

    The whole record is the personal datum, so |X| is the number of possible records of the
    schema.
    """
    if n_records < 2:
        return None
    # kept off the command line's start: loaded only by this command
    from reidrisk.pie.report import pie_section

    log("Computing the PIE re-identification bounds")
    return pie_section(n_records, max(2, math.prod(int(s) for s in schema.sizes)))


def _write(result: DemoResult, out: str | Path, t0: float, log: Callable[[str], None]
           ) -> DemoResult:
    """Write the report of ``result`` to ``out``; the result with its paths and wall time."""
    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report import write_report

    log(f"Writing the report to {out}")
    result = dataclasses.replace(result, seconds=time.perf_counter() - t0)
    index = write_report(result.sections(), out, title=REPORT_TITLE,
                         subtitle=f"{result.n} records, {result.g} attributes; {result.source}")
    return dataclasses.replace(result, out=Path(out), report=index)


def _versions() -> dict[str, str]:
    import matplotlib
    import scipy

    return {
        "reidrisk": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
        "matplotlib": matplotlib.__version__,
    }


def _fmt_eps(e: float) -> str:
    return f"{e:g}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x == 0 or x >= 0.01 else f"{100 * x:.2g}%"


# ---------------------------------------------------------------------------------------------
# report sections (reidrisk.demo_report)
# ---------------------------------------------------------------------------------------------
def demo_sections(result: DemoResult) -> list:
    """The report sections of a demo run: overview, data, distributions, errors, numbers, run.

    Parameters
    ----------
    result : DemoResult
        The result of ``run_demo``.

    Returns
    -------
    list of reidrisk.report.Section
        The sections in report order (``reidrisk.demo_report.demo_sections``).
    """
    # jinja2 and matplotlib (reidrisk.demo_report): loaded only when a report is written
    from reidrisk.demo_report import demo_sections as sections

    return sections(result)
