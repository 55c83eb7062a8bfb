"""The collection section of the report: true against estimated c-way histograms and the
Jensen-Shannon divergence of every compared method (paper 004 Section 5, Fig. 10-11).

``compare_methods`` runs one simulated collection the way paper 004 evaluates its method
(Section 5.1): values are removed completely at random at rate m from the true data, every method's
clients randomize what is left under a whole-record budget epsilon, and each method's server
estimates the c-way contingency table of the chosen attributes, scored against the table of the
true data by the Jensen-Shannon divergence in bits. ``collect_section`` turns the result into a
report ``Section``; ``plot_histograms`` and ``plot_js`` draw its figures.

The compared methods (``method_specs``) are shared with ``benchmarks/collect_accuracy.py`` so the
report and the benchmark describe the same configurations:

``reidrisk``
    The default configuration: attribute sampling (``k`` attributes at epsilon / k each, ``k``
    planned for the missing rate ``PLANNING_MISSING_RATE``, not the true one), then
    ``CollectPipeline()`` with its defaults and the copula's exact cell probabilities.
``latent``
    The same clients (attribute sampling), then ``CollectPipeline(model="latent")``: a latent class
    model fitted on the whole reports through each attribute's channel, its tables exact
    (``reidrisk.collect.latent_fit``; measured in docs/results/collect_latent.md).
``paper``
    Paper 004 as printed: epsilon / g on every attribute, the count EM of eq. 8-11 run to a fixed
    tolerance ``PAPER_STOP`` (at most ``PAPER_MAX_ITER`` steps), no shrinkage or fallback, pair
    correlations matched by mutual information (eq. 14-20, sign from the table), and the table
    counted from n generated records (Algorithm 2, lines 24-33).
``orappor``, ``s2mb``, ``mdn``, ``pde_ete``, ``df_copula``
    The paper's five baselines (``reidrisk.collect.baselines``), each with the paper's split; the
    four complete-case methods use only the reports having all c attributes.
``indep``, ``uniform``
    The product of the estimated marginals, and the uniform table (floors not in the paper).
``calm``, ``calm_paper``
    CALM (Zhang et al., CCS 2018; ``reidrisk.collect.baselines.calm``), the standard method for
    k-way marginals under LDP, not in paper 004: user groups report l-way marginals with the whole
    budget. ``calm`` chooses l and the number of marginals for the missing rate reidrisk plans for
    (``PLANNING_MISSING_RATE``, the same information), ``calm_paper`` for complete records (the
    paper's assumption).
``true_pairs_copula``
    Not a method: the copula fitted on the true pair tables (the model's own floor).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk._compat import renamed_attribute, renamed_function, renamed_keywords
from reidrisk.collect.baselines import (
    CALM,
    DFCopula,
    Indep,
    MDNCompleteCase,
    ORapporCompleteCase,
    PDEETECompleteCase,
    Proposed,
    S2MbCompleteCase,
    TruePairsCopula,
    Uniform,
)
from reidrisk.collect.baselines.base import Method
from reidrisk.collect.protocol import choose_attributes_per_person
from reidrisk.data.missing import mcar
from reidrisk.data.tables import contingency
from reidrisk.estimation.information import js_divergence
from reidrisk.mechanisms.base import as_generator
from reidrisk.report import ReportFigure, Section, escape, html_table
from reidrisk.report.plots import figure_png, new_figure
from reidrisk.schema import MISSING, Schema, SchemaError

PLANNING_MISSING_RATE = 0.5
"""Missing rate assumed when the sampling protocol's k is planned (the paper's default m; the
true rate of a simulation is not used, as a collector would not know it in advance)."""

PAPER_STOP = 1e-4
"""EM tolerance of the paper-faithful configuration: stop when no probability moves by more than
this in one step, or after ``PAPER_MAX_ITER`` steps. Paper 004 does not state its stopping rule;
this common choice is also the kindest to the method among those we measured: iterating further
lets the EM of a pair table near the simplex boundary keep fitting the LDP noise
(docs/design/collect.md#measurements)."""

PAPER_MAX_ITER = 1000
"""EM iteration cap of the paper-faithful configuration (see ``PAPER_STOP``)."""

PAPER_OPTIONS: dict = dict(estimator="em", stop=PAPER_STOP, max_iter=PAPER_MAX_ITER, shrink=None,
                           marginal_shrink=False, fallback=False, copula_fit="mi")
"""``CollectPipeline`` options of the paper-faithful configuration (module doc)."""

DEFAULT_COLUMNS_ADULT = ("race", "native-country", "income")
"""The attributes of paper 004 Fig. 10 (Adult)."""


# ---------------------------------------------------------------------------------------------
# compared methods
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MethodSpec:
    """One compared configuration.

    Parameters
    ----------
    key : str
        Short name used in result files.
    label : str
        Name shown in tables and figures.
    build : callable
        ``build()`` returns a fresh, unfitted ``reidrisk.collect.baselines.Method``.
    sampling : bool
        The clients report ``planned_attributes_per_person`` attributes each; else all their
        present ones, with the paper's split of the budget.
    truth : bool
        Fitted on the true data (``fit_truth``): a reference rather than a method.
    """

    key: str
    label: str
    build: Callable[[], Method]
    sampling: bool = False
    truth: bool = False


def planned_attributes_per_person(sizes: Sequence[int] | np.ndarray, epsilon: float, n: int,
                                  missing_rate: float = PLANNING_MISSING_RATE) -> int:
    """Attributes per person of the sampling protocol, planned at an assumed missing rate.

    ``choose_attributes_per_person`` (``reidrisk.collect.protocol``) for n people at an assumed
    MCAR rate.

    Parameters
    ----------
    sizes : sequence of int
        The domain size of each of the g attributes.
    epsilon : float
        The whole-record budget.
    n : int
        The number of people.
    missing_rate : float
        The MCAR rate assumed in planning (default ``PLANNING_MISSING_RATE``, 0.5).

    Returns
    -------
    int
        The attributes each person reports; g when g < 2.
    """

    if len(sizes) < 2:
        return len(sizes)
    choice = choose_attributes_per_person(list(sizes), epsilon, n=int(n), missing_rate=missing_rate)
    return int(choice.attributes_per_person)


def _proposed(label: str, exact_table: bool = True, **options):
    return Proposed(label, exact_table=exact_table, **options)


def method_specs(keys: Sequence[str] | None = None) -> list[MethodSpec]:
    """The compared configurations of the module doc, in display order.

    Parameters
    ----------
    keys : sequence of str, optional
        The configurations to keep, in the order given (default: all).

    Returns
    -------
    list of MethodSpec
        The configurations.

    Raises
    ------
    ValueError
        For a key that names no configuration (the message lists the known ones).
    """

    specs = [
        MethodSpec("reidrisk", "reidrisk", lambda: _proposed("reidrisk"), sampling=True),
        MethodSpec("latent", "reidrisk (latent class)",
                   lambda: _proposed("reidrisk (latent class)", model="latent"), sampling=True),
        MethodSpec("paper", "paper 004", lambda: _proposed("paper 004", exact_table=False,
                                                           **PAPER_OPTIONS)),
        MethodSpec("orappor", "O-RAPPOR", ORapporCompleteCase),
        MethodSpec("s2mb", "S2Mb", S2MbCompleteCase),
        MethodSpec("mdn", "MDN", MDNCompleteCase),
        MethodSpec("pde_ete", "PDE/ETE", PDEETECompleteCase),
        MethodSpec("df_copula", "DF+Copula", lambda: DFCopula(exact_table=False)),
        MethodSpec("indep", "Indep", Indep),
        MethodSpec("uniform", "Uniform", Uniform),
        MethodSpec("calm", "CALM", lambda: CALM(missing_rate=PLANNING_MISSING_RATE)),
        MethodSpec("calm_paper", "CALM (planned for m = 0)", CALM),
        MethodSpec("true_pairs_copula", "copula on true pairs", TruePairsCopula, truth=True),
    ]
    if keys is None:
        return specs
    by_key = {s.key: s for s in specs}
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {list(by_key)}")
    return [by_key[k] for k in keys]


@renamed_keywords(k="attributes_per_person")
def run_method(spec: MethodSpec, schema: Schema, truth_codes: np.ndarray, observed: np.ndarray,
               epsilon: float, rng: np.random.Generator | int | None = None,
               attributes_per_person: int | None = None, reports_cache: dict | None = None):
    """Fit one configuration on simulated reports and time the server's fit.

    Parameters
    ----------
    spec : MethodSpec
        The configuration.
    schema : Schema
        The attributes.
    truth_codes : numpy.ndarray (n, g)
        The complete original data (only ``truth`` specs read it).
    observed : numpy.ndarray (n, g)
        The data after missing values were injected, which the clients randomize under the
        method's protocol.
    epsilon : float
        The whole-record budget.
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).
    attributes_per_person : int, optional
        Formerly ``k``; ``None`` = all, the paper's split; ignored unless ``spec.sampling``.
    reports_cache : dict, optional
        Shares one randomization between methods with the same client protocol, as their clients
        would send the same kind of report.

    Returns
    -------
    method : reidrisk.collect.baselines.Method
        The fitted configuration.
    seconds : float
        The server's fitting time (randomization excluded).
    """
    method = spec.build()
    if spec.truth:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t0 = time.perf_counter()
            method.fit_truth(schema, truth_codes)
            return method, time.perf_counter() - t0
    protocol = method.protocol(epsilon, attributes_per_person if spec.sampling else None)
    key = (protocol.mechanism, protocol.attributes_for(len(schema)), protocol.among, float(epsilon))
    reports = None if reports_cache is None else reports_cache.get(key)
    if reports is None:
        reports = protocol.randomize(schema, observed, as_generator(rng))
        if reports_cache is not None:
            reports_cache[key] = reports
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t0 = time.perf_counter()
        method.fit(reports)
        seconds = time.perf_counter() - t0
    return method, seconds


def js_bits(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Jensen-Shannon divergence in bits between two tables of the same shape.

    Paper 004 Section 5.1; each table is normalized first, and subnormal cell probabilities are
    read as 0.

    Parameters
    ----------
    truth, estimate : numpy.ndarray
        The two tables.

    Returns
    -------
    float
        The divergence, in [0, 1] bits.
    """

    tiny = np.finfo(np.float64).tiny
    # subnormal cell probabilities (e.g. from the copula's far tails) are flushed to zero: their
    # midpoint with a zero cell underflows to 0, which would turn the divergence into inf
    p, q = (np.asarray(x, dtype=np.float64).ravel() for x in (truth, estimate))
    p, q = np.where(p < tiny, 0.0, p), np.where(q < tiny, 0.0, q)
    return float(js_divergence(p, q, base=2))


# ---------------------------------------------------------------------------------------------
# one comparison
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MethodResult:
    """One method in a comparison.

    Parameters
    ----------
    key : str
        The configuration's ``MethodSpec.key``.
    label : str
        Its ``MethodSpec.label``.
    table : numpy.ndarray
        The estimated c-way table of the first repetition, the shape of the true table.
    js : tuple of float
        The JS divergence of each repetition, in bits.
    seconds : tuple of float
        The server time of each repetition: fitting plus answering the table query
        (randomization excluded).
    """

    key: str
    label: str
    table: np.ndarray
    js: tuple[float, ...]
    seconds: tuple[float, ...]

    @property
    def js_mean(self) -> float:
        return float(np.mean(self.js))

    @property
    def js_sd(self) -> float:
        return float(np.std(self.js, ddof=1)) if len(self.js) > 1 else float("nan")


@dataclass(frozen=True)
class CollectComparison:
    """Result of ``compare_methods``.

    Parameters
    ----------
    schema : Schema
        The attributes.
    cols : tuple of int
        The indices of the table's c attributes.
    truth : numpy.ndarray
        The true c-way table (probabilities, shape ``(f_cols[0], ..., f_cols[c-1])``).
    methods : tuple of MethodResult
        One result per configuration, in display order.
    epsilon : float
        The whole-record budget.
    missing_rate : float
        The rate at which values were removed completely at random.
    missing_share : float
        The share of values the clients lacked in the first repetition, the data's own missing
        values included.
    attributes_per_person : int
        Of the sampling protocol (formerly ``k``).
    n : int
        The number of records.
    reps : int
        The number of simulated collections.
    seed : int or None
        The seed of the run (None when a generator was passed).
    """

    schema: Schema
    cols: tuple[int, ...]
    truth: np.ndarray
    methods: tuple[MethodResult, ...]
    epsilon: float
    missing_rate: float
    missing_share: float
    attributes_per_person: int
    n: int
    reps: int
    seed: int | None

    k = renamed_attribute("attributes_per_person", "k")

    @property
    def col_names(self) -> list[str]:
        return [self.schema.names[j] for j in self.cols]

    def js(self) -> dict[str, float]:
        """Mean JS divergence (bits) by method label.

        Returns
        -------
        dict of str to float
            ``MethodResult.js_mean`` of each method, keyed by its label.
        """
        return {m.label: m.js_mean for m in self.methods}


def default_columns(schema: Schema, c: int = 3) -> list[int]:
    """The attributes a comparison shows by default.

    Paper 004 Fig. 10's (race, native-country, income) when the schema has them and c = 3, else
    the c attributes (at most g) with the smallest domains (ties in schema order).

    Parameters
    ----------
    schema : Schema
        The attributes.
    c : int
        How many attributes.

    Returns
    -------
    list of int
        Their indices (in the figure's order for Adult, in schema order otherwise).
    """
    names = schema.names
    c = min(int(c), len(schema))
    if c == 3 and all(a in names for a in DEFAULT_COLUMNS_ADULT):
        return [names.index(a) for a in DEFAULT_COLUMNS_ADULT]
    order = np.argsort(schema.sizes, kind="stable")[:c]
    return sorted(int(j) for j in order)


def compare_methods(
    schema: Schema,
    codes: np.ndarray,
    cols: Sequence[int | str] | None = None,
    epsilon: float = 5.0,
    missing_rate: float = 0.5,
    methods: Sequence[str] | None = None,
    reps: int = 1,
    rng: np.random.Generator | int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> CollectComparison:
    """Simulate ``reps`` collections of ``codes`` (n, g) and score every method on one c-way table.

    Parameters
    ----------
    schema : Schema
        The attributes.
    codes : numpy.ndarray (n, g)
        The true data (``MISSING`` allowed; rows missing any of ``cols`` do not count in the true
        table).
    cols : sequence of int or str, optional
        Names or indices of the table's attributes (default ``default_columns``).
    epsilon : float
        Whole-record budget.
    missing_rate : float
        Share of values removed completely at random (paper 004 Section 5.1) before the clients
        randomize.
    methods : sequence of str, optional
        Keys of ``method_specs`` (default: all).
    reps : int
        Number of simulated collections.
    rng : numpy.random.Generator or int
        Generator or seed (default 0).
    progress : callable, optional
        Receives a line per fitted method.

    Returns
    -------
    CollectComparison
        The true table, every method's table of the first repetition and its JS divergence and
        server time in each repetition.

    Raises
    ------
    SchemaError
        For ``cols`` that do not name distinct attributes of the schema.
    ValueError
        For ``reps`` that is not a positive integer, or a ``missing_rate`` outside [0, 1).
    """

    codes = schema.validate_codes(codes)
    n, g = codes.shape
    if cols is None:
        idx = default_columns(schema)
    else:
        idx = [schema.index(c) if isinstance(c, str) else int(c) for c in cols]
        if not idx or len(set(idx)) != len(idx) or not all(0 <= j < g for j in idx):
            raise SchemaError(f"cols {list(cols)} must name distinct attributes of the schema")
    if isinstance(reps, bool) or int(reps) != reps or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}")
    if not 0.0 <= float(missing_rate) < 1.0:
        raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate!r}")
    truth = contingency(codes, schema.sizes, idx)
    k = planned_attributes_per_person(schema.sizes, epsilon, n)
    specs = method_specs(methods)
    gen = as_generator(rng)
    seed = None if rng is None or isinstance(rng, np.random.Generator) else int(rng)
    js: dict[str, list[float]] = {s.key: [] for s in specs}
    secs: dict[str, list[float]] = {s.key: [] for s in specs}
    first: dict[str, np.ndarray] = {}
    share = float("nan")
    for r in range(int(reps)):
        observed = mcar(codes, missing_rate, gen) if missing_rate > 0 else codes.copy()
        if r == 0:
            share = float(np.mean(observed == MISSING))
        cache: dict = {}
        for spec in specs:
            method, seconds = run_method(spec, schema, codes, observed, epsilon, gen, k, cache)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                t0 = time.perf_counter()
                est = np.asarray(method.table(idx), dtype=np.float64)
                seconds += time.perf_counter() - t0
            js[spec.key].append(js_bits(truth, est))
            secs[spec.key].append(seconds)
            first.setdefault(spec.key, est)
            if progress is not None:
                progress(f"{spec.label}: JS {js[spec.key][-1]:.4f} bits ({seconds:.2f} s)")
    results = tuple(MethodResult(s.key, s.label, first[s.key], tuple(js[s.key]), tuple(secs[s.key]))
                    for s in specs)
    return CollectComparison(schema, tuple(idx), truth, results, float(epsilon),
                             float(missing_rate), share, k, n, int(reps), seed)


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------
def _cell_labels(schema: Schema, cols: Sequence[int]) -> list[str]:
    cats = [schema[j].categories for j in cols]
    shape = tuple(len(c) for c in cats)
    out = []
    for flat in range(int(np.prod(shape))):
        ix = np.unravel_index(flat, shape)
        out.append(" / ".join(str(cats[a][i]) for a, i in enumerate(ix)))
    return out


def _sqrt(x):
    return np.sqrt(np.clip(x, 0.0, None))


def plot_histograms(comparison: CollectComparison, max_cells: int = 60) -> bytes:
    """PNG of ``histograms_figure``.

    Parameters
    ----------
    comparison, max_cells
        As in ``histograms_figure``.

    Returns
    -------
    bytes
        The PNG image.
    """

    return figure_png(histograms_figure(comparison, max_cells))


HISTOGRAM_MAX_TICKS = 20
"""Cells named on the x axis of each column's bottom panel (every step-th cell when more)."""


def histograms_figure(comparison: CollectComparison, max_cells: int = 60):
    """True and estimated c-way histograms, one panel per method (paper 004 Fig. 10-11).

    Each panel shows the method's cell probabilities as bars and the true ones as black ticks, on
    the cells ordered by true probability (the ``max_cells`` most probable; the rest are left out
    of the picture but not of the JS divergence in the panel title). The bottom panel of each
    column names the cells (``"value / value / value"``, every cell up to ``HISTOGRAM_MAX_TICKS``).

    Parameters
    ----------
    comparison : CollectComparison
        The result of ``compare_methods``.
    max_cells : int
        Most probable cells shown.

    Returns
    -------
    matplotlib.figure.Figure
        The true histogram's panel, then one panel per method.
    """

    truth = comparison.truth.ravel()
    order = np.argsort(-truth, kind="stable")[:max_cells]
    labels = _cell_labels(comparison.schema, comparison.cols)
    panels = [("true", None, truth)] + [(m.label, m.js[0], m.table.ravel()) for m in comparison.methods]
    ncol = 3 if len(panels) > 4 else 2
    nrow = math.ceil(len(panels) / ncol)
    fig = new_figure(4.1 * ncol, 2.5 * nrow + 2.1)
    axes = fig.subplots(nrow, ncol, squeeze=False, sharey=True)
    x = np.arange(order.size)
    step = max(1, math.ceil(order.size / HISTOGRAM_MAX_TICKS))
    ticks = x[::step]
    tick_labels = [_short_label(labels[i]) for i in order[::step]]
    bottom = {c: max(r for r in range(nrow) if r * ncol + c < len(panels))
              for c in range(min(ncol, len(panels)))}
    ymax = max(float(np.max(p[2][order])) for p in panels) * 1.08
    for ax, (label, js, probs) in zip(axes.ravel(), panels):
        color = "0.55" if js is None else "#1f5f99"
        ax.bar(x, probs[order], width=0.85, color=color)
        if js is not None:
            ax.plot(x, truth[order], linestyle="none", marker="_", markersize=7, color="black",
                    markeredgewidth=1.4)
            ax.set_title(f"{label}  (JS {js:.3f})", fontsize=10)
        else:
            ax.set_title("true histogram", fontsize=10)
        ax.set_yscale("function", functions=(_sqrt, np.square))
        ax.set_ylim(0, ymax)
        ax.set_xlim(-0.6, order.size - 0.4)
        ax.grid(True, axis="y", alpha=0.3)
        ax.tick_params(axis="y", labelsize=8)
    for k, ax in enumerate(axes.ravel()[:len(panels)]):
        r, c = divmod(k, ncol)
        if r == bottom[c]:
            ax.set_xticks(ticks, tick_labels, rotation=90, fontsize=6)
            ax.set_xlabel(f"cell ({' / '.join(comparison.col_names)})", fontsize=8)
        else:
            ax.set_xticks(ticks, [])
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("probability (sqrt scale)", fontsize=9)
    shown = f"{order.size} most probable of {truth.size} cells" if order.size < truth.size \
        else f"all {truth.size} cells"
    fig.suptitle(
        f"{' x '.join(comparison.col_names)} (\u03b5 = {comparison.epsilon:g}, "
        f"m = {comparison.missing_rate:g}): {shown}, by true probability;\nfirst: "
        + "; ".join(labels[i] for i in order[:2]), fontsize=10)
    return fig


def _short_label(label: str, width: int = 30) -> str:
    return label if len(label) <= width else label[: width - 1] + "\u2026"


def plot_js(comparison: CollectComparison) -> bytes:
    """Mean JS divergence per method as horizontal bars (with the spread over repetitions).

    Parameters
    ----------
    comparison : CollectComparison
        The result of ``compare_methods``.

    Returns
    -------
    bytes
        The PNG image.
    """

    methods = list(comparison.methods)
    fig = new_figure(6.4, 0.42 * len(methods) + 1.2)
    ax = fig.subplots()
    y = np.arange(len(methods))[::-1]
    means = np.array([m.js_mean for m in methods])
    sds = np.array([m.js_sd if comparison.reps > 1 else 0.0 for m in methods])
    colors = ["#c0392b" if m.key == "reidrisk" else ("0.6" if m.key in ("uniform", "indep",
              "true_pairs_copula") else "#1f5f99") for m in methods]
    ax.barh(y, means, xerr=np.where(np.isfinite(sds), sds, 0.0), color=colors, height=0.7,
            error_kw=dict(ecolor="0.25", capsize=2, lw=1))
    ax.set_yticks(y, [m.label for m in methods], fontsize=9)
    for yi, v in zip(y, means):
        ax.annotate(f"{v:.3f}", (v, yi), xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8)
    ax.set_xlabel("JS divergence (bits), lower is better")
    ax.set_xlim(0, max(1e-3, float(np.max(means + np.nan_to_num(sds)))) * 1.25)
    ax.grid(True, axis="x", alpha=0.3)
    reps = f"mean \u00b1 sd over {comparison.reps} runs" if comparison.reps > 1 else "one run"
    ax.set_title(f"{comparison.truth.ndim}-way table, {reps}", fontsize=10)
    return figure_png(fig)


# ---------------------------------------------------------------------------------------------
# the section
# ---------------------------------------------------------------------------------------------
def collect_section(comparison: CollectComparison, title: str = "Collection: contingency tables",
                    prefix: str = "collect") -> Section:
    """The report ``Section`` of a comparison: what was run, the JS table and the two figures.

    Parameters
    ----------
    comparison : CollectComparison
        The result of ``compare_methods``.
    title : str
        The section title.
    prefix : str
        Prefix of the figure file names and the section's anchor.

    Returns
    -------
    reidrisk.report.Section
        The text, the table of JS divergences and server times, and the figures
        ``<prefix>_histograms.png`` and ``<prefix>_js.png``.
    """

    c = len(comparison.cols)
    names = ", ".join(comparison.col_names)
    g = len(comparison.schema)
    if comparison.missing_rate > 0:
        removed = (f"Values were removed completely at random (m = {comparison.missing_rate:g}; "
                   f"{100 * comparison.missing_share:.0f}% of all values missing in all)")
    else:
        removed = (f"The data's own missing values were kept ({100 * comparison.missing_share:.0f}% "
                   "of all values) and nothing more was removed")
    body = (
        f"<p>{removed}; every method's clients randomized the rest under a whole-record budget "
        f"&epsilon; = {comparison.epsilon:g}. From the reports alone each server estimated the {c}-way "
        f"contingency table of <strong>{escape(names)}</strong>, compared here with the table of "
        "the true data by the Jensen-Shannon divergence in bits (0 = identical, 1 = disjoint; paper "
        "004 Section 5.1).</p>"
        f"<p><em>reidrisk</em> is the default configuration: each person reports {comparison.attributes_per_person} "
        f"of the {g} attributes with &epsilon;/{comparison.attributes_per_person} each, and the server fits the copula "
        "model with its noise-aware defaults. <em>paper 004</em> is the method as printed "
        f"(&epsilon;/{g} per attribute, EM, mutual-information copula, table counted from generated "
        "records). O-RAPPOR, S2Mb, MDN and PDE/ETE estimate the table only from the people who "
        "reported all of its attributes; DF+Copula fits the copula to the raw reports. Indep "
        "(product of the estimated marginals) and Uniform are floors any method should beat; the "
        "copula on the true pair tables is the best this model can do.</p>"
    )
    several = comparison.reps > 1  # a spread over runs exists only with several runs
    rows = []
    for m in comparison.methods:
        rows.append([m.label, f"{m.js_mean:.4f}", *([f"{m.js_sd:.4f}"] if several else []),
                     f"{float(np.mean(m.seconds)):.2f}"])
    header = ["method", "JS divergence (bits)", *(["sd over runs"] if several else []),
              "server time (s)"]
    body += html_table(
        header, rows,
        caption=f"{comparison.n} records, {g} attributes; {comparison.reps} run(s)",
        numeric=[False] + [True] * (len(header) - 1))
    figs = (
        ReportFigure(f"{prefix}_histograms.png", plot_histograms(comparison),
                     caption=(f"True and estimated histograms of {names}: bars are each method's "
                              "cell probabilities, black ticks the true ones (paper 004 Fig. 10)."),
                     alt=f"Bar charts of the true and estimated {c}-way histograms per method"),
        ReportFigure(f"{prefix}_js.png", plot_js(comparison),
                     caption="Jensen-Shannon divergence between the true and the estimated table, "
                             "per method (lower is better).",
                     alt="Horizontal bar chart of JS divergence per method"),
    )
    return Section(title, body, figs, anchor=prefix)


def demo_collect_section(schema: Schema, codes: np.ndarray, epsilon: float = 5.0,
                         missing_rate: float = 0.5, seed: int | None = 0,
                         cols: Sequence[int | str] | None = None, reps: int = 1) -> Section:
    """The demo report's collection section, at the paper's default point (epsilon = 5, c = 3).

    ``collect_section(compare_methods(...))``. Data that already lack values (as the demo's do)
    are collected with ``missing_rate=0``: nothing more is removed.

    Parameters
    ----------
    schema, codes, epsilon, missing_rate, cols, reps
        As in ``compare_methods``.
    seed : int, optional
        The ``rng`` of ``compare_methods``.

    Returns
    -------
    reidrisk.report.Section
        As ``collect_section``.
    """
    comp = compare_methods(schema, codes, cols, epsilon, missing_rate, reps=reps, rng=seed)
    return collect_section(comp)


__all__ = [
    "CollectComparison", "DEFAULT_COLUMNS_ADULT", "HISTOGRAM_MAX_TICKS", "MethodResult", "MethodSpec",
    "PAPER_MAX_ITER", "PAPER_OPTIONS", "PAPER_STOP", "PLANNING_MISSING_RATE", "collect_section",
    "compare_methods", "default_columns", "demo_collect_section", "histograms_figure", "js_bits",
    "method_specs", "planned_attributes_per_person", "planned_k", "plot_histograms", "plot_js",
    "run_method",
]

planned_k = renamed_function(planned_attributes_per_person, "planned_k")
planned_k.__doc__ = """Deprecated name of ``planned_attributes_per_person``.

Parameters
----------
sizes, epsilon, n, missing_rate
    As in ``planned_attributes_per_person``.

Returns
-------
int
    As ``planned_attributes_per_person``.
"""
