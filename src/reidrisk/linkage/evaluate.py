"""One scorecard for a release: utility, security and every attack's re-identification rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from reidrisk.linkage.attacks import ATTACKS, METRIC_ATTACKS, METRICS, attack
from reidrisk.linkage.generalization import RecodeMap, read_release
from reidrisk.linkage.release import LinkageError, Release, check_columns, check_truth
from reidrisk.linkage.scores import (
    Rate,
    Security,
    Utility,
    reid_rate,
    security_scores,
    utility_scores,
)
from reidrisk.mechanisms.base import as_generator


@dataclass(frozen=True)
class Scorecard:
    """Scores of one release.

    Parameters
    ----------
    utility : Utility
        U1-U6.
    security : Security
        S1-S2.
    rates : tuple of Rate
        One per attack; empty when the true mapping is unknown.
    n_original, n_release : int
        Rows of the original table and of the release.
    scale : bool
        SA standardized for the distance attacks.
    metric : str
        The SA distance asked for (``"auto"`` or one of ``attacks.METRICS``); each rate names the
        one its attack used.
    notes : tuple of str
        What could not be computed and why.
    """

    utility: Utility
    security: Security
    rates: tuple[Rate, ...]
    n_original: int
    n_release: int
    scale: bool = False
    notes: tuple[str, ...] = ()
    metric: str = "auto"

    def to_dict(self) -> dict:
        """The scorecard as plain JSON-ready data.

        Returns
        -------
        dict
            Utility, security, rates and sizes.
        """
        return {
            "n_original": self.n_original,
            "n_release": self.n_release,
            "scale_sa": self.scale,
            "metric": self.metric,
            "utility": {k: _json(v) for k, v in self.utility.to_dict().items()},
            "security": self.security.to_dict(),
            "rates": [{k: _json(v) for k, v in asdict(r).items()} for r in self.rates],
            "notes": list(self.notes),
        }

    def to_text(self) -> str:
        """The scorecard as a few lines of text.

        Returns
        -------
        str
            The lines.
        """
        u, s = self.utility, self.security
        lines = [f"Release of {self.n_release} rows from an original of {self.n_original} rows",
                 "",
                 "Utility (lower is better; definitions in reidrisk.linkage.scores)",
                 f"  U1 meanMAE   {u.U1_meanMAE:12.4g}   mean |difference of SA column means|",
                 f"  U2 crossMean {u.U2_crossMean:12.4g}   mean |difference of SA means by QI value|",
                 f"  U3 crossCnt  {u.U3_crossCnt:12.4g}   mean |difference of counts by QI value|",
                 f"  U4 corMAE    {u.U4_corMAE:12.4g}   mean |difference of SA correlations|",
                 f"  U5 IL        {u.U5_IL:12.4g}   mean |record error| / column range",
                 f"  U6 nrow      {u.U6_nrow:12d}   rows deleted",
                 "",
                 "Security",
                 f"  S1 smallest QI class {s.S1_min_class}",
                 f"  S2 mean QI class     {s.S2_mean_class:.4g}",
                 ""]
        if self.rates:
            lines.append("Re-identification (share of released rows linked to their true row, "
                         "95% Clopper-Pearson interval)")
            lines.append(f"  {'attack':8s} {'rate':>7s} {'interval':>17s} {'linked':>9s} "
                         f"{'gave up':>8s} {'random':>9s} {'seconds':>8s}  distance")
            for r in self.rates:
                lines.append(f"  {r.attack:8s} {r.rate:7.3f} [{r.low:6.3f}, {r.high:6.3f}] "
                             f"{r.linked:9d} {r.gave_up:8d} {r.random_guess:9.2g} {r.seconds:8.2f}"
                             f"  {r.metric or '-'}")
            how = ("chosen per attack as an attacker would (auto)" if self.metric == "auto"
                   else f"{self.metric} for every attack")
            lines.append(f"  SA distance {how}, on {'standardized' if self.scale else 'raw'} "
                         "values (assign always standardizes)")
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines)


def _json(v):
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def evaluate(original: pd.DataFrame, release: pd.DataFrame | Release, *, qi: Sequence[str],
             sa: Sequence[str], truth: np.ndarray | None = None, attacks: Sequence[str] | None = None,
             rng=None, scale: bool = False, recode: RecodeMap | None = None,
             metric: str = "auto") -> Scorecard:
    """Score ``release`` against ``original``: U1-U6, S1-S2 and, when the true mapping is known,
    the rate of every attack (docs/design/linkage.md#scores). Without a true mapping no rate can
    be computed; the scorecard says so. Released QI values are read as the generalization they
    write (``generalization``): U2 and U3 tabulate the original in the release's categories
    (``QIMatch.as_released``), and the scorecard notes the share of released rows whose QI
    values match no original row, and the values that cover nothing.

    Parameters
    ----------
    original : pandas.DataFrame
        The original table X.
    release : pandas.DataFrame or Release
        The release Y (a ``Release`` carries its true mapping).
    qi, sa : sequence of str
        The quasi-identifier and sensitive-attribute columns.
    truth : numpy.ndarray, optional
        The true mapping (row of X of each row of Y; default: the ``Release``'s own).
    attacks : sequence of str, optional
        Keys of ``ATTACKS`` to run (default: all).
    rng : numpy.random.Generator or int, optional
        Breaks the attacks' ties.
    scale : bool
        Standardize the SA columns before distances in every attack but ``assign`` (which
        always scales); default off, as in the paper.
    metric : str
        The SA distance of the distance attacks (E2, E4, EUC1, EUC2, assign): ``"auto"``
        (default: each attack picks, without the true mapping, the one under which its links
        are most often mutual, ``attacks.choose_metric``), ``"euclidean"`` (the paper's),
        ``"scaled"`` (columns divided by their sd) or ``"log"`` (relative differences, for
        multiplicative noise).
    recode : RecodeMap, optional
        The publisher's recoding of QI values (original value -> released code), applied to
        ``original``'s QI columns before anything is compared.

    Returns
    -------
    Scorecard
        Utility, security and the attacks' re-identification rates.
    """
    if isinstance(release, Release):
        truth = release.truth if truth is None else truth
        y = release.data
    else:
        y = release
    qi, sa = list(qi), list(sa)
    if recode is not None:
        original = recode.apply(original, qi)
    names = list(ATTACKS) if attacks is None else list(attacks)
    unknown = [a for a in names if a not in ATTACKS]
    if unknown:
        raise LinkageError(f"unknown attack(s) {unknown}; use some of {list(ATTACKS)}")
    if metric not in (*METRICS, "auto"):
        raise LinkageError(f"unknown SA distance {metric!r}; use one of {[*METRICS, 'auto']}")
    if len(y) > len(original):
        raise LinkageError(f"the release has {len(y)} rows, more than the original's "
                           f"{len(original)}; each released row must descend from a distinct "
                           "original row — check that the files are not swapped")
    if truth is not None:
        truth = check_truth(original, y, truth, qi=qi, sa=sa)
    match = read_release(original, y, check_columns(original, qi, "QI", "the original"))
    utility = utility_scores(match.as_released(original), y, qi=qi, sa=sa, truth=truth)
    security = security_scores(y, qi=qi)
    notes = []
    rates = []
    unmatched = match.note()
    if unmatched:
        notes.append(unmatched)
    if truth is None:
        notes.append("no true mapping given: re-identification rates and U5 need it (pass the "
                     "mapping of released rows to original rows, or state that the rows are in the "
                     "original's order)")
    else:
        gen = as_generator(rng)
        for name in names:
            opts: dict = {} if name == "assign" else {"scale": scale}
            if name in METRIC_ATTACKS:
                opts["metric"] = metric
            linking = attack(name, original, y, qi=qi, sa=sa, rng=gen, **opts)
            rates.append(reid_rate(linking, truth, n_original=len(original)))
    return Scorecard(utility, security, tuple(rates), len(original), len(y), scale, tuple(notes),
                     metric)


__all__ = ["Scorecard", "evaluate"]
