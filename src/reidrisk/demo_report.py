"""The report sections of the demo (``reidrisk.demo``): overview, data, distributions, errors,
numbers and the run's parameters.

Imported only when a report is written: it loads the HTML templates (jinja2) and matplotlib,
which the demo's command line does not need to start.
"""

from __future__ import annotations

import numpy as np

from reidrisk.demo import PAIR_METHOD, DemoResult, _fmt_eps, _pct
from reidrisk.report import ReportFigure, Section, definition_list, escape, html_table, plots
from reidrisk.schema import Schema


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
    eps_txt = ", ".join(_fmt_eps(e) for e in result.epsilons)
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
    rows = []
    for j, attr in enumerate(result.schema):
        cats = ", ".join(attr.categories[:6]) + (" ..." if attr.size > 6 else "")
        rows.append([attr.name, attr.size, _pct(float(result.missing[j])),
                     int(round(result.n * (1 - float(result.missing[j])))), cats])
    return (
        f"<p>Source: {escape(result.source)}.</p>"
        + html_table(["attribute", "categories", "missing", "answers", "values"], rows,
                     caption=f"{result.n} records, {result.g} attributes",
                     numeric=[False, True, True, True, False])
    )


def _distributions_figure(result: DemoResult):
    """True and estimated distributions of two attributes at ``result.plot_epsilon``."""
    schema, g = result.schema, result.g
    shown = _shown_attributes(schema)
    dist_png = plots.plot_distributions(
        [schema[j] for j in shown],
        [result.truth[j] for j in shown],
        {mech: {meth: [ests[j] for j in shown] for meth, ests in per.items()}
         for mech, per in result.examples.items()},
        title=f"True and estimated distributions at \u03b5 = {_fmt_eps(result.plot_epsilon)} "
              f"({result.plot_epsilon / g:.3g} per attribute)",
    )
    return ReportFigure(
        "distributions.png", dist_png,
        caption=(f"Grey bars: the true distribution of the answers; markers: the server's estimates "
                 f"from the randomized reports at whole-record budget {_fmt_eps(result.plot_epsilon)}, "
                 "one column per mechanism."),
        alt="Bar charts of true distributions with estimated probabilities as markers",
    )


def _error_figures(result: DemoResult) -> tuple:
    """Mean JS divergence and mean total variation against the budget, per mechanism."""
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
    num_rows = []
    first = result.methods[0]
    for mech in result.mechanisms:
        for eps in result.epsilons:
            row = [mech, _fmt_eps(eps), f"{eps / result.g:.3g}"]
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
