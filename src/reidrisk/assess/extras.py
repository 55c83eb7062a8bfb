"""The measures an assessment adds beside class sizes and risks: SUDA, sensitive attributes and the
measured next steps (a k-anonymous release, LDP collection).

Each is an ``Extra`` of ``reidrisk.assess.run``: ``extra(table, fk, missing)`` returns the
per-record columns (``records``), the per-table figures (``summary``) and the report's section
(``html``).
"""

from __future__ import annotations

import dataclasses
import html
import math

import numpy as np
import pandas as pd

from reidrisk.assess.classes import MISSING, AssessError, DistinctRows, distinct_match_sums
from reidrisk.assess.diversity import record_diversity
from reidrisk.assess.next_steps import candidate_release, ldp_option
from reidrisk.assess.run import Extra
from reidrisk.assess.suda import suda
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
                f"merging values of {merged} and suppressing {cand.rows_suppressed:,} rows: "
                f"{100 * cand.cells_generalized:.1f} % of the released QI values are a group "
                "instead of the original value (the information lost). The "
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
        page = (f"<h2>Collecting under LDP instead</h2><p>Collected under local differential "
                f"privacy (each QI randomized on the person's device, k-ary randomized response), "
                f"a whole-record budget of at most epsilon = {_fmt(opt.epsilon)} (split evenly "
                f"over the {len(table.qis)} QIs) keeps an attacker's identification error at or "
                f"above {opt.target_error:g} for {table.n:,} people, as PIE certifies for any "
                "epsilon-LDP collection (<code>reidrisk pie calibrate -m ldp</code>, paper 002 "
                f"Prop. 4.1).{left}"
                "</p>" + (f"<p class='note'>{html.escape(opt.note)}</p>" if opt.note else ""))
        return {"summary": {"ldp": opt.to_dict()}, "html": page}

    return extra


def suda_extra(max_msu: int = 4, dis_fraction: float = 0.01) -> Extra:
    """SUDA of every record (``reidrisk.assess.suda.suda``, docs/design/assess.md#suda).

    Per record (per row of an aggregated table, whose repeated rows have no MSU): ``suda_score``,
    ``dis_suda_score`` and ``msu_1`` .. ``msu_m``, its minimal sample uniques of each size. Per
    table (``summary["suda"]``): the largest size searched, the records with an MSU and the
    MSUs of each size (counted over records), the DIS probability and each QI's contribution
    to the total score in percent.

    Parameters
    ----------
    max_msu : int
        The largest MSU size searched (at most the number of QIs; smaller tables use all).
    dis_fraction : float
        The sampling fraction of the DIS-SUDA score, in (0, 1).

    Returns
    -------
    Extra
        The measure, for ``reidrisk.assess.run.assess``.
    """

    def extra(table: PreparedTable, fk: np.ndarray, missing: str) -> dict:
        q = table.codes.shape[1]
        m = min(max_msu, q)
        counts = np.rint(table.multiplicity).astype(np.int64)
        codes = np.repeat(table.codes, counts, axis=0)
        rec_fk = np.repeat(np.rint(np.asarray(fk)).astype(np.int64), counts)
        res = suda(codes.astype(np.int64), m, missing=missing, dis_fraction=dis_fraction,
                   fk=rec_fk)
        first = np.cumsum(counts) - counts  # each row's first record
        records = pd.DataFrame({"suda_score": res.score[first],
                                "dis_suda_score": res.dis_score[first],
                                **{f"msu_{k + 1}": res.msu_counts[first, k] for k in range(m)}})
        contribution = {name: float(c) for name, c in zip(table.qis, res.contribution,
                                                           strict=True)}
        summary = {"max_msu_size": m,
                   "records_with_msu": int(res.msu_counts.any(axis=1).sum()),
                   "msus_by_size": [int(x) for x in res.msu_counts.sum(axis=0)],
                   "dis_probability": res.dis, "dis_fraction": dis_fraction,
                   "contribution_percent": contribution}
        top = sorted(contribution.items(), key=lambda kv: -kv[1])
        rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{pct:.1f} %</td></tr>"
                       for name, pct in top)
        by_size = ", ".join(f"{c:,} of size {k + 1}" for k, c in enumerate(summary["msus_by_size"]))
        page = (f"<h2>Special uniques (SUDA)</h2><p>{summary['records_with_msu']:,} of "
                f"{len(codes):,} records are unique on a set of at most {m} QIs none of whose "
                f"subsets is unique (a minimal sample unique, MSU): {by_size}. The fewer QIs an "
                "MSU needs, the easier the record is to single out; safe: no MSU (SUDA score 0). "
                "The SUDA score sums (q - size)! over a record's MSUs; the DIS-SUDA score "
                f"(sampling fraction {dis_fraction:g}) turns it into a probability that a unique "
                "match on the record is correct (per record in the records file). Share of the "
                "total score that involves each QI (an MSU of several QIs counts for each):</p>"
                "<div class='scroll'><table><thead><tr><th>QI</th><th>contribution</th></tr>"
                f"</thead><tbody>{rows}</tbody></table></div>")
        return {"records": records, "summary": {"suda": summary}, "html": page}

    return extra


def diversity_extra() -> Extra:
    """The diversity of every sensitive attribute in each record's class
    (``reidrisk.assess.diversity``, docs/design/assess.md#sensitive-attributes).

    Per record (``records.csv``): ``l_<sa>``, ``entropy_l_<sa>`` and ``t_<sa>``. Per table: the
    worst over the sensitive attributes as ``l_diversity``, ``entropy_l_diversity``,
    ``recursive_cl`` (c and l), ``t_closeness``, ``delta_disclosure`` and ``beta_likeness``, and
    each attribute's own figures under ``diversity``. Rows of an aggregated table count with their
    records.

    Returns
    -------
    Extra
        The measure, for ``reidrisk.assess.run.assess``.
    """

    def extra(table: PreparedTable, fk: np.ndarray, missing: str) -> dict:
        if not table.sensitive:
            return {"summary": {key: None for key in DIVERSITY_KEYS}}
        distinct = DistinctRows.of(table.codes)
        mult = table.multiplicity
        columns: dict[str, np.ndarray] = {}
        per_sa: dict[str, dict] = {}
        for sens in table.sensitive:
            size = len(sens.categories)
            seen = sens.codes != MISSING
            u = distinct.rows.shape[0]
            totals = np.bincount(distinct.inverse[seen] * size + sens.codes[seen],
                                 weights=mult[seen], minlength=u * size).reshape(u, size)
            counts = distinct_match_sums(distinct, totals, missing)
            whole = np.bincount(sens.codes[seen], weights=mult[seen], minlength=size)
            if whole.sum() == 0:
                per_sa[sens.name] = {"note": "no observed value"}
                continue
            rec = record_diversity(counts, whole, sens.ordered, distinct.inverse)
            columns[f"l_{sens.name}"] = rec.distinct_l
            columns[f"entropy_l_{sens.name}"] = rec.entropy_l
            columns[f"t_{sens.name}"] = rec.t_closeness
            per_sa[sens.name] = dataclasses.asdict(rec.summary())
        figures = [v for v in per_sa.values() if "distinct_l" in v]
        summary: dict = {"diversity": per_sa}
        if figures:
            summary.update(
                l_diversity=min(f["distinct_l"] for f in figures),
                entropy_l_diversity=min(f["entropy_l"] for f in figures),
                recursive_cl={"c": max(f["recursive_c"] for f in figures),
                              "l": min(f["recursive_l"] for f in figures)},
                t_closeness=max(f["t_closeness"] for f in figures),
                delta_disclosure=max(f["delta_disclosure"] for f in figures),
                beta_likeness=max(f["basic_beta"] for f in figures))
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{f['distinct_l']}</td>"
            f"<td>{f['entropy_l']:.3g}</td><td>({f['recursive_c']:g}, {f['recursive_l']})</td>"
            f"<td>{f['t_closeness']:.3g}{' (ordered)' if f['ordered'] else ''}</td>"
            f"<td>{f['delta_disclosure']:.3g}</td><td>{f['basic_beta']:.3g}</td></tr>"
            for name, f in per_sa.items() if "distinct_l" in f)
        page = ("<h2>What the sensitive attributes give away</h2><p>For each sensitive attribute, "
                "the worst class: <em>l</em>, the fewest distinct values a class holds (safe: at "
                "least 2, better 3 or more: with 1, everyone matching the record shares its "
                "value); <em>entropy l</em>, the same weighted by how even the values are; "
                "recursive <em>(c, l)</em>, the c for which the commonest value is below c times "
                "the rest; <em>t</em>, how far a class's distribution is from the whole table's "
                "(0 to 1; safe: small, e.g. below 0.2); δ and β, the largest change in what an "
                "attacker believes about a value (log ratio; relative) on learning the class (safe: "
                "small).</p><div class='scroll'><table><thead><tr><th>attribute</th><th>l</th>"
                "<th>entropy l</th><th>(c, l)</th><th>t</th><th>δ</th><th>β</th></tr></thead>"
                f"<tbody>{rows}</tbody></table></div>") if rows else ""
        return {"records": pd.DataFrame(columns) if columns else None, "summary": summary,
                "html": page}

    return extra


DIVERSITY_KEYS = ("l_diversity", "entropy_l_diversity", "recursive_cl", "t_closeness",
                  "delta_disclosure", "beta_likeness")
"""The table-level keys of the diversity measures in ``summary.json`` (null without an SA)."""


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
    extras = {"suda": suda_extra(max_msu)} if max_msu > 0 else {}
    extras["sensitive attributes"] = diversity_extra()
    return extras


__all__ = ["DIVERSITY_KEYS", "default_extras", "diversity_extra", "ldp_extra", "release_extra",
           "suda_extra"]
