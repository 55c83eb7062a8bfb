"""The HTML report of ``reidrisk.story``: one section per step, every sentence built from the
step's numbers (a comparison is worded by the numbers it compares, so the text cannot contradict
the tables).

``story_sections(story)`` returns the report's sections; ``write_story(story, out)`` writes
``out/index.html`` (``reidrisk.report.write_report``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from reidrisk.report.html import Section, html_table, paragraph, write_report
from reidrisk.story import AGE_WIDTH, SENSITIVE, Story

TITLE = "reidrisk: the main job on one table"

SAFE_SHARE = 0.05
"""A linkage attack that re-identifies fewer than 5 % of rows is called low here; above it the
section says the release still leaks."""


def _pct(x: float) -> str:
    """A share in per cent: one decimal, or two significant digits below 1 % (never "0.0 %" for a
    share that is not 0)."""
    if x == 0 or 100 * abs(x) >= 1:
        return f"{100 * x:.1f} %"
    return f"{100 * x:.2g} %"


def _compare(a: float, b: float, tol: float = 1e-9) -> str:
    """"below", "equal to" or "above": ``a`` against ``b``."""
    return "equal to" if abs(a - b) <= tol * max(1.0, abs(b)) else ("below" if a < b else "above")


def _versus(distance: float, guess: float) -> str:
    """An estimate's distance to the truth against a guess's, in words (smaller is better)."""
    return {"below": "better", "equal to": "no better", "above": "worse"}[_compare(distance, guess)]


def _population_html(story: Story) -> str:
    t = story.table
    return (paragraph(
        f"The population: the {story.population:,} people of the UCI Adult extract shipped with "
        "reidrisk (Becker & Kohavi 1996, UCI Machine Learning Repository, CC BY 4.0). The data "
        f"holder's table: a random sample of {t.n:,} of them (seed {story.seed}), with the "
        f"quasi-identifiers (QIs) {', '.join(t.qis)} (age in {AGE_WIDTH}-year bins): what an "
        "attacker may know about a person from elsewhere; and the sensitive attributes "
        f"{' and '.join(SENSITIVE)}. Every step below works on this table, and because the whole "
        "population is known, every estimate is compared with the truth."))


def _assess_section(story: Story) -> Section:
    a = story.assessment
    att = a.attackers["journalist"]
    at_risk = att.records_at_risk
    k = a.k_anonymity
    truth = int(story.truly_unique.sum())
    rows = []
    for name, fig in a.uniques.items():
        est = float(fig.in_table)
        rows.append([name if name != "reidrisk" else "paper 000's model", f"{est:,.0f}",
                     f"{est - truth:+,.0f}", fig.assumes])
    errors = {("paper 000's model" if name == "reidrisk" else name):
              abs(float(fig.in_table) - truth) for name, fig in a.uniques.items()}
    best = [name for name, e in errors.items() if e == min(errors.values())]
    drops = [o for o in a.options if o.action == "drop" and len(o.columns) == 1]
    top = min(drops, key=lambda o: o.expected_reidentifications) if drops else None
    body = _population_html(story) + paragraph(
        f"k-anonymity is {k}: the smallest group of records sharing their QIs has {k} "
        f"record{'s' if k != 1 else ''} (safe: k of {story.k} or more, a re-identification "
        f"chance of at most 1 / {story.k}). {_pct(at_risk)} of the records have a "
        f"re-identification risk above {a.threshold:g} (safe: none), and the expected number of "
        f"re-identifications by an attacker matching each record against the population is "
        f"{a.expected_reidentifications:,.1f} of {a.n:,} (the sum of the individual risks; safe: "
        "close to 0). The table is "
        + ("not safe to publish as it is." if k < story.k or at_risk > 0 else
           "safe to publish by these measures."))
    body += paragraph(
        f"How many of the table's records are unique in the whole population: truly {truth:,} "
        f"(counted on the {story.population:,} people). The estimators see only the table; the "
        f"closest here: {' and '.join(best)}, off by {min(errors.values()):,.0f}.")
    body += html_table(["estimator", "population uniques in the table", "minus the truth",
                        "assumes"], rows, numeric=[False, True, True, False])
    if top is not None:
        body += paragraph(
            f"What drives the risk: leaving {top.columns[0]} out alone would bring the expected "
            f"re-identifications from {a.expected_reidentifications:,.1f} to "
            f"{top.expected_reidentifications:,.1f} and the records at risk to "
            f"{_pct(top.records_at_risk)}; it is the QI that lowers the risk most. Dropping QIs "
            "loses what they tell; the next step keeps them all but coarsens them instead.")
    return Section("1. Assess the table", body, anchor="assess")


def _release_section(story: Story) -> Section:
    r = story.release
    rows = [[name, _pct(rate), f"{_pct(lo)} - {_pct(hi)}"]
            for name, (rate, lo, hi) in r.attack_rates.items()]
    worst_name, (worst, _, _) = max(r.attack_rates.items(), key=lambda kv: kv[1][0])
    merged = ", ".join(f"{c} ({m} values)" for c, m in r.merged_values.items()) or "no QI"
    body = paragraph(
        f"The remedy measured: the table's QIs recoded until every group of equal QIs has at least "
        f"{r.k_target} records (greedy global recoding, reidrisk linkage anonymize). It reaches "
        f"k = {r.k_reached} by merging values of {merged} and deleting {r.rows_suppressed:,} "
        "rows. The linkage attacks of paper 001 then try to link each released row to its "
        "original row, knowing the original table: the share they link right, with its 95 % "
        "interval (safe: close to 0).")
    body += html_table(["attack", "rows re-identified", "95 % interval"], rows,
                       numeric=[False, True, True])
    zero = [name for name, (rate, _, _) in r.attack_rates.items() if rate == 0]
    body += paragraph(
        "E1, E2 and EUC1 look among the original rows whose QIs equal a released row's (E1 picks "
        f"one at random, E2 and EUC1 the nearest in {SENSITIVE[0]}); EUC2 does the same but "
        "falls back to every original row when none matches; assign links all rows at once as "
        "one best matching over all columns."
        + (f" {', '.join(zero)} link{'s' if len(zero) == 1 else ''} no row: a recoded QI value "
           "(a group of merged values) equals no original value, so an attack that needs an "
           "exact QI match finds no candidate." if zero else ""))
    if worst >= SAFE_SHARE:
        body += paragraph(
            f"The release still leaks: {worst_name} re-identifies {_pct(worst)} of its rows, "
            f"above the {_pct(SAFE_SHARE)} called low here. k-anonymity protects the QIs, not the "
            "sensitive values, which an attacker who holds the original table can match. "
            "k-anonymity therefore loses to this attacker.")
    else:
        body += paragraph(f"The strongest attack, {worst_name}, re-identifies {_pct(worst)}, "
                          f"below the {_pct(SAFE_SHARE)} called low here.")
    if r.note:
        body += paragraph(r.note)
    return Section(f"2. Release it {r.k_target}-anonymous, and attack", body, anchor="release")


def _collect_section(story: Story) -> Section:
    c = story.collection
    n = story.n
    g = len(story.table.qis)
    rows, lost = [], []
    for name, tv in c.marginal_tv.items():
        u = c.uniform_tv[name]
        rows.append([name, f"{tv:.3f}", f"{u:.3f}", _versus(tv, u)])
        if tv >= u - 1e-9:
            lost.append(name)
    rows.append([f"{' x '.join(c.table_cols)} (3-way)", f"{c.table_tv:.3f}",
                 f"{c.table_uniform_tv:.3f}", _versus(c.table_tv, c.table_uniform_tv)])
    body = paragraph(
        "Instead of releasing the table, the data holder could collect the same QIs from the same "
        f"{n:,} people under local differential privacy (LDP): each person randomizes their own "
        "answers before sending them, so no one ever holds the true table. PIE (paper 002) gives "
        f"the budget: epsilon = {c.epsilon:.3g} for the whole record is the largest at which any "
        f"attacker linking a report to its person among the {n:,} is wrong with probability at "
        f"least {story.target_error:g} (Prop. 4.1, valid for every epsilon-LDP mechanism; "
        "reidrisk pie calibrate). Each QI is then randomized by k-ary randomized response at "
        f"epsilon / {g} = {c.epsilon / g:.3g} (paper 004), and reidrisk collect estimates every "
        "marginal and a 3-way table from the reports.")
    body += paragraph(
        "Accuracy: the total variation distance between each estimate and the table's truth (0 is "
        "exact, 1 is disjoint; safe here means useful: well below the uniform guess's distance).")
    body += html_table(["distribution", "estimate", "uniform guess", "estimate vs guess"], rows,
                       numeric=[False, True, True, False])
    if lost:
        names = lost[0] if len(lost) == 1 else f"{', '.join(lost[:-1])} and {lost[-1]}"
        body += paragraph(
            f"At this budget the estimate{'s' if len(lost) > 1 else ''} of {names} "
            f"{'are' if len(lost) > 1 else 'is'} no better than a uniform guess: "
            f"{n:,} reports at epsilon {c.epsilon / g:.3g} per QI do not carry enough signal, and "
            "the collection loses there. A lower target error or more people raise the budget.")
    fallback = {"none": "kept the dependence between the QIs",
                "independence": "found no dependence between QIs beyond the noise and treats "
                                "them as independent",
                "uniform": "found no signal beyond the noise and falls back to uniform"}
    body += paragraph(f"The fitted model {fallback.get(c.fallback, c.fallback)}; its 3-way table "
                      f"is {_versus(c.table_tv, c.table_uniform_tv)} than the uniform guess.")
    return Section("3. Collect it under LDP instead", body, anchor="collect")


def _remaining_section(story: Story) -> Section:
    r = story.remaining
    truth = int(r.truly_unique.sum())
    bound = 1 - story.target_error
    pred = float(r.p_unique.sum())
    rows = [["paper 000's model on the LDP reports", f"{pred:,.0f}", f"{pred - truth:+,.0f}",
             _flagged(r.p_unique, r.truly_unique)]]
    if r.raw_p_unique is not None:
        raw = float(r.raw_p_unique.sum())
        rows.insert(0, ["paper 000's model on the table (step 1)", f"{raw:,.0f}",
                        f"{raw - truth:+,.0f}", _flagged(r.raw_p_unique, r.truly_unique)])
    body = paragraph(
        f"Linking the reports: an attacker who knows every person's true QIs and holds all "
        f"{story.n:,} reports picks, for each person, the report agreeing on the most QIs. They "
        f"find the person's own report for {_pct(r.link_rate)} of the people (a blind guess: "
        f"{_pct(r.link_chance)}); PIE guarantees at most {_pct(bound)} for any attacker (an error "
        f"of at least {story.target_error:g}). The measured attack is "
        f"{_compare(r.link_rate, bound)} the guarantee"
        + (", as it must be." if r.link_rate <= bound else
           ": the guarantee is broken, which is a defect to report.")
        + f" On the {story.k}-anonymous release of step 2 the strongest attack linked "
        f"{_pct(max(v[0] for v in story.release.attack_rates.values()))} of the rows.")
    body += paragraph(
        "Who is unique in the population: what the reports still reveal about the population's "
        f"structure. Paper 000's model, fitted on the reports (a sample at rate {story.n:,} / "
        f"{story.population:,}), predicts for each person of the table the probability that their "
        f"QIs are unique among the {story.population:,} people; the truth is {truth:,} of "
        f"{story.n:,}. A person predicted unique is exposed by any other release of these QIs.")
    body += html_table(["from", "predicted population uniques", "minus the truth",
                        "flagged P > 0.5: right / all"], rows, numeric=[False, True, True, True])
    if r.raw_p_unique is not None:
        raw_err = abs(float(r.raw_p_unique.sum()) - truth)
        err = abs(pred - truth)
        if err <= raw_err:
            body += paragraph(
                "The count from the LDP reports is "
                + ("closer to the truth than" if err < raw_err else "as close to the truth as")
                + " the count from the true table: randomization hides who answered what, not how "
                "many people are unique, so the population's uniques stay as exposed as they were.")
        else:
            body += paragraph(
                "The count from the LDP reports is further from the truth than the count from the "
                "true table: at this budget the reports carry too little of the QIs' joint "
                "distribution for the model, which loses here; it is no guide to who is unique.")
    return Section("4. The risk that remains", body, anchor="remaining")


def _flagged(p: np.ndarray, truth: np.ndarray) -> str:
    flagged = p > 0.5
    return f"{int((flagged & truth).sum()):,} / {int(flagged.sum()):,}"


def story_sections(story: Story) -> list[Section]:
    """The report's sections, one per step of ``reidrisk.story``.

    Parameters
    ----------
    story : Story
        The steps' results.

    Returns
    -------
    list of Section
        Assess, release, collect under LDP, the risk that remains.
    """
    return [_assess_section(story), _release_section(story), _collect_section(story),
            _remaining_section(story)]


def story_summary(story: Story) -> str:
    """A few lines for the terminal: each step's headline number.

    Parameters
    ----------
    story : Story
        The steps' results.

    Returns
    -------
    str
        The summary.
    """
    a, r, c, left = story.assessment, story.release, story.collection, story.remaining
    worst_name, (worst, _, _) = max(r.attack_rates.items(), key=lambda kv: kv[1][0])
    return "\n".join([
        f"The table: {story.n:,} people of the {story.population:,} in the Adult extract.",
        f"1. assess: k = {a.k_anonymity}, {_pct(a.attackers['journalist'].records_at_risk)} of "
        f"records at risk, {a.expected_reidentifications:,.1f} expected re-identifications, "
        f"{int(story.truly_unique.sum()):,} records unique in the population",
        f"2. {r.k_target}-anonymous release: {r.rows_suppressed:,} rows deleted; the strongest "
        f"attack ({worst_name}) re-identifies {_pct(worst)}",
        f"3. LDP collection at epsilon {c.epsilon:.3g} (error >= {story.target_error:g}): "
        f"{sum(c.marginal_tv[q] < c.uniform_tv[q] - 1e-9 for q in c.marginal_tv)} of "
        f"{len(c.marginal_tv)} marginals beat a uniform guess",
        f"4. linking the reports: {_pct(left.link_rate)} (guaranteed <= "
        f"{_pct(1 - story.target_error)}); predicted population uniques "
        f"{float(left.p_unique.sum()):,.0f} (truth {int(left.truly_unique.sum()):,})",
    ])


def write_story(story: Story, out: str | Path) -> Path:
    """Write the story's report to ``out/index.html``.

    Parameters
    ----------
    story : Story
        The steps' results.
    out : str or Path
        The report folder (replaced whole, ``write_report``).

    Returns
    -------
    Path
        ``out/index.html``.
    """
    subtitle = (f"{story.n:,} people of {story.population:,} (UCI Adult extract), seed "
                f"{story.seed}: assess, release, collect under LDP, the risk that remains")
    return write_report(story_sections(story), out, title=TITLE, subtitle=subtitle)


__all__ = ["SAFE_SHARE", "TITLE", "story_sections", "story_summary", "write_story"]
