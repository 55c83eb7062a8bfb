"""``reidrisk pie pse`` and ``reidrisk pie traces``: the empirical side of paper 002.

* ``pie pse --genuine G.csv --impostor I.csv``: the PSE, D(f_G || f_I) in bits, from genuine and
  impostor score samples (k-NN estimator, docs/design/pie.md#k-nn-divergence-estimator) with a
  bootstrap interval, and the equal error rate of the DET curve.
* ``pie traces --background B.csv --release R.csv``: fit the Markov-chain model
  (docs/design/pie.md#markov-chain-matching) on each user's background trace, score every released
  trace against every user, and report the identification error rate of the best-score rule and the
  PSE.

Both commands are registered on the ``pie`` group (``reidrisk.pie.cli``). Bad input is a one-line
``Error: ...`` naming the file and the value, exit code 2.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import click

from reidrisk._options import renamed_option
from reidrisk.errors import InputError

_FILE = click.Path(dir_okay=False, path_type=Path)


def _fmt_interval(est) -> str:
    if est.bootstrap == 0 or not math.isfinite(est.low):
        return ""
    return (f" ({est.level:.0%} interval {est.low:.3f} to {est.high:.3f}, "
            f"{est.bootstrap} half-samples)")


@click.command("pse")
@click.option("--genuine", type=_FILE, required=True,
              help="CSV/Parquet of genuine scores (column 'score', or a single column).")
@click.option("--impostor", type=_FILE, required=True,
              help="CSV/Parquet of impostor scores (column 'score', or a single column).")
@click.option("--column", default=None, metavar="NAME",
              help="Score column in both files (default: 'score' or the only column).")
@click.option("--neighbours", "k", type=click.IntRange(min=1), default=None, metavar="K",
              help="Fixed number of neighbours k of the plain k-NN estimator [default: the "
                   "adaptive estimator].")
@renamed_option("--k", "--neighbours", "k", type=click.IntRange(min=1))
@click.option("--bootstrap", type=click.IntRange(min=0), default=200, show_default=True,
              help="Half-sample re-estimates for the interval (0 = none).")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Coverage of the interval.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the jitter and the bootstrap.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def pse_command(genuine, impostor, column, k, bootstrap, level, seed, as_json) -> None:
    """PSE = D(f_G || f_I) in bits from genuine and impostor scores (paper 002, eq. 7).

    Higher scores mean "more similar". The estimate is Wang, Kulkarni & Verdu's k-NN divergence
    estimator after a 1e-4 jitter that separates tied scores.
    """
    # pandas and scipy.spatial (reidrisk.pie.pse): kept off the command line's start
    from reidrisk.pie.pse import det_curve, pse, read_scores

    g = read_scores(genuine, column)
    i = read_scores(impostor, column)
    est = pse(g, i, k=k, bootstrap=bootstrap, level=level, rng=seed)
    det = det_curve(g, i)
    if as_json:
        click.echo(json.dumps({
            "pse_bits": est.bits, "low": est.low if bootstrap else None,
            "high": est.high if bootstrap else None, "level": level, "bootstrap": bootstrap,
            "k": est.k, "n_genuine": est.n_genuine, "n_impostor": est.n_impostor,
            "eer": det.eer, "genuine": str(genuine), "impostor": str(impostor),
        }))
        return
    method = f"k-NN, k = {est.k}" if est.k else "adaptive k-NN"
    click.echo(f"PSE = D(f_G || f_I) = {est.bits:.3f} bits{_fmt_interval(est)}")
    click.echo(f"  {est.n_genuine} genuine and {est.n_impostor} impostor scores; {method}")
    click.echo(f"  equal error rate (DET curve): {det.eer:.4f}")


def _regions(text: str | None, background: Path, release: Path):
    """--regions: an integer K (ids 1..K), a region table with a reg_id column, or (default) every
    region id found in the two trace files."""
    # numpy and pandas (reidrisk.data.traces): kept off the command line's start
    import numpy as np

    from reidrisk.data.traces import read_region_ids

    if text is None:
        return np.union1d(read_region_ids(background), read_region_ids(release))
    if text.strip().isdigit():
        k = int(text)
        if k < 1:
            raise InputError(f"--regions {text!r}: need at least 1 region")
        return k
    path = Path(text)
    if not path.is_file():
        raise InputError(f"--regions {text!r} is neither a number of regions nor an existing "
                         "region table (a CSV with a reg_id column)")
    return read_region_ids(path)


@click.command("traces")
@click.option("--background", type=_FILE, required=True,
              help="Adversary's background traces: CSV user_id,time_id,reg_id.")
@click.option("--release", type=_FILE, required=True,
              help="Released traces to re-identify: CSV user_id,time_id,reg_id (user_id = truth).")
@click.option("--regions", default=None, metavar="K|FILE",
              help="Region domain: ids 1..K, or a CSV with a reg_id column "
                   "[default: the ids found in the two files].")
@click.option("--model", "kind", type=click.Choice(["trans", "visit"]), default="trans",
              show_default=True, help="Markov transitions or visit frequencies only.")
@click.option("--delta", type=float, default=1e-8, show_default=True,
              help="Smoothing constant of the score.")
@click.option("--events", type=click.IntRange(min=1), default=None,
              help="Use the first N events of each released trace [default: all].")
@click.option("--train-events", type=click.IntRange(min=1), default=None,
              help="Use the first N events of each background trace [default: all].")
@click.option("--bootstrap", type=click.IntRange(min=0), default=200, show_default=True,
              help="Half-sample re-estimates for the PSE interval (0 = none).")
@click.option("--impostors", type=click.Choice(["one", "all"]), default="one", show_default=True,
              help="Impostor scores for the PSE: one random other user per released trace (the "
                   "paper's sampling) or every other user.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the tie-breaking, the impostor pairing, the jitter and the bootstrap.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def traces_command(background, release, regions, kind, delta, events, train_events, bootstrap,
                   impostors, seed, as_json) -> None:
    """Re-identify released traces with the Markov-chain matcher (paper 002, Section 5.1).

    Every released trace is scored against every background user; the best score wins (ties
    broken at random). Prints the identification error rate and the PSE in bits.
    """
    # numpy and pandas (reidrisk.data.traces): kept off the command line's start
    import numpy as np

    from reidrisk.data.traces import TraceError, read_traces

    # pandas and scipy.spatial (reidrisk.pie.traces): kept off the command line's start
    from reidrisk.pie.traces import match

    domain = _regions(regions, background, release)
    bg = read_traces(background, domain)
    rel = read_traces(release, domain)
    missing = ~np.isin(rel.users, bg.users)
    if missing.any():
        raise TraceError(
            f"{str(release)!r}: unknown user user_id={rel.users[missing][0]} "
            f"({int(missing.sum())} such users); it has no trace in {str(background)!r}, so "
            "its match cannot be scored. Remove it or add its background trace")
    t0 = time.perf_counter()
    res = match(bg.head(train_events), rel.head(events), kind=kind, delta=delta,
                bootstrap=bootstrap, rng=seed, impostors=impostors)
    seconds = time.perf_counter() - t0
    ident, est = res.identification, res.pse
    det = res.det()
    if as_json:
        click.echo(json.dumps({
            "identification_error_rate": ident.error_rate,
            "expected_identification_error_rate": ident.expected_error_rate,
            "pse_bits": est.bits, "low": est.low if bootstrap else None,
            "high": est.high if bootstrap else None, "bootstrap": bootstrap, "eer": det.eer,
            "n_release": ident.n, "n_background": ident.n_candidates, "model": kind,
            "impostors": impostors, "n_impostor_scores": est.n_impostor,
            "delta": delta, "events": events, "train_events": train_events, "seconds": seconds,
        }))
        return
    click.echo(f"{ident.n} released traces scored against {ident.n_candidates} background users "
               f"({kind} model, delta = {delta:g}) in {seconds:.2f} s")
    click.echo(f"  identification error rate: {ident.error_rate:.4f} "
               f"(averaged over tie-breaking: {ident.expected_error_rate:.4f})")
    click.echo(f"  PSE = D(f_G || f_I) = {est.bits:.3f} bits{_fmt_interval(est)}")
    click.echo(f"  equal error rate (DET curve): {det.eer:.4f}")


COMMANDS = (pse_command, traces_command)

__all__ = ["COMMANDS", "pse_command", "traces_command"]
