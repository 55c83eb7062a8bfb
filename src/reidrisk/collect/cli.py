"""``reidrisk collect``: plan, simulate, fit, table, synth (paper 004 end to end).

    reidrisk collect plan     --schema s.json -e 5 -n 30000 --missing-rate 0.5
    reidrisk collect simulate data.csv -o reports.csv -e 5 [--attributes-per-person auto|all|K]
    reidrisk collect fit      reports.csv -o model.json
    reidrisk collect table    model.json -o table.csv -c age -c sex -c income
    reidrisk collect synth    model.json -o synthetic.parquet -n 100000

Reports files (CSV with a ``.meta.json`` sidecar, or Parquet with embedded metadata) are described
in ``reidrisk.collect.reports_io``; model files in ``reidrisk.collect.model_io``. Tables are written
in long form (one row per cell: the attributes' labels, then ``probability``) and synthetic records
as labels, both streamed in chunks.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reidrisk._lazy import lazy_exports
from reidrisk._options import echo_json, json_option, output_option, renamed_option
from reidrisk.errors import InputError

if TYPE_CHECKING:  # the cost estimate stays importable from here, loaded on first use
    from reidrisk.collect.model_io import (
        EXACT_SECONDS_PER_CELL,  # noqa: F401
        exact_table_seconds,  # noqa: F401
    )

# the exact table's limits, shared with the service: those of reidrisk.collect.model_io, named here
# so that `--help` does not load the model's modules (tests/collect/test_cli.py checks they agree)
EXACT_TABLE_MAX_CELLS = 20_000
EXACT_HARD_LIMIT = 2**20

__getattr__, __dir__ = lazy_exports(__name__)

_SYNTH_CHUNK = 200_000

# the client mechanisms a collection may use: reidrisk.mechanisms' registry and the baselines'
# clients (reidrisk.mechanisms.baselines), named here so that `--help` loads neither
# (tests/collect/test_cli.py checks they agree)
MECHANISM_NAMES = ("subset", "grr", "glh", "olh", "oue", "rappor", "negative", "laplace_index")
_MECHANISM_HELP = ("Client mechanism: subset (paper 004's), grr, glh, olh, oue, rappor, or the clients "
                   "of paper 004's baselines, negative (MDN) and laplace_index (PDE/ETE).")


@click.group(name="collect")
def group() -> None:
    """Collect data under local differential privacy with missing values (paper 004).

    Randomize records as clients would, fit the copula model from the reports, and answer
    contingency-table queries or generate synthetic records from the model.
    """


def _parse_per_person(value: str | None, g: int, option: str) -> int | str | None:
    if value is None or value == "auto":
        return "auto"
    if value == "all":
        return None
    try:
        k = int(value)
    except ValueError:
        raise click.BadParameter(
            f"{option} must be 'auto', 'all' or an integer, got {value!r}") from None
    if not 1 <= k:
        raise click.BadParameter(f"{option} must be >= 1, got {k}")
    if k > g:
        raise click.BadParameter(
            f"{option} {k} is more attributes than the schema has ({g}); use at most {g}, or 'all' "
            "for the paper's split over every attribute")
    return k


def _positive(ctx, param, value):
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.BadParameter(f"{value!r} is not a privacy budget; pass a finite number > 0")
    return value


# ---- plan ------------------------------------------------------------------------------------
@group.command("plan")
@click.option("--schema", "schema_path", required=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Schema JSON.")
@click.option("-e", "--epsilon", type=float, required=True, callback=_positive,
              help="Budget of one person's whole report.")
@click.option("-n", "--rows", "n", type=click.IntRange(min=1), default=None,
              help="Expected number of people (rows of reports).  [required]")
@renamed_option("--n", "--rows", "n", type=click.IntRange(min=1))
@click.option("--missing-rate", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0,
              show_default=True, help="Expected rate of values left out (completely at random).")
@click.option("-m", "--mechanism", type=click.Choice(MECHANISM_NAMES, case_sensitive=False),
              default="subset", show_default=True, help=_MECHANISM_HELP)
@click.option("--among", type=click.Choice(["present", "all"]), default="present", show_default=True,
              help="Sample the k reported attributes among those a person has, or among all.")
@json_option
def plan(schema_path, epsilon, n, missing_rate, mechanism, among, as_json) -> None:
    """How many attributes each person should report (attribute sampling).

    The number is derived from the variance of the marginal and pair estimates; see
    reidrisk.collect.protocol.
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.protocol import choose_attributes_per_person
    from reidrisk.schema import Schema

    if n is None:
        raise click.UsageError("Missing option '-n' / '--rows'.")
    schema = Schema.load(schema_path)
    choice = choose_attributes_per_person(schema.sizes, epsilon, mechanism=mechanism, among=among,
                                          n=n, missing_rate=missing_rate)
    if as_json:
        echo_json({"attributes_per_person": choice.attributes_per_person,
                   "candidates": choice.candidates, "errors": choice.errors,
                   "pair_errors": choice.pair_errors, "marginal_errors": choice.marginal_errors,
                   "paper_error": choice.paper_error, "gain": choice.gain})
        return
    click.echo(choice.summary())
    click.echo("k    expected error  (pair tables + marginals, mean squared, capped)")
    for k, e, ep, em in zip(choice.candidates, choice.errors, choice.pair_errors,
                            choice.marginal_errors):
        mark = "  <- chosen" if k == choice.attributes_per_person else ""
        click.echo(f"{k:<4d} {e:.4g}  ({ep:.4g} + {em:.4g}){mark}")


# ---- simulate --------------------------------------------------------------------------------
@group.command("simulate")
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@output_option("Reports file to write: .csv (with a .meta.json sidecar) or .parquet.",
               type=click.Path(dir_okay=False, path_type=Path), metavar="REPORTS")
@click.option("--schema", "schema_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Schema JSON for DATA (inferred when omitted; see `reidrisk schema infer`).")
@click.option("-e", "--epsilon", type=float, required=True, callback=_positive,
              help="Budget of one person's whole report.")
@click.option("-m", "--mechanism", type=click.Choice(MECHANISM_NAMES, case_sensitive=False),
              default="subset", show_default=True, help=_MECHANISM_HELP)
@click.option("--attributes-per-person", "per_person_text", default=None,
              help="Attributes each person reports: 'auto' (default: chosen from the variance of "
                   "the marginal and pair estimates), 'all' (the paper's even split), or a number.")
@click.option("--k", "k_text", default=None, hidden=True,
              help="Deprecated name of --attributes-per-person.")
@click.option("--among", type=click.Choice(["present", "all"]), default="present", show_default=True,
              help="Sample the k reported attributes among those a person has, or among all.")
@click.option("--missing-rate", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0,
              show_default=True, help="Also remove this rate of values completely at random.")
@click.option("--seed", type=int, default=None, help="Seed (default: fresh OS randomness).")
@json_option
def simulate(data, output, schema_path, epsilon, mechanism, per_person_text, k_text, among,
             missing_rate, seed, as_json) -> None:
    """Randomize the records in DATA as clients would and write their reports to --output.

    DATA is CSV or Parquet with one column per attribute (empty, '?' or NA = missing). --output is a
    reports file (.csv with a .meta.json sidecar, or .parquet) holding only randomized reports.
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.protocol import Protocol, choose_attributes_per_person
    from reidrisk.collect.reports_io import write_reports
    from reidrisk.data.io import read_table
    from reidrisk.data.missing import mcar
    from reidrisk.mechanisms.base import as_generator
    from reidrisk.schema import MISSING, Schema

    option = "--attributes-per-person"
    if k_text is not None:
        if per_person_text is not None:
            raise click.UsageError("pass --attributes-per-person only (--k is its deprecated name)")
        click.echo("Warning: --k is deprecated; use --attributes-per-person.", err=True)
        per_person_text, option = k_text, "--k"
    _check_output(output, reports=True)
    frame = read_table(data)
    if schema_path is not None:
        schema = Schema.load(schema_path)
    else:
        schema = Schema.infer(frame)
        click.echo(f"Inferred a schema of {len(schema)} attributes (pass --schema to fix it).", err=True)
    k = _parse_per_person(per_person_text, len(schema), option)
    codes = schema.encode(frame)
    rng = as_generator(seed)
    if missing_rate > 0:
        codes = mcar(codes, missing_rate, rng)
    if isinstance(k, str):  # "auto"
        if len(schema) < 2:
            k = None
        else:
            choice = choose_attributes_per_person(schema.sizes, epsilon, mechanism=mechanism,
                                                  among=among, presence=codes != MISSING)
            k = choice.attributes_per_person
            click.echo(choice.summary(), err=True)
    protocol = Protocol(epsilon, k, mechanism, among)
    reports = protocol.randomize(schema, codes, rng)
    write_reports(output, reports, protocol)
    g = len(schema)
    if as_json:
        echo_json({"output": output, "reports": reports.n, "attributes": g,
                   "attributes_per_person": protocol.attributes_for(g), "mechanism": mechanism,
                   "epsilon": epsilon, "epsilon_per_attribute": protocol.epsilon_per_attribute(g)})
        return
    click.echo(
        f"Wrote {reports.n} reports of {g} attributes to {output}: each person reports "
        f"{protocol.attributes_for(g)} attribute(s) with epsilon "
        f"{protocol.epsilon_per_attribute(g):.4g} "
        f"each ({mechanism}), {epsilon:g} per person."
    )


# ---- fit -------------------------------------------------------------------------------------
def _parse_stop(value: str):
    """``--stop`` text -> the stop value of ``reidrisk.estimation.em.parse_stop`` (the one parser):
    ``noise``, ``noise:THRESHOLD``, ``discrepancy``, ``none`` or a tolerance."""
    # kept off the command line's start: loaded only by this command
    from reidrisk.estimation.em import EstimationError, parse_stop

    text = value.strip().lower()
    stop: str | float | tuple[str, float] | None
    if text == "none":
        stop = None
    elif text.startswith("noise:"):
        stop = ("noise", _number(text[len("noise:"):], value))
    elif text in ("noise", "discrepancy"):
        stop = text
    else:
        stop = _number(text, value)
    try:
        parse_stop(stop)
    except EstimationError as exc:
        raise click.BadParameter(str(exc), param_hint="--stop") from None
    return stop


def _number(text: str, value: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise click.BadParameter(
            f"must be noise, noise:THRESHOLD, discrepancy, none or a number, got {value!r}",
            param_hint="--stop") from None


@group.command("fit")
@click.argument("reports", type=click.Path(path_type=str))
@output_option("Model file (JSON) to write.", dest="model",
               type=click.Path(dir_okay=False, path_type=Path), metavar="MODEL")
@click.option("--estimator", type=click.Choice(["em", "norm_sub", "raw"]), default="em",
              show_default=True, help="Single and pair estimator (raw = DF+Copula, no mitigation).")
@click.option("--stop", "stop_text", default="noise", show_default=True,
              help="EM stopping rule: noise, noise:THRESHOLD, discrepancy, none, or a tolerance.")
@click.option("--shrink", type=click.Choice(["none", "eb", "js"]), default="none", show_default=True,
              help="Also shrink the copula's pair dependence by its LDP noise (eb: each "
                   "correlation by its standard error; js: each pair table toward the product of "
                   "its margins). The marginals are shrunk toward uniform whatever this option "
                   "says (reidrisk.collect.pipeline); none keeps the pair dependence as estimated.")
@click.option("--exact-em", type=click.Choice(["none", "marginals", "all"]), default="none",
              show_default=True,
              help="Where to use the report-level EM (exact likelihood of whole reports).")
@click.option("--fallback/--no-fallback", default=True, show_default=True,
              help="Fall back to independence / uniform when the reports show no signal.")
@click.option("--model", "model_kind", type=click.Choice(["copula", "latent"]), default="copula",
              show_default=True,
              help="copula: pair tables and a Gaussian copula; latent: a latent class model fitted "
                   "on the whole reports, the average of 5 fits (of the options above only "
                   "--fallback applies to it).")
@click.option("--chunk-rows", type=click.IntRange(min=1), default=None,
              help="Partitioned reports: rows read and counted at a time (default: by the number "
                   "of categories, about 4M cells).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Partitioned reports: count them on this Dask scheduler (e.g. "
                   "tcp://host:8786; needs reidrisk[dask]); the workers must reach REPORTS.")
@json_option
def fit_cmd(reports, model, estimator, stop_text, shrink, exact_em, fallback, model_kind,
            chunk_rows, scheduler, as_json) -> None:
    """Fit the copula model of paper 004 from REPORTS and write it to --output (JSON).

    With --model latent, a latent class model is fitted instead. REPORTS is a reports file, or partitioned reports: a directory of Parquet partitions or an
    fsspec URL of one (s3://..., gs://...), read and counted a chunk at a time with bounded
    memory (reidrisk.collect.partitioned), on this machine or on a Dask cluster (--scheduler).
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.pipeline import CollectPipeline, CollectWarning
    from reidrisk.collect.reports_io import read_reports

    model = Path(model)
    _check_output(model)
    partitioned = "://" in reports or Path(reports).is_dir()
    if not partitioned and (chunk_rows is not None or scheduler is not None):
        raise InputError("--chunk-rows and --scheduler apply to partitioned reports (a directory "
                         "or URL of Parquet partitions), not to one file")
    exact_modes: dict[str, bool | str] = {"marginals": "marginals", "all": True, "none": False}
    exact = exact_modes[exact_em]
    if partitioned and exact:
        raise InputError("--exact-em reads every report at once; partitioned reports are fitted "
                         "from their counts: drop --exact-em")
    if partitioned and model_kind == "latent":
        raise InputError("--model latent is fitted on the whole reports; partitioned reports are "
                         "fitted from their counts: use --model copula, or one reports file")
    if model_kind == "latent":
        given = [name for name, on in (("--estimator", estimator != "em"),
                                       ("--stop", stop_text.strip().lower() != "noise"),
                                       ("--shrink", shrink != "none"),
                                       ("--exact-em", exact_em != "none")) if on]
        if given:
            raise InputError(f"--model latent does not run the copula's steps, so "
                             f"{', '.join(given)} would be ignored: drop them or use --model copula")
    pipe = CollectPipeline(estimator, stop=_parse_stop(stop_text),
                           shrink=None if shrink == "none" else shrink, exact_em=exact,
                           fallback=fallback, model=model_kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollectWarning)  # reported below from the model's notes
        if partitioned:
            fitted = _fit_partitioned(reports, pipe, chunk_rows, scheduler)
        elif model_kind == "latent":
            fitted = _fit_latent(pipe, read_reports(Path(reports)))
        else:
            fitted = pipe.fit(read_reports(Path(reports)))
    fitted.save(model)
    rep = fitted.report
    if as_json:
        echo_json({"model": model, "attributes": len(fitted.schema), "reports": rep.n,
                   "seconds": rep.seconds, "notes": list(rep.notes)})
        return
    click.echo(f"Fitted {len(fitted.schema)} attributes from {rep.n} reports in {rep.seconds:.1f} s; "
               f"wrote {model}.")
    for note in rep.notes:
        click.echo(f"Note: {note}", err=True)


_FALLBACK_MODELS = {"independence": "the product of the marginals (no pair shows dependence "
                                    "beyond the noise)",
                    "uniform": "the uniform distribution (nothing is detectable beyond the noise)"}


def _fit_latent(pipe, collected):
    """The latent class model's fit, N_FITS fits of which one alone takes 43 s on 10^6 reports of
    20 attributes (docs/results/latent_speed.md), with its progress: a plain line every few
    seconds when the output is piped (reidrisk.report.progress).

    When the reports show no dependence the pipeline returns its fallback model and fits no
    latent class model (reidrisk.collect.latent_fit, "Fallback"): the display then closes with a
    line saying so instead of a count of 0 fits."""
    # loaded only when a latent model is fitted, off the command line's start
    from reidrisk.collect.latent_fit import N_FITS
    from reidrisk.report.progress import Progress  # jinja2 (reidrisk.report): only with progress

    with Progress(N_FITS, "latent class model", unit="fits") as bar:
        fitted = pipe.fit(collected, progress=lambda note, done: bar.update(int(done), note))
        fell_back = fitted.latent is None
        if fell_back:
            bar.enabled = False  # its closing line would read "0/N fits"; the line below replaces it
    if fell_back:
        model = _FALLBACK_MODELS.get(fitted.report.fallback, f"the {fitted.report.fallback} model")
        click.echo(f"latent class model: none of the {N_FITS} fits was needed; the model is the "
                   f"fallback, {model}. --no-fallback fits the latent class model anyway.",
                   err=True)
    return fitted


def _fit_partitioned(reports: str, pipe, chunk_rows: int | None, scheduler: str | None):
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.partitioned import fit_partitioned

    if scheduler is None:
        return fit_partitioned(reports, pipe, chunk_rows=chunk_rows)
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--scheduler needs Dask: pip install 'reidrisk[dask]'") from None
    try:
        client = Client(scheduler, timeout=10)
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler {scheduler!r} ({exc}); check the "
                         "address and that the scheduler is running") from None
    with client:
        return fit_partitioned(reports, pipe, chunk_rows=chunk_rows, client=client)


# ---- table ---------------------------------------------------------------------------------
_SHOW_PROGRESS_AFTER = 3.0  # seconds of work (estimated from the shape, or measured)
_now = time.monotonic  # the clock of the progress of exact tables


@group.command("table")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@output_option("Table file to write (CSV or Parquet; - for standard output).",
               type=click.Path(dir_okay=False, path_type=Path, allow_dash=True), metavar="FILE")
@click.option("-c", "--column", "columns", multiple=True, required=True, metavar="NAME",
              help="Attribute of the table (repeat for each of the c attributes).")
@click.option("--exact/--sampled", default=None,
              help="Exact cell probabilities of the model, or counts of synthetic records. "
                   f"[default: exact up to {EXACT_TABLE_MAX_CELLS:,} cells ({EXACT_HARD_LIMIT:,} "
                   "for a latent class model), sampled above]")
@click.option("-n", "--rows", "n", type=click.IntRange(min=1), default=None,
              help="Synthetic records of a sampled table; implies --sampled (default: as many as "
                   "were fitted).")
@renamed_option("--n", "--rows", "n", type=click.IntRange(min=1))
@click.option("--seed", type=int, default=None,
              help="Seed of the synthetic records of --sampled (default: fresh OS randomness; an "
                   "exact table draws nothing).")
@json_option
def table(model, output, columns, exact, n, seed, as_json) -> None:
    """Write the contingency table of the chosen attributes (long form: labels, probability).

    Exact tables of 3 or more attributes of a copula model cost about 1e-4 s per cell and
    attribute (more with 6 or more dependent attributes); above 20,000 cells the table is counted
    from synthetic records instead (the command says so), unless --exact is given. Progress, with
    the time left at the rate measured on the model, is shown while a long one runs. A latent class
    model's exact table is a sum of K outer products, computed exactly up to 2^20 cells.
    """
    # kept off the command line's start: loaded only by this command
    import numpy as np
    import pandas as pd

    from reidrisk.collect.model_io import duration_text as _duration
    from reidrisk.collect.pipeline import CollectModel
    from reidrisk.data.io import write_table

    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report.progress import Progress

    if as_json and str(output) == "-":
        raise click.UsageError("--json needs an --output file: '-' writes the table itself to "
                               "standard output")
    if str(output) != "-":
        _check_output(output, table=True)
    fitted = CollectModel.load(model)
    cols = [c.strip() for part in columns for c in part.split(",") if c.strip()]
    idx = fitted.columns(cols)
    dims = [int(fitted.schema.sizes[j]) for j in idx]
    cells = int(np.prod(dims, dtype=np.int64))
    shape = "x".join(map(str, dims))
    # the per-cell cost is the copula's; a latent class model's exact table is a sum of K outer
    # products, cheap up to EXACT_HARD_LIMIT cells (beyond it, the memory of K such arrays)
    latent = fitted.latent is not None
    seconds = fitted.exact_seconds(idx)
    m = fitted.report.n if n is None else n
    if n is not None:  # a number of synthetic records asks for a sampled table
        if exact:
            raise click.UsageError("-n/--rows counts synthetic records for --sampled; an --exact "
                                   "table draws none: pass one of the two")
        exact = False
    if exact is None:
        exact = (len(dims) <= 2 or cells <= EXACT_TABLE_MAX_CELLS
                 or (latent and cells <= EXACT_HARD_LIMIT))
        if not exact:
            why = (f"more than the {EXACT_HARD_LIMIT:,} computed exactly" if latent else
                   f"exact probabilities would take about {_duration(seconds)} (more than "
                   f"{EXACT_TABLE_MAX_CELLS:,} cells)")
            click.echo(
                f"Note: the {shape} table has {cells:,} cells; {why}, so it is counted "
                f"from {m:,} synthetic records instead (--sampled; cells below 1/{m:,} read as 0). "
                + ("Pass --exact to compute it anyway, or -n for more records."
                   if cells <= EXACT_HARD_LIMIT else "Pass -n for more records."), err=True)
    if exact and len(dims) >= 3 and cells > EXACT_HARD_LIMIT:
        cost = "" if latent else f" (it would take about {_duration(seconds)})"
        raise InputError(
            f"the {shape} table has {cells:,} cells, more than the {EXACT_HARD_LIMIT:,} that can be "
            f"computed exactly{cost}; use --sampled, or fewer or smaller attributes")
    bar: Progress | None = None
    announced = bool(exact) and seconds > _SHOW_PROGRESS_AFTER  # 0 s for a latent model
    if announced:
        click.echo(f"Computing the {cells:,} cells of the {shape} table exactly: about "
                   f"{_duration(seconds)}.", err=True)

    started = _now()

    def show(done: int, total: int, left: float) -> None:
        # the shared computation's measured rate: progress once the table proves long, even when
        # the shape's estimate said it would be short (after a second, when the rate no longer
        # carries the first chunks' fixed cost); not once the last cell is done (a table computed
        # in one chunk): there is nothing left to announce
        nonlocal bar
        if bar is None:
            elapsed = _now() - started
            if not announced and (done >= total or elapsed < 1.0
                                  or elapsed + left <= _SHOW_PROGRESS_AFTER):
                return
            if not announced:
                click.echo(f"Computing the {total:,} cells of the {shape} table exactly: about "
                           f"{_duration(left)} left at the rate measured on the first "
                           f"{done:,} cells.", err=True)
            bar = Progress(total, "exact table", unit="cells", clock=_now)
            bar.start = started  # its elapsed time and average rate count from the first cell
        bar.update(done - bar.done, note=f"about {_duration(left)} left at the measured rate")

    try:
        t = fitted.table(idx, exact=exact, n=n, rng=seed,
                         progress=show if exact and len(dims) >= 3 else None)
    finally:
        if bar is not None:
            bar.close()
    grids = np.unravel_index(np.arange(t.size), t.shape)
    frame = pd.DataFrame({fitted.schema[j].name: np.asarray(fitted.schema[j].categories)[g]
                          for j, g in zip(idx, grids)})
    frame["probability"] = t.ravel()
    if str(output) == "-":
        click.echo(frame.to_csv(index=False), nl=False)
        return

    write_table(frame, output)
    if as_json:
        echo_json({"output": output, "columns": list(cols), "cells": len(frame),
                   "exact": bool(exact), "synthetic_records": None if exact else m})
        return
    how = "exact" if exact else f"counted from {m:,} synthetic records"
    click.echo(f"Wrote the {shape} table of {cols} ({how}) to {output}.", err=True)


def _check_output(path: Path, table: bool = False, reports: bool = False) -> None:
    """Refuse an output path that cannot be written before any work is done."""
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.reports_io import _is_parquet
    from reidrisk.data.io import check_output_path, table_format

    if table:
        table_format(path)
    if reports:
        _is_parquet(Path(path))
    check_output_path(path)


# ---- synth -----------------------------------------------------------------------------------
@group.command("synth")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@output_option("File of synthetic records to write (CSV or Parquet).",
               type=click.Path(dir_okay=False, path_type=Path), metavar="FILE")
@click.option("-n", "--rows", "n", type=click.IntRange(min=1), default=None,
              help="Number of records (default: as many as were fitted).")
@renamed_option("--n", "--rows", "n", type=click.IntRange(min=1))
@click.option("--seed", type=int, default=None, help="Seed (default: fresh OS randomness).")
@json_option
def synth(model, output, n, seed, as_json) -> None:
    """Generate synthetic complete records from MODEL and write them (labels) to --output."""
    # kept off the command line's start: loaded only by this command
    from reidrisk.collect.pipeline import CollectModel
    from reidrisk.mechanisms.base import as_generator

    # jinja2 (reidrisk.report): loaded only when a report or progress bar is used
    from reidrisk.report.progress import Progress

    _check_output(output, table=True)
    fitted = CollectModel.load(model)
    total = fitted.report.n if n is None else n
    rng = as_generator(seed)
    with Progress(math.ceil(total / _SYNTH_CHUNK), "synth", unit="chunks",
                  enabled=total > _SYNTH_CHUNK) as bar:
        def chunks():
            for s in range(0, total, _SYNTH_CHUNK):
                yield fitted.synthesize_frame(min(_SYNTH_CHUNK, total - s), rng)
                bar.update(note=f"{min(s + _SYNTH_CHUNK, total):,} records")

        write_chunks(chunks(), output)
    if as_json:
        echo_json({"output": output, "records": total})
        return
    click.echo(f"Wrote {total} synthetic records to {output}.", err=True)


def write_chunks(chunks, path: Path) -> Path:
    """Stream DataFrame chunks to a CSV or Parquet file atomically (temporary file, then replace).

    A compressed CSV (``.csv.gz`` and the like) is written in one piece by
    ``reidrisk.data.io.write_table``.

    Parameters
    ----------
    chunks : iterable of pandas.DataFrame
        The rows, in order, all with the same columns (the first chunk's header is written).
    path : Path
        The target; its suffix chooses the format (``.tsv``: tab-separated).

    Returns
    -------
    Path
        ``path``.
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.data.io import atomic_write, table_format, write_table

    path = Path(path)
    fmt = table_format(path)
    name = path.name.lower()
    if fmt == "csv" and not name.endswith((".csv", ".tsv", ".txt")):
        # compressed CSV: one write through the shared writer
        import pandas as pd

        return write_table(pd.concat(list(chunks), ignore_index=True), path)

    def write(tmp: Path) -> None:
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            writer = None
            try:
                for frame in chunks:
                    tbl = pa.Table.from_pandas(frame.astype("string"), preserve_index=False)
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, tbl.schema)
                    writer.write_table(tbl)
            finally:
                if writer is not None:
                    writer.close()
            return
        sep = "\t" if name.endswith(".tsv") else ","
        with open(tmp, "w", newline="") as fh:
            for i, frame in enumerate(chunks):
                frame.to_csv(fh, index=False, header=(i == 0), sep=sep)

    atomic_write(path, write)
    return path
