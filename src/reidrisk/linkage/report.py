"""The linkage section of the demo report (paper 001: anonymize, attack, score).

``run_linkage_demo`` takes a table (by default a sample of UCI Adult when the data set is present,
its categorical columns as QI and its numeric columns as SA; otherwise the synthetic household
survey of ``reidrisk.data.microdata`` with paper 001's shape), applies each single anonymization of
paper 001's Table 9 once (as in its Table 13), runs every attack on every release and scores it.
``linkage_section`` turns the result into a ``reidrisk.report.Section``: a heat map of attack x
anonymization re-identification rates and a table of what each anonymization cost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reidrisk.data.adult import NUMERIC, load_adult
from reidrisk.data.microdata import make_microdata
from reidrisk.data.paths import DatasetNotFound
from reidrisk.linkage.anonymize import (
    add_noise,
    average_sa,
    delete_records,
    k_anonymize,
    shuffle_rows,
    swap_sa,
    unify,
)
from reidrisk.linkage.evaluate import Scorecard, evaluate
from reidrisk.linkage.release import Release, as_release
from reidrisk.mechanisms.base import as_generator

#: rows of the table the demo attacks (a sample keeps the section to a few seconds)
DEMO_ROWS = 1500


@dataclass(frozen=True)
class LinkageDemo:
    """Result of ``run_linkage_demo``.

    Parameters
    ----------
    source : str
        A description of the table.
    n : int
        Rows.
    qi, sa : tuple of str
        The quasi-identifier and sensitive columns.
    cards : dict of str to Scorecard
        One scorecard per anonymization, in order.
    seconds : float
        Wall time.
    """

    source: str
    n: int
    qi: tuple[str, ...]
    sa: tuple[str, ...]
    cards: dict[str, Scorecard]
    seconds: float

    def rates(self) -> pd.DataFrame:
        """Re-identification rates, one row per attack, one column per anonymization.

        Returns
        -------
        pandas.DataFrame
            The rates.
        """
        return pd.DataFrame({name: {r.attack: r.rate for r in card.rates}
                             for name, card in self.cards.items()})


def _default_table(n: int, gen: np.random.Generator) -> tuple[pd.DataFrame, list, list, str]:
    try:
        adult = load_adult("train")
    except DatasetNotFound:
        m = make_microdata(n, rng=gen)
        return (m.data, list(m.qi), list(m.sa),
                f"a synthetic household survey of {n:,} rows with paper 001's shape "
                "(UCI Adult is not installed)")
    rows = np.sort(gen.choice(len(adult), size=min(n, len(adult)), replace=False))
    frame = adult.iloc[rows].reset_index(drop=True)
    sa = [c for c in frame.columns if c in NUMERIC]
    qi = [c for c in frame.columns if c not in NUMERIC]
    return frame, qi, sa, f"a random sample of {len(frame):,} rows of UCI Adult"


def anonymizations(qi: Sequence[str], sa: Sequence[str], k: int = 5) -> dict:
    """The single anonymizations of paper 001's Table 9 as {name: function(X, rng) -> Release}.

    Parameters
    ----------
    qi, sa : sequence of str
        The quasi-identifier and sensitive columns.
    k : int
        The k of k-anonymization.

    Returns
    -------
    dict
        {name: function(X, rng) -> Release}, in the table's order.
    """
    qi, sa = list(qi), list(sa)
    return {
        "original": lambda x, g: as_release(x),
        f"{k}-anonymity": lambda x, g: k_anonymize(x, qi, k),
        "noise 10%": lambda x, g: add_noise(x, sa, 0.1, rng=g),
        "shuffled": lambda x, g: shuffle_rows(x, rng=g),
        f"unify {qi[0]}": lambda x, g: unify(x, [qi[0]]),
        "SA averaged": lambda x, g: average_sa(x, qi, sa),
        "SA swapped": lambda x, g: swap_sa(x, qi, sa, rng=g),
        "10% deleted": lambda x, g: delete_records(x, 0.1, rng=g),
    }


def run_linkage_demo(original: pd.DataFrame | None = None, *, qi: Sequence[str] | None = None,
                     sa: Sequence[str] | None = None, n: int = DEMO_ROWS,
                     attacks: Sequence[str] | None = None, rng=0) -> LinkageDemo:
    """Apply each single anonymization to ``original`` (default: a sample of ``n`` rows of UCI
    Adult, or the synthetic survey when Adult is absent), attack and score every release.

    Parameters
    ----------
    original : pandas.DataFrame, optional
        The table (default: the sample above).
    qi, sa : sequence of str, optional
        Its quasi-identifier and sensitive columns; required with ``original``.
    n : int
        Rows of the default sample.
    attacks : sequence of str, optional
        Keys of ``ATTACKS`` to run (default: all).
    rng : numpy.random.Generator or int
        Generator or seed (default 0).

    Returns
    -------
    LinkageDemo
        The scorecards of every anonymization.
    """
    t0 = time.perf_counter()
    gen = as_generator(rng)
    if original is None:
        original, qi, sa, source = _default_table(n, gen)
    else:
        if qi is None or sa is None:
            raise ValueError("give qi and sa with original")
        source = f"the given table of {len(original):,} rows"
    cards = {}
    for name, make in anonymizations(qi, sa).items():
        release: Release = make(original, gen)
        cards[name] = evaluate(original, release, qi=qi, sa=sa, attacks=attacks, rng=gen)
    return LinkageDemo(source, len(original), tuple(qi), tuple(sa), cards,
                       time.perf_counter() - t0)


def plot_linkage_heatmap(rates: pd.DataFrame) -> bytes:
    """PNG of a heat map: attacks (rows) x anonymizations (columns), the rate printed in each cell.

    Parameters
    ----------
    rates : pandas.DataFrame
        Rates with attacks as rows and anonymizations as columns.

    Returns
    -------
    bytes
        The PNG image.
    """
    # matplotlib: loaded only when a figure is drawn
    from reidrisk.report.plots import figure_png, new_figure

    values = rates.to_numpy(dtype=float)
    fig = new_figure(1.1 * values.shape[1] + 2.0, 0.42 * values.shape[0] + 1.6)
    ax = fig.add_subplot()
    image = ax.imshow(values, vmin=0.0, vmax=1.0, cmap="Reds", aspect="auto")
    ax.set_xticks(range(values.shape[1]), [str(c) for c in rates.columns], rotation=30, ha="right")
    ax.set_yticks(range(values.shape[0]), [str(r) for r in rates.index])
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if v > 0.6 else "black")
    ax.set_xlabel("anonymization")
    ax.set_ylabel("attack")
    fig.colorbar(image, ax=ax, label="re-identification rate", shrink=0.9)
    return figure_png(fig)


def linkage_section(demo: LinkageDemo):
    """The report section (``reidrisk.report.Section``) of a ``run_linkage_demo`` result.

    Parameters
    ----------
    demo : LinkageDemo
        The result.

    Returns
    -------
    reidrisk.report.Section
        The section.
    """
    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report import ReportFigure, Section, escape, html_table

    rates = demo.rates()
    worst = {name: max(card.rates, key=lambda r: r.rate) for name, card in demo.cards.items()}
    body = [
        "<p>Before publishing an anonymized table, check how many of its rows link back to their "
        f"owners (paper 001). The table is {escape(demo.source)}: {len(demo.qi)} quasi-identifiers "
        f"(QI: {escape(', '.join(demo.qi))}) and {len(demo.sa)} sensitive numeric columns (SA: "
        f"{escape(', '.join(demo.sa))}). Each anonymization of paper 001's Table 9 is applied once "
        "on its own and every attack links the release back to the original without seeing the "
        "true mapping; the rate is the share of released rows linked to their true row. E1-E4 are "
        "the PWSCUP 2015 attacks, EUC1/EUC2 paper 001's Euclidean attacks (EUC1 gives up when no "
        "original row shares the QI vector), assign a one-to-one assignment on all columns.</p>",
    ]
    rows = []
    for name, card in demo.cards.items():
        u, s, w = card.utility, card.security, worst[name]
        rows.append([name, f"{u.U1_meanMAE:.3g}", f"{u.U2_crossMean:.3g}", f"{u.U3_crossCnt:.3g}",
                     f"{u.U4_corMAE:.3f}", f"{u.U5_IL:.4f}", str(u.U6_nrow), str(s.S1_min_class),
                     f"{s.S2_mean_class:.2f}",
                     f"{w.attack} {w.rate:.2f} [{w.low:.2f}, {w.high:.2f}]"])
    body.append(html_table(
        ["anonymization", "U1 meanMAE", "U2 crossMean", "U3 crossCnt", "U4 corMAE", "U5 IL",
         "U6 rows deleted", "S1 min class", "S2 mean class", "strongest attack (95% CI)"],
        rows,
        caption="What each anonymization cost (lower is better; definitions in "
                "reidrisk.linkage.scores) and the strongest attack against it.",
        numeric=[False] + [True] * 8 + [False]))
    safe = [n for n, w in worst.items() if w.rate < 0.05]
    body.append("<p>" + (f"Only {escape(', '.join(safe))} kept every attack under 5%. "
                         if safe else "No single anonymization kept every attack under 5%. ")
                + "A release is only as safe as the strongest attack against it: noise and "
                "swapping leave the QI intact, k-anonymity and unification leave the SA intact, "
                "and an attack that uses the untouched part links most rows back. Combine "
                "anonymizations (a pipeline: <code>reidrisk linkage anonymize --config</code>) "
                f"and check the result with <code>reidrisk linkage evaluate</code>. "
                f"({demo.seconds:.1f} s)</p>")
    fig = ReportFigure("linkage.png", plot_linkage_heatmap(rates),
                       "Re-identification rate of each attack (rows) against each single "
                       "anonymization (columns); darker = more rows linked to their owner.",
                       "Heat map of re-identification rates, attacks by anonymizations")
    return Section("Linkage: re-identifying an anonymized release", "".join(body), (fig,))


__all__ = ["DEMO_ROWS", "LinkageDemo", "anonymizations", "linkage_section", "plot_linkage_heatmap",
           "run_linkage_demo"]
