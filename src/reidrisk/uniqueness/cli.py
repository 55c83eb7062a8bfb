"""``reidrisk uniqueness``: how many people in a population share each record's values (paper 000).

``reidrisk uniqueness score --population N --db FILE[:RATE[:grr:EPSILON]] ... --records FILE``
fits ``UniquenessModel`` to the databases (raw records, or k-RR reports stored as category labels)
and writes one row per query record: E[X], P(X = 1), P(X > T) and the flag "at most T people share
these values" for every threshold T.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reidrisk._options import CommaList, echo_json, flat, json_option, renamed_option
from reidrisk.errors import InputError

if TYPE_CHECKING:
    import numpy as np

# the decision rules of reidrisk.uniqueness.decisions.RULES, named here so that `--help` does not
# load SciPy (tests/uniqueness/test_cli.py checks that the two agree)
RULES: tuple[str, ...] = ("balanced", "probability", "expected")


@dataclass(frozen=True)
class DatabaseSpec:
    """A parsed ``--db`` value.

    Parameters
    ----------
    path : Path or str
        The file of records, or a directory of partitions; an fsspec URL of partitions
        (``s3://bucket/reports/``) stays a str, since a Path would collapse its ``//``.
    rate : float or None
        The share of the population the file samples, in (0, 1]; None: size / N.
    mechanism : str or None
        ``"grr"`` when the file holds k-RR reports; None for raw labels.
    epsilon : float or None
        The whole-record budget of those reports (None for raw labels).
    """

    path: Path | str
    rate: float | None
    mechanism: str | None
    epsilon: float | None


def parse_db_spec(text: str) -> DatabaseSpec:
    """Parse ``FILE[:RATE[:MECHANISM:EPSILON]]`` (read from the right, so a path may contain ':').

    RATE is the share of the population the file samples, in (0, 1]; MECHANISM:EPSILON declares
    that the file holds k-RR reports (``grr``) randomized with a whole-record budget EPSILON.

    Parameters
    ----------
    text : str
        The ``--db`` value.

    Returns
    -------
    DatabaseSpec
        The path, rate, mechanism and budget.

    Raises
    ------
    InputError
        For no file name, a rate outside (0, 1], a mechanism other than ``grr`` or a budget
        that is not a number > 0.
    """
    parts = text.split(":")
    mech = eps = rate = None

    def num(s: str) -> float | None:
        try:
            return float(s)
        except ValueError:
            return None

    if len(parts) >= 4 and num(parts[-1]) is not None and num(parts[-2]) is None and num(parts[-3]) is not None:
        mech, eps, rate = parts[-2].lower(), num(parts[-1]), num(parts[-3])
        parts = parts[:-3]
    elif len(parts) >= 3 and num(parts[-1]) is not None and num(parts[-2]) is None and parts[-2].lower() == "grr":
        mech, eps = parts[-2].lower(), num(parts[-1])
        parts = parts[:-2]
    elif len(parts) >= 2 and num(parts[-1]) is not None:
        rate = num(parts[-1])
        parts = parts[:-1]
    path = ":".join(parts)
    if not path:
        raise InputError(f"--db {text!r}: no file name; use FILE[:RATE[:grr:EPSILON]]")
    if rate is not None and not (math.isfinite(rate) and 0.0 < rate <= 1.0):
        raise InputError(
            f"--db {text!r}: sampling rate {rate:g} is outside (0, 1]; give the share of the "
            "population the file samples (e.g. 0.1), or leave it out to use size / N"
        )
    if mech is not None:
        if mech != "grr":
            raise InputError(
                f"--db {text!r}: mechanism {mech!r} is not supported for files of labels; only k-RR "
                "reports ('grr') are one category per attribute"
            )
        if eps is None or not math.isfinite(eps) or eps <= 0:
            raise InputError(f"--db {text!r}: the budget must be a number > 0 (whole record)")
    return DatabaseSpec(path if _is_url(path) else Path(path), rate, mech, eps)


def _is_url(path: str) -> bool:
    """Whether a ``--db`` path is an fsspec URL of partitions (``read_reports``' own test)."""
    return "://" in path


def _name(path: Path | str) -> str:
    """The last component of a ``--db`` path or URL (the database's name)."""
    return path.rstrip("/").rsplit("/", 1)[-1] if isinstance(path, str) else path.name


@click.group(name="uniqueness")
def group() -> None:
    """Population uniqueness of records from sampled databases, raw or randomized with LDP
    (paper 000)."""


def _thresholds(ctx, param, value):
    for t in value:
        if not math.isfinite(t) or t < 1:
            raise click.BadParameter(
                f"{t!r} is not a threshold; use numbers >= 1 (X counts the person who holds the record, "
                "so X >= 1 always: with T < 1 every P(X > T) would be 1 and no record could be flagged)",
                ctx=ctx, param=param)
    return value


@group.command("score")
@click.option("--population", "-N", "population", type=click.IntRange(min=1), required=True,
              help="Size N of the population the databases were sampled from.")
@click.option("--db", "dbs", multiple=True, required=True, metavar="FILE[:RATE[:grr:EPS]]",
              help="A sampled database (CSV or Parquet): raw records, or a reports file written by "
                   "`reidrisk collect simulate` (it carries its mechanism and budget). RATE: share of "
                   "the population it holds (default: its size / N). ':grr:EPS' marks a file of k-RR "
                   "reports stored as labels with whole-record budget EPS. Repeat for several "
                   "databases.")
@click.option("--records", "records", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Query records (CSV or Parquet), one row per person to score.")
@click.option("--schema", "schema_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Schema JSON (see `reidrisk schema infer`); taken from a reports file's metadata, or "
                   "inferred from all files, when omitted.")
@click.option("-T", "--threshold", "thresholds", type=CommaList(click.FLOAT), multiple=True,
              callback=flat(_thresholds), metavar="T",
              help="Threshold T >= 1 of P(X > T) and of the flag; repeat, or give a comma list, for "
                   "several. [default: 1]")
@click.option("--preset", type=click.Choice(["reidrisk", "paper"]), default=None,
              help="reidrisk (default): calibrated prior, randomization-aware counts; paper: paper "
                   "000 as printed.")
@click.option("--method", "old_method", type=click.Choice(["reidrisk", "paper"]), default=None,
              hidden=True, help="Deprecated name of --preset.")
@click.option("--rule", type=click.Choice(list(RULES)), default=None,
              help="Decision rule of the flag [default: balanced for reidrisk, expected for paper].")
@click.option("--id", "id_column", default=None, metavar="COLUMN",
              help="Column of --records copied to the output to identify each row.")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output CSV or Parquet (default: CSV on standard output).")
@renamed_option("--out", "--output", "out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the model's random draws.")
@json_option
def score(population, dbs, records, schema_path, thresholds, preset, old_method, rule, id_column,
          out, seed, as_json) -> None:
    """Score every query record: E[X], P(X = 1), P(X > T) and a flag, where X is the number of
    people in the population who share the record's values (the person included, so X >= 1).

    \b
    Output columns, one row per query record:
      row / the --id column  which record
      expected_count         E[X]
      p_unique               P(X = 1): nobody else shares the values (re-identifiable)
      p_gt_T, flag_le_T      P(X > T), and 1 when at most T people are predicted to share
                             them (with T = 1: predicted unique)
      q                      the model's probability that a random person has these values
                             (cell probability of the world model: the Gaussian copula, or
                             the latent class model for preset reidrisk when no --db is raw;
                             N q is the prior's scale)
      count_dbI              matches in the I-th --db: records (raw) or reports (randomized)
                             equal to the query record on every attribute
    """
    # kept off the command line's start: loaded only by this command
    import numpy as np

    from reidrisk.collect.reports_io import has_metadata, read_reports
    from reidrisk.data.io import check_output_path, read_table, table_format, write_table
    from reidrisk.schema import Schema
    from reidrisk.uniqueness.model import Database, UniquenessModel

    t0 = time.perf_counter()
    if old_method is not None:
        if preset is not None:
            raise click.UsageError("pass --preset only (--method is its deprecated former name)")
        click.echo("Warning: --method is deprecated; use --preset.", err=True)
        preset = old_method
    preset = preset or "reidrisk"
    if as_json and out is None:
        raise click.UsageError("--json needs -o/--output: without it the scores themselves go to "
                               "standard output")
    specs = [parse_db_spec(s) for s in dbs]
    thresholds = thresholds or (1.0,)
    if out is not None:  # before any work: a bad output path should not cost the computation
        table_format(out)
        check_output_path(out)
    # a URL is partitions (read_reports reads it as such; has_metadata looks at local paths only)
    described = [isinstance(sp.path, str) or has_metadata(sp.path) for sp in specs]
    frames = {i: read_table(sp.path) for i, sp in enumerate(specs) if not described[i]}
    for i, fr in frames.items():
        if len(fr) == 0:
            raise InputError(f"{str(specs[i].path)!r} has no rows; a database needs at least one record")
    query = read_table(records)
    if len(query) == 0:
        raise InputError(f"{str(records)!r} has no rows; nothing to score")
    ids = None
    if id_column is not None:
        if id_column not in query.columns:
            raise InputError(f"--id {id_column!r}: no such column in {str(records)!r}; columns are "
                             f"{', '.join(map(str, query.columns))}")
        ids = query[id_column].to_numpy()
        query = query.drop(columns=[id_column])
    collected = {}
    if schema_path is not None:
        schema = Schema.load(schema_path)
    elif any(described):
        first = described.index(True)
        collected[first] = read_reports(specs[first].path, None, specs[first].mechanism,
                                        specs[first].epsilon)
        schema = collected[first].schema
    else:
        schema = _load_schema(None, list(frames.values()), query)
    for i, sp in enumerate(specs):
        if described[i] or sp.mechanism is not None:
            collected[i] = read_reports(sp.path, schema, sp.mechanism, sp.epsilon)
    databases = []
    for i, sp in enumerate(specs):
        size = collected[i].n if i in collected else len(frames[i])
        _check_rate(sp, size, population)
        if i in collected:
            databases.append(Database(collected[i].reports, sp.rate, _name(sp.path)))
        else:
            databases.append(Database(_encode(schema, frames[i], sp.path), sp.rate, _name(sp.path)))
    rec = _encode(schema, query, records)
    model = UniquenessModel(preset, rule=rule, rng=seed).fit(databases, population, schema=schema)
    frame, at_risk, result = _score_in_chunks(model, rec, list(thresholds))
    if ids is not None:
        frame.insert(0, id_column, ids)
    else:
        frame.insert(0, "row", np.arange(len(frame)))
    if out is None:
        frame.to_csv(sys.stdout, index=False)
    else:
        write_table(frame, out)
    if as_json:
        echo_json({"output": out, "records": len(frame), "databases": len(databases),
                   "population": population, "preset": preset, "rule": result.rule,
                   "flagged": {f"{t:g}": int(at_risk[:, j].sum())
                               for j, t in enumerate(result.thresholds)},
                   "seconds": time.perf_counter() - t0, "note": _ldp_note(model, databases)})
        return
    flagged = ", ".join(f"{int(at_risk[:, j].sum())} at most {t:g}"
                        for j, t in enumerate(result.thresholds))
    click.echo(
        f"Scored {len(frame)} records against {len(databases)} database(s), N = {population:,}, "
        f"preset {preset} (rule {result.rule}): flagged {flagged}. "
        f"({time.perf_counter() - t0:.1f} s)" + (f" Wrote {out}." if out is not None else ""),
        err=True,
    )
    note = _ldp_note(model, databases)
    if note is not None:
        click.echo(note, err=True)


SCORE_CHUNK = 2_000
"""Records scored per call when there are more (each call has a fixed cost of a few seconds, and
each record then about 10 ms with a randomized database): progress is shown between chunks. A
record's score does not depend on the records scored with it, so chunks change nothing."""


def _score_in_chunks(model, rec: np.ndarray, thresholds: list[float]):
    """(frame, at_risk, last result) of ``model.score`` over ``rec``, in chunks of ``SCORE_CHUNK``
    with progress lines (``reidrisk.report.progress``) when there is more than one."""
    # kept off the command line's start: loaded only by this command
    import numpy as np
    import pandas as pd

    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report.progress import Progress

    n = rec.shape[0]
    starts = range(0, n, SCORE_CHUNK)
    frames, flags = [], []
    with Progress(len(starts), "score", unit="chunks", enabled=len(starts) > 1) as bar:
        for s in starts:
            result = model.score(rec[s:s + SCORE_CHUNK], T=thresholds, keep_pmf=False)
            frames.append(result.to_frame())
            flags.append(result.at_risk)
            bar.update(note=f"{min(s + SCORE_CHUNK, n):,} of {n:,} records")
    return pd.concat(frames, ignore_index=True), np.vstack(flags), result


RATE_TOLERANCE_SD = 4.0
"""A ``--db`` RATE is refused when the file's size lies more than this many binomial standard
deviations (plus one record) from RATE x N: a sample of N people at rate s has size s N +- sqrt(N s
(1 - s)), so a size that far off means RATE or N is wrong (chance: below 1e-4)."""


def _check_rate(spec: DatabaseSpec, size: int, population: int) -> None:
    """Refuse a declared RATE that the database's size contradicts, with the numbers."""
    if spec.rate is None:
        return
    expected = spec.rate * population
    slack = RATE_TOLERANCE_SD * math.sqrt(population * spec.rate * (1.0 - spec.rate)) + 1.0
    if abs(size - expected) > slack:
        raise InputError(
            f"--db {str(spec.path)!r}: RATE {spec.rate:g} of N = {population:,} means about "
            f"{expected:,.0f} records (between {max(0.0, expected - slack):,.0f} and "
            f"{min(population, expected + slack):,.0f}), but the file holds {size:,} (size / N = "
            f"{size / population:.4g}). Fix RATE or -N, or leave RATE out to use size / N")


def _ldp_note(model, databases) -> str | None:
    """The caveat on P(unique) (``reidrisk.uniqueness.caveat``) when the prior was simulated (no
    raw database) and the measured reliability gap at the databases' smallest epsilon per attribute
    is above the limit; None otherwise."""
    # kept off the command line's start: loaded only by this command
    from reidrisk.uniqueness.caveat import ldp_caveat

    if model.prior_ is None or model.prior_.source != "simulation":
        return None
    eps = [float(m.epsilon) for d in databases if d.randomized for m in d.reports.mechanisms]
    if not eps:
        return None
    return ldp_caveat(min(eps), model.world_)


def _load_schema(path, frames, query):
    # kept off the command line's start: loaded only by this command
    import pandas as pd

    from reidrisk.schema import Schema

    if path is not None:
        return Schema.load(path)
    cols = list(query.columns)
    for fr in frames:
        if list(fr.columns) != cols:
            missing = sorted(set(cols) ^ set(fr.columns))
            raise InputError(
                "without --schema every file must have the same columns as --records; they differ "
                f"in {', '.join(map(str, missing))}. Pass --schema or select the same columns"
            )
    return Schema.infer(pd.concat([*frames, query], ignore_index=True))


def _encode(schema, frame, path) -> np.ndarray:
    # kept off the command line's start: loaded only by this command
    from reidrisk.schema import SchemaError

    missing = [n for n in schema.names if n not in frame.columns]
    if missing:
        raise InputError(f"{str(path)!r} lacks the schema column(s) {', '.join(missing)}")
    try:
        return schema.encode(frame[schema.names])
    except SchemaError as exc:
        raise SchemaError(f"{str(path)!r}: {exc}") from None


__all__ = ["DatabaseSpec", "group", "parse_db_spec", "score"]
