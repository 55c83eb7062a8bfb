"""The demo's result (``DemoResult``: what ``reidrisk.demo.run_demo`` measured) and its report
sections: overview, data, distributions, errors, numbers and the run's parameters.

``reidrisk.demo`` (loaded when the command line starts) builds a ``DemoResult``; the sections are
drawn only when a report is written, so the HTML templates (jinja2) and matplotlib
(``reidrisk.report``) are imported inside the functions that draw them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.schema import Schema

PAIR_METHOD = "em"
"""The pair estimator of the demo (the pair EM on the Gram counts, paper 004 eq. 12-13)."""


def fmt_eps(e: float) -> str:
    """A budget as the demo shows it (``4``, ``0.5``).

    Parameters
    ----------
    e : float
        The budget.

    Returns
    -------
    str
        ``f"{e:g}"``.
    """
    return f"{e:g}"


def pct(x: float) -> str:
    """A share as a percentage: whole percents from 1 %, two significant digits below.

    Parameters
    ----------
    x : float
        The share, in [0, 1].

    Returns
    -------
    str
        E.g. ``"30%"``, ``"0.25%"``.
    """
    return f"{100 * x:.0f}%" if x == 0 or x >= 0.01 else f"{100 * x:.2g}%"


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
        eps_head = "".join(f"{fmt_eps(e):>9}" for e in self.epsilons)
        width = max(len("pairs of attributes"), *(len(m) for m in self.mechanisms)) + 2
        lines = [
            f"n = {self.n} records, g = {self.g} attributes ({self.source}); "
            f"missing {pct(float(self.missing.mean()))} of values",
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


def _shown_attributes(schema: Schema) -> list[int]:
    """The largest domain and one of middle size: two attributes worth a picture."""
    order = np.argsort(-schema.sizes, kind="stable")
    if len(order) == 1:
        return [int(order[0])]
    return [int(order[0]), int(order[len(order) // 2])]


def demo_sections(result: DemoResult) -> list:
    """The report sections of a demo run: overview, data, distributions, errors, numbers, run.

    Parameters
    ----------
    result : DemoResult
        The result of ``run_demo``.

    Returns
    -------
    list of reidrisk.report.Section
        The sections in report order; the other capabilities' sections
        (``result.extra_sections``) come before the run parameters.
    """
    # jinja2 and matplotlib (reidrisk.report): loaded only when a report is written
    from reidrisk.report import Section, definition_list

    params = dict(result.parameters)
    params["wall time"] = f"{result.seconds:.1f} s"
    return [
        Section("Overview", _overview_html(result)),
        Section("Data", _data_html(result)),
        Section("Estimated distributions", "", (_distributions_figure(result),)),
        Section("Error against budget", "", _error_figures(result)),
        Section("Numbers", _numbers_html(result)),
        *result.extra_sections,
        Section("Run parameters", definition_list(params)),
    ]


def _overview_html(result: DemoResult) -> str:
    """What was collected and estimated, and the error measures."""
    # jinja2 and matplotlib (reidrisk.report): loaded only when a report is written
    from reidrisk.report import escape

    eps_txt = ", ".join(fmt_eps(e) for e in result.epsilons)
    return (
        "<p>Every record was randomized on the client side, attribute by attribute, with each of the "
        f"mechanisms <strong>{escape(', '.join(result.mechanisms))}</strong> and each whole-record "
        f"budget &epsilon; = {escape(eps_txt)} (split evenly: &epsilon;/{result.g} per attribute, "
        "paper 004 Algorithm 1). Missing values are not randomized and not reported. From the "
        "reports alone the server estimated the distribution of every attribute (estimators: "
        f"{escape(', '.join(result.methods))}; em = EM of paper 004 eq. 8-11, norm_sub = the "
        "inversion of eq. 6 projected onto the simplex) and of every pair of attributes (pair EM "
        "on the pair counts, eq. 12-13), over the people who answered. The estimates are compared "
        "with the true distributions of the same answers.</p>"
        "<p>Error measures: Jensen-Shannon divergence in bits (0 = identical, 1 = disjoint; paper 004 "
        "Section 5.1) and total variation distance (the largest difference in probability any event "
        "can have under the two distributions). The dotted <em>uniform guess</em> line is the error "
        "of answering with the uniform distribution, i.e. of collecting nothing.</p>"
    )


def _data_html(result: DemoResult) -> str:
    """The source and one row per attribute: categories, missing share, answers, values."""
    # jinja2 and matplotlib (reidrisk.report): loaded only when a report is written
    from reidrisk.report import escape, html_table

    rows = []
    for j, attr in enumerate(result.schema):
        cats = ", ".join(attr.categories[:6]) + (" ..." if attr.size > 6 else "")
        rows.append([attr.name, attr.size, pct(float(result.missing[j])),
                     int(round(result.n * (1 - float(result.missing[j])))), cats])
    return (
        f"<p>Source: {escape(result.source)}.</p>"
        + html_table(["attribute", "categories", "missing", "answers", "values"], rows,
                     caption=f"{result.n} records, {result.g} attributes",
                     numeric=[False, True, True, True, False])
    )


def _distributions_figure(result: DemoResult):
    """True and estimated distributions of two attributes at ``result.plot_epsilon``."""
    # jinja2 and matplotlib (reidrisk.report): loaded only when a report is written
    from reidrisk.report import ReportFigure, plots

    schema, g = result.schema, result.g
    shown = _shown_attributes(schema)
    dist_png = plots.plot_distributions(
        [schema[j] for j in shown],
        [result.truth[j] for j in shown],
        {mech: {meth: [ests[j] for j in shown] for meth, ests in per.items()}
         for mech, per in result.examples.items()},
        title=f"True and estimated distributions at \u03b5 = {fmt_eps(result.plot_epsilon)} "
              f"({result.plot_epsilon / g:.3g} per attribute)",
    )
    return ReportFigure(
        "distributions.png", dist_png,
        caption=(f"Grey bars: the true distribution of the answers; markers: the server's estimates "
                 f"from the randomized reports at whole-record budget {fmt_eps(result.plot_epsilon)}, "
                 "one column per mechanism."),
        alt="Bar charts of true distributions with estimated probabilities as markers",
    )


def _error_figures(result: DemoResult) -> tuple:
    """Mean JS divergence and mean total variation against the budget, per mechanism."""
    # jinja2 and matplotlib (reidrisk.report): loaded only when a report is written
    from reidrisk.report import ReportFigure, plots

    table = result.table()
    curve_kw = dict(reference=result.reference,
                    title=f"Error against budget (n = {result.n}, g = {result.g})")
    js_png = plots.plot_error_curves(table, "js", ylabel="mean JS divergence (bits)", **curve_kw)
    tv_reference = {t: result.reference[f"{t}_tv"] for t in ("marginal", "pair")
                    if f"{t}_tv" in result.reference}
    tv_png = plots.plot_error_curves(table, "tv", ylabel="mean total variation distance",
                               **{**curve_kw, "reference": tv_reference})
    return (
        ReportFigure("error_js.png", js_png,
                     caption="Mean Jensen-Shannon divergence over all attributes (left) and all pairs "
                             "(right); solid: EM, dashed: norm-sub. Lower is better; log scales.",
                     alt="Line charts of JS divergence against epsilon per mechanism"),
        ReportFigure("error_tv.png", tv_png,
                     caption="The same for the mean total variation distance; dotted: a uniform "
                             "guess.",
                     alt="Line charts of total variation distance against epsilon per mechanism"),
    )


def _numbers_html(result: DemoResult) -> str:
    """Every measurement, the uniform guess's errors and the seconds per mechanism, as tables."""
    # jinja2 and matplotlib (reidrisk.report): loaded only when a report is written
    from reidrisk.report import html_table

    num_rows = []
    first = result.methods[0]
    for mech in result.mechanisms:
        for eps in result.epsilons:
            row = [mech, fmt_eps(eps), f"{eps / result.g:.3g}"]
            for meth in result.methods:
                row.append(f"{result.error(mech, eps, 'marginal', meth):.4f}")
            row += [f"{result.error(mech, eps, 'marginal', first, 'tv'):.4f}",
                    f"{result.error(mech, eps, 'marginal', first, 'js_max'):.4f}",
                    f"{result.error(mech, eps, 'pair', PAIR_METHOD):.4f}",
                    f"{result.error(mech, eps, 'pair', PAIR_METHOD, 'tv'):.4f}"]
            num_rows.append(row)
    header = (["mechanism", "\u03b5", "\u03b5 / attribute"]
              + [f"JS marginals ({m})" for m in result.methods]
              + [f"TV marginals ({first})", f"worst JS marginal ({first})",
                 f"JS pairs ({PAIR_METHOD})", f"TV pairs ({PAIR_METHOD})"])
    body = html_table(header, num_rows, numeric=[False] + [True] * (len(header) - 1),
                      caption="Means over attributes or pairs; JS in bits.")
    ref = result.reference
    body += html_table(
        ["reference", "JS marginals", "JS pairs", "TV marginals", "TV pairs"],
        [["uniform guess", f"{ref['marginal']:.4f}", f"{ref['pair']:.4f}",
          f"{ref.get('marginal_tv', float('nan')):.4f}", f"{ref.get('pair_tv', float('nan')):.4f}"]],
        numeric=[False, True, True, True, True])
    body += html_table(
        ["mechanism", "seconds (all budgets: randomize + estimate)"],
        [[m, f"{s:.2f}"] for m, s in result.timings.items()], numeric=[False, True])
    return body
