"""The measures an assessment adds beside class sizes and risks: SUDA, sensitive attributes and the
measured next steps (a k-anonymous release, LDP collection).

Each is an ``Extra`` of ``reidrisk.assess.run``: ``extra(table, fk, missing)`` returns the
per-record columns (``records``), the per-table figures (``summary``) and the report's section
(``html``).
"""

from __future__ import annotations

import html
import math

import numpy as np

from reidrisk.assess.classes import AssessError
from reidrisk.assess.next_steps import candidate_release, ldp_option
from reidrisk.assess.run import Extra
from reidrisk.assess.table import PreparedTable


def _fmt(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.3g}"


def release_extra(k: int, rng: np.random.Generator | int | None = 0) -> Extra:
    """The candidate k-anonymous release and its attack rates (``next_steps.candidate_release``).

    Parameters
    ----------
    k : int
        The smallest class size the release must reach.
    rng : Generator, int or None
        Breaks the attacks' ties.

    Returns
    -------
    Extra
        The measure, for ``reidrisk.assess.run.assess``.
    """

    def extra(table: PreparedTable, fk: np.ndarray, missing: str) -> dict:
        try:
            cand = candidate_release(table, k, rng)
        except AssessError as exc:
            return {"summary": {"candidate_release": {"note": str(exc)}},
                    "html": f"<h2>A {k}-anonymous release</h2><p>{html.escape(str(exc))}</p>"}
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{100 * r:.2f} %</td>"
            f"<td>{100 * lo:.2f}-{100 * hi:.2f} %</td></tr>"
            for name, (r, lo, hi) in cand.attack_rates.items())
        merged = ", ".join(f"{html.escape(c)} ({m})" for c, m in cand.merged_values.items()) or "none"
        page = (f"<h2>A {k}-anonymous release, attacked</h2><p>Greedy global recoding of the QIs "
                f"(<code>reidrisk linkage anonymize</code>) reaches k = {cand.k_reached} by "
                f"merging values of {merged} and suppressing {cand.rows_suppressed:,} rows. The "
                "linkage attacks of <code>reidrisk linkage evaluate</code> then re-identify this "
                "share of its rows (95 % interval); safe: close to 0.</p>"
                f"<div class='scroll'><table><thead><tr><th>attack</th><th>re-identified</th>"
                f"<th>interval</th></tr></thead><tbody>{rows}</tbody></table></div>"
                + (f"<p class='note'>{html.escape(cand.note)}</p>" if cand.note else ""))
        return {"summary": {"candidate_release": cand.to_dict()}, "html": page}

    return extra


def ldp_extra(N: int, target_error: float, model: bool,
              rng: np.random.Generator | int | None = 0) -> Extra:
    """The LDP budget PIE certifies and, with ``model``, the uniqueness left at it
    (``next_steps.ldp_option``).

    Parameters
    ----------
    N : int
        The population size.
    target_error : float
        The identification error to guarantee.
    model : bool
        Also predict the uniqueness left at the budget (minutes on 10^4 records).
    rng : Generator, int or None
        The simulated randomization's and the model's randomness.

    Returns
    -------
    Extra
        The measure, for ``reidrisk.assess.run.assess``.
    """

    def extra(table: PreparedTable, fk: np.ndarray, missing: str) -> dict:
        try:
            opt = ldp_option(table, N, target_error, rng, model)
        except AssessError as exc:
            return {"summary": {"ldp": {"note": str(exc)}},
                    "html": f"<h2>Collecting under LDP instead</h2><p>{html.escape(str(exc))}</p>"}
        left = (f" Paper 000's model, fitted on reports randomized at that budget, gives a mean "
                f"P(unique) of {_fmt(opt.mean_p_unique)} and {100 * opt.share_likely_unique:.1f} % "
                "of records likely unique (P > 0.5)." if math.isfinite(opt.mean_p_unique) else
                " Add --ldp-uniqueness to predict the uniqueness left at that budget.")
        page = (f"<h2>Collecting under LDP instead</h2><p>Collected under k-ary randomized "
                f"response, a whole-record budget of at most epsilon = {_fmt(opt.epsilon)} (split "
                f"evenly over the {len(table.qis)} QIs) keeps an attacker's identification error "
                f"at or above {opt.target_error:g} for {table.n:,} people, as PIE certifies "
                f"(<code>reidrisk pie calibrate</code>, bound: {html.escape(opt.certified_by)}).{left}"
                "</p>" + (f"<p class='note'>{html.escape(opt.note)}</p>" if opt.note else ""))
        return {"summary": {"ldp": opt.to_dict()}, "html": page}

    return extra


def default_extras(max_msu: int = 4) -> dict[str, Extra]:
    """The extras ``reidrisk assess`` always runs: SUDA and the diversity of every SA.

    Parameters
    ----------
    max_msu : int
        The largest minimal sample unique SUDA searches (0: no SUDA).

    Returns
    -------
    dict of str to Extra
        The measures by name, for ``reidrisk.assess.run.assess``.
    """
    return {}


__all__ = ["default_extras", "ldp_extra", "release_extra"]
