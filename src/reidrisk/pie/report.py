"""The pie section of the demo report: how much epsilon can a collection of n records afford?

``pie_section(n, domain)`` returns a ``reidrisk.report.Section`` with

* alpha (the PIE bound, bits) vs epsilon for the three bounds of paper 002 Fig. 4: any epsilon-LDP
  mechanism (Prop. 4.1, the min and tanh forms), RR (Thm 4.2) and GLH at OLH's g (Thm 4.4);
* the adversary's Bayes-error lower bound vs epsilon for the report's n (Cor. 3.9, eq. 12);
* the largest epsilon that guarantees a 0.9 (and a 0.5) identification error under each bound
  (``reidrisk.pie.bounds.calibrate``).

``plot_bounds(n, domain, epsilons, calibrations)`` draws the two panels (PNG bytes). Formulas as in
docs/design/pie.md#bayes-error and docs/design/pie.md#bounds-for-ldp-mechanisms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from reidrisk.pie import bounds as b
from reidrisk.pie.checks import check_count, check_epsilon
from reidrisk.report import ReportFigure, Section, escape, html_table
from reidrisk.report.plots import figure_png, new_figure

DEFAULT_TARGETS: tuple[float, ...] = (0.9, 0.5)
"""Identification errors the section calibrates epsilon for (0.9 is the issue's design target)."""


def _epsilons(epsilons) -> np.ndarray:
    if epsilons is None:
        return np.geomspace(0.05, 20.0, 160)
    e = np.sort(np.atleast_1d(np.asarray(check_epsilon(epsilons, "epsilons"), dtype=np.float64)))
    return e


def _curves(n: int, domain: int, eps: np.ndarray) -> dict[str, np.ndarray]:
    g = np.maximum(2.0, np.round(np.exp(np.minimum(eps, 700.0)) + 1.0))
    return {
        "any LDP, Prop. 4.1 (min form)": np.asarray(b.alpha_ldp(eps, n, "min")),
        "any LDP, Prop. 4.1 (tanh form)": np.asarray(b.alpha_ldp(eps, n, "tanh")),
        "RR, Thm 4.2": np.asarray(b.alpha_rr(eps, n, domain)),
        "GLH, g = round(e^eps + 1), Thm 4.4": np.asarray(b.alpha_glh(eps, n, domain, g)),
    }


def calibrations(n: int, domain: int, targets: Sequence[float] = DEFAULT_TARGETS) -> list:
    """``(target, mechanism, Calibration or None)`` for each target and mechanism ("ldp", "rr",
    "glh"); None when no epsilon can certify the target for n users.

    Parameters
    ----------
    n : int
        Number of users.
    domain : int
        |X|.
    targets : sequence of float
        Target Bayes errors (default 0.9 and 0.5).

    Returns
    -------
    list of tuple
        ``(target, mechanism, Calibration or None)``.
    """
    out: list[tuple[float, str, b.Calibration | None]] = []
    for t in targets:
        for m in ("ldp", "rr", "glh"):
            try:
                out.append((t, m, b.calibrate(t, n, domain, m)))
            except b.BoundError:
                out.append((t, m, None))
    return out


_STYLE = {
    "any LDP, Prop. 4.1 (min form)": ("#7f7f7f", "-"),
    "any LDP, Prop. 4.1 (tanh form)": ("#7f7f7f", ":"),
    "RR, Thm 4.2": ("#d62728", "-"),
    "GLH, g = round(e^eps + 1), Thm 4.4": ("#1f77b4", "--"),
}


def plot_bounds(n: int, domain: int, epsilons=None, cals: list | None = None) -> bytes:
    """Two panels (PNG bytes): alpha vs epsilon for the three bounds (paper 002 Fig. 4) and the
    Bayes-error lower bound vs epsilon for n users, with the calibrated budgets marked.

    Parameters
    ----------
    n, domain
        As in ``calibrations``.
    epsilons : array_like, optional
        The budgets on the x axis (default 160 points from 0.05 to 20, log-spaced).
    cals : list, optional
        The result of ``calibrations``, whose budgets are marked.

    Returns
    -------
    bytes
        The PNG image.
    """

    eps = _epsilons(epsilons)
    curves = _curves(n, domain, eps)
    fig = new_figure(9.0, 3.4)
    ax1, ax2 = fig.subplots(1, 2)
    for label, a in curves.items():
        color, ls = _STYLE[label]
        ax1.plot(eps, np.maximum(a, 1e-12), color=color, ls=ls, label=label)
        ax2.plot(eps, b.bayes_error_bound(a, n), color=color, ls=ls, label=label)
    ax1.axhline(math.log2(n), color="black", lw=0.8, ls="-.")
    ax1.text(eps[0], math.log2(n), " log2 n", va="bottom", fontsize=7)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_ylim(max(1e-6, float(min(c.min() for c in curves.values()))), math.log2(n) * 2)
    ax1.set_xlabel("epsilon")
    ax1.set_ylabel("alpha = bound on I(U;Y) (bits)")
    ax1.set_title(f"PIE bound, n = {n:,}, |X| = {domain:,}", fontsize=9)
    ax1.legend(frameon=False, fontsize=7)
    ax2.set_xscale("log")
    ax2.set_ylim(0, 1)
    ax2.set_xlabel("epsilon")
    ax2.set_ylabel("identification error >=")
    ax2.set_title("Bayes-error lower bound, eq. 12", fontsize=9)
    for t in {t for t, _, _ in (cals or [])}:
        ax2.axhline(t, color="black", lw=0.6, ls=":")
    for t, m, c in cals or []:
        if c is not None and math.isfinite(c.epsilon) and eps[0] <= c.epsilon <= eps[-1]:
            ax2.plot([c.epsilon], [t], ms=5 if m == "glh" else 4,
                     mfc="none" if m == "glh" else None,
                     marker={"ldp": "o", "rr": "o", "glh": "s"}[m],
                     color={"ldp": "#7f7f7f", "rr": "#d62728", "glh": "#1f77b4"}[m])
    return figure_png(fig)


def _eps_cell(c) -> str:
    if c is None:
        return "not achievable"
    return "any" if math.isinf(c.epsilon) else f"{c.epsilon:.3g}"


_BY = {"ldp": "Prop. 4.1", "rr": "Thm 4.2", "glh": "Thm 4.4"}


def pie_section(n: int, domain: int, epsilons=None, targets: Sequence[float] = DEFAULT_TARGETS):
    """The report section (``reidrisk.report.Section``).

    Parameters
    ----------
    n : int
        Number of users (the report's records).
    domain : int
        Number of possible personal data (e.g. the number of possible records).
    epsilons
        As in ``plot_bounds``.
    targets
        As in ``calibrations``.

    Returns
    -------
    reidrisk.report.Section
        The section.
    """

    n = check_count(n, "number of users n")
    domain = check_count(domain, "domain size |X|")
    cals = calibrations(n, domain, targets)
    body = [
        "<p>How much can an adversary who sees one LDP report per person learn about <em>who</em> "
        "sent it (paper 002)? The personal information entropy, PIE = I(U;Y), is the mutual "
        "information between the user and the report. Every epsilon-LDP mechanism bounds it by "
        "alpha (Prop. 4.1); randomized response (RR) and general local hashing (GLH) bound it far "
        "more tightly, by lambda min{log n, log |X|} (Thms 4.2, 4.4), because a report over a "
        "large domain says little about which of n people sent it. Whatever the adversary knows "
        "and whatever matching algorithm it runs, its identification error is then at least "
        f"1 - (alpha + 1) / log2 n (Cor. 3.9). Here n = {n:,} (the records of this report) and "
        f"|X| = {domain:,} (the number of possible records of this schema, taken as the personal "
        "datum).</p>",
    ]
    rows = []
    for t, m, c in cals:
        if c is None:
            need = 2.0 ** (1.0 / (1.0 - t))
            rows.append([f"{t:g}", m.upper(), "not achievable", "-", "-", "-",
                         f"needs n >= {need:,.0f}"])
            continue
        rows.append([f"{t:g}", m.upper(), _eps_cell(c), "-" if c.g is None else str(c.g),
                     "-" if c.mi_loss is None else f"{c.mi_loss:.3g}", f"{c.alpha:.3g}",
                     _BY[c.certified_by]])
    body.append(html_table(
        ["target error", "mechanism", "largest epsilon", "g", "lambda", "alpha (bits)",
         "certified by"], rows,
        caption="The largest budget whose bound guarantees the target identification error "
                "(reidrisk pie calibrate). RR and GLH are also epsilon-LDP, so Prop. 4.1 "
                "certifies them too when it allows more.",
        numeric=[True, False, True, True, True, True, False]))
    good = [c for t, m, c in cals if c is not None and t == max(targets) and m in ("rr", "glh")]
    ldp = [c for t, m, c in cals if c is not None and t == max(targets) and m == "ldp"]
    if good and ldp:
        best = max(good, key=lambda c: c.epsilon)
        body.append(
            f"<p>For a {max(targets):g} error target the generic LDP bound allows only epsilon = "
            f"{escape(_eps_cell(ldp[0]))}; the {escape(best.mechanism.upper())} bound allows "
            f"{escape(_eps_cell(best))}. The bounds are worst cases over every prior and every "
            "adversary: no attack, whatever it knows, makes fewer errors.</p>")
    table_eps = [0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
    e = np.asarray(table_eps)
    curves = _curves(n, domain, e)
    trows = []
    for i, eps in enumerate(table_eps):
        cells = [f"{eps:g}"]
        for label in curves:
            a = float(curves[label][i])
            be = float(b.bayes_error_bound(a, n))
            cells.append(f"{a:.3g} ({max(be, 0.0):.3f})")
        trows.append(cells)
    body.append(html_table(
        ["epsilon", *curves.keys()], trows,
        caption="alpha in bits at each budget, with the identification error it guarantees in "
                "brackets (0 = no guarantee).",
        numeric=[True] * (1 + len(curves))))
    fig = ReportFigure(
        "pie_bounds.png", plot_bounds(n, domain, epsilons, cals),
        "Left: the PIE bound alpha vs epsilon (paper 002 Fig. 4). Right: the identification "
        "error every adversary must make at least, with the calibrated budgets marked on the "
        "dotted target lines.",
        "alpha and the Bayes-error lower bound against epsilon for the LDP, RR and GLH bounds")
    return Section("Re-identification risk bounds (PIE)", "".join(body), (fig,))


__all__ = ["DEFAULT_TARGETS", "calibrations", "pie_section", "plot_bounds"]
