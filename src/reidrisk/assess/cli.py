"""``reidrisk assess TABLE``: the disclosure-risk check of a data holder's own table."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

EXAMPLE = ("reidrisk assess adult.csv --qi age,sex,race,marital-status --sa income --bin age=10 "
           "--population 48842 -o risk/")


def _echo_err(text: str) -> None:
    click.echo(text, err=True)


@click.command(name="assess", epilog=f"Example: {EXAMPLE}")
@click.argument("table", metavar="TABLE")
@click.option("--qi", "qi", multiple=True, metavar="COLS",
              help="Quasi-identifiers: what an attacker may know (repeatable, each a comma list). "
                   "Omitted: a suggestion is shown for you to confirm.")
@click.option("--sa", "sa", multiple=True, metavar="COLS",
              help="Sensitive attributes (repeatable, each a comma list).")
@click.option("--weight", metavar="COL", help="Survey-weight column: each record stands for that "
              "many people (sdcMicro's meaning); their sum is the population size.")
@click.option("-N", "--population", type=click.IntRange(min=1), metavar="N",
              help="Size of the population the table was drawn from.")
@click.option("--fraction", type=float, metavar="F",
              help="Sampling fraction n / N, instead of --population.")
@click.option("--threshold", type=float, default=0.2, show_default=True,
              help="Per-record risk above which a record is at risk (0.2 = fewer than 5 people).")
@click.option("--bin", "bins", multiple=True, metavar="COL=WIDTH",
              help="Equal-width bins for a numeric column, e.g. --bin age=10 (repeatable).")
@click.option("--na", "na_values", multiple=True, metavar="TEXT",
              help="Further text meaning 'missing' (empty, ?, NA, nan, NaN always do).")
@click.option("--missing", type=click.Choice(["wildcard", "value"]), default="wildcard",
              show_default=True, help="A missing QI value matches any value (wildcard), or is a "
              "value of its own (value, ARX's reading).")
@click.option("--no-model", is_flag=True, help="Skip paper 000's model (P(unique), E[count]).")
@click.option("--max-msu", type=click.IntRange(0, 10), default=4, show_default=True,
              help="Largest minimal sample unique SUDA searches (0: no SUDA).")
@click.option("--no-release", is_flag=True, help="Skip the candidate k-anonymous release and its "
              "linkage attacks.")
@click.option("--ldp-error", type=float, default=0.9, show_default=True, metavar="E",
              help="Identification error the LDP budget must guarantee (pie calibrate).")
@click.option("--ldp-uniqueness", is_flag=True, help="Also predict the uniqueness left at that "
              "budget from simulated reports (paper 000's model under LDP; minutes on 10^4 rows).")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Write DIR/records.csv, DIR/summary.json and DIR/report.html.")
@click.option("--format", "record_format", type=click.Choice(["csv", "parquet"]), default="csv",
              show_default=True, help="Format of DIR/records.")
@click.option("--chunk-rows", type=click.IntRange(min=1), metavar="N",
              help="Read the table N rows at a time (bounded memory). Default: for a directory of "
                   "Parquet partitions or a URL, 1,000,000; a single file is read whole.")
@click.option("--yes", is_flag=True, help="Accept the suggested QIs without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the model's quasi-Monte Carlo points (same seed, same figures).")
def group(table, qi, sa, weight, population, fraction, threshold, bins, na_values, missing, no_model,
          max_msu, no_release, ldp_error, ldp_uniqueness, output, record_format, chunk_rows, yes,
          as_json, seed) -> None:
    """The disclosure-risk check of a data holder's own table: who is at risk of
    re-identification, how much, why, and what lowers it.

    TABLE: a CSV or Parquet file, a directory of Parquet partitions, or an fsspec URL of either.

    Per record: fk, Fk, individual risk, P(unique in the population) and E[count] (paper 000),
    SUDA, the drivers of its risk. Per table: k-anonymity, l-diversity, t-closeness, the
    prosecutor / journalist / marketer risks, expected re-identifications, population uniques by
    five estimators, and the measured effect of dropping or coarsening each QI.
    """
    # imported here, not at the top: `reidrisk --help` must not load pandas and SciPy (start-up)
    import pandas as pd

    from reidrisk.assess.extras import default_extras, ldp_extra, release_extra
    from reidrisk.assess.report import summary_json, write_outputs
    from reidrisk.assess.run import assess, resolve_population
    from reidrisk.assess.stream import (
        RECORD_LIMIT,
        expand,
        first_rows,
        read_aggregate,
    )
    from reidrisk.assess.stream import write_records as stream_records
    from reidrisk.assess.table import (
        check_columns,
        parse_bins,
        prepare_table,
        split_names,
    )
    from reidrisk.data.chunks import DEFAULT_CHUNK_ROWS, is_url, table_chunks, table_columns
    from reidrisk.data.io import check_output_path, read_table, table_header

    if output is not None:
        check_output_path(output, kind="folder")
    source = str(table)
    streamed = chunk_rows is not None or is_url(source) or Path(source).is_dir()
    if streamed:
        first = next(table_chunks(source, chunk_rows=min(chunk_rows or 10_000, 10_000)), None)
        frame = first if first is not None else pd.DataFrame(columns=table_columns(source))
    else:
        check_columns(table_header(source), source)
        frame = read_table(source)
    qis = split_names(qi) or _confirmed_suggestion(frame, source, na_values, yes)
    say = lambda stage: _echo_err(f"assess: {stage} ...")  # noqa: E731
    write_records = None
    if streamed:
        say("reading in chunks")
        agg, labels = read_aggregate(source, qis, split_names(sa), weight, parse_bins(bins),
                                     na_values, chunk_rows or DEFAULT_CHUNK_ROWS)
        small = agg.n <= RECORD_LIMIT
        prepared = expand(agg) if small else agg
        if not small:
            _echo_err(f"assess: {agg.n:,} records (> {RECORD_LIMIT:,}): paper 000's model, SUDA and "
                      "the candidate release are skipped; the class-based measures are exact")
            no_model, max_msu, no_release = True, 0, True
    else:
        prepared = prepare_table(frame, qis, split_names(sa), weight, parse_bins(bins), na_values,
                                 source)
    N, _ = resolve_population(prepared, population, fraction)
    extras = default_extras(max_msu)
    if not no_release:
        extras["k-anonymous release"] = release_extra(math.ceil(1 / threshold - 1e-9), seed)
    extras["LDP budget"] = ldp_extra(N, ldp_error, ldp_uniqueness, seed)
    result = assess(prepared, population=population, fraction=fraction, threshold=threshold,
                    missing=missing, model=not no_model, extras=extras, rng=seed, progress=say)
    if streamed:
        per_row = result.records()
        if prepared is not agg:
            per_row = per_row.iloc[first_rows(agg)]

        def write_records(tmp):
            say("writing the per-record file")
            stream_records(source, labels, per_row, tmp, record_format, parse_bins(bins),
                           na_values, chunk_rows or DEFAULT_CHUNK_ROWS)
    if output is not None:
        written = write_outputs(result, output, record_format, write_records)
        _echo_err("Wrote " + ", ".join(str(p) for p in written))
    if as_json:
        click.echo(summary_json(result), nl=False)
        return
    click.echo(_summary_text(result))


def _confirmed_suggestion(frame, source: str, na_values, yes: bool) -> list[str]:
    """The suggested QIs, once the user has confirmed them (or --yes)."""
    # pandas (reidrisk.assess): kept off the command line's start
    from reidrisk.assess.classes import AssessError
    from reidrisk.assess.table import suggest_qis

    suggested = suggest_qis(frame, na_values)
    if not suggested:
        raise AssessError(f"{source}: no column looks like a quasi-identifier by its name; name "
                          "them with --qi (what an attacker may know, e.g. --qi age,sex,zip)")
    names = [name for name, _ in suggested]
    _echo_err("Suggested quasi-identifiers (demographic or geographic names; see "
              "`reidrisk assess --help`):")
    for name, why in suggested:
        _echo_err(f"  {name}: {why}")
    if not yes:
        if not sys.stdin.isatty():
            raise AssessError(f"{source}: confirm the quasi-identifiers: rerun with --qi "
                              f"{','.join(names)} (edited as needed) or --yes")
        if not click.confirm("Use these?", default=False, err=True):
            raise AssessError("name the quasi-identifiers with --qi")
    return names


def _summary_text(result) -> str:
    s = result.summary()
    t = s["threshold"]
    lines = [
        f"{s['table']}: {s['records']:,} records, QIs {', '.join(s['quasi_identifiers'])}; "
        + ("taken as the whole population" if s["population_assumed_census"]
           else f"population {s['population']:,}"),
        f"  k-anonymity            {s['k_anonymity']}  (safe: >= {round(1 / t)})",
        f"  sample uniques         {s['sample_uniques']:,}",
        f"  records at risk        {100 * s['records_at_risk']:.1f} %  (individual risk > {t:g})",
        f"  expected re-ids        {s['expected_reidentifications']:,.1f}",
    ]
    for name in ("prosecutor", "journalist", "marketer"):
        a = s[name]
        lines.append(f"  {name + ' risk':<22} highest {a['highest']:.3f}, average {a['average']:.3f}")
    for name, u in s["population_uniques"].items():
        value = f"{u['in_table']:,.1f}" if u["valid"] else "failed"
        lines.append(f"  population uniques     {name:<9} {value}")
    if s.get("l_diversity") is not None:
        lines.append(f"  l-diversity            {s['l_diversity']}  (entropy l "
                     f"{s['entropy_l_diversity']:.3g}; safe: >= 2)")
        lines.append(f"  t-closeness            {s['t_closeness']:.3g}  (0 to 1; smaller is safer)")
    cand = s.get("candidate_release", {})
    if "k_reached" in cand:
        rates = ", ".join(f"{k} {100 * v[0]:.1f} %" for k, v in cand["attack_rates"].items())
        lines.append(f"  {cand['k_target']}-anonymous release  k {cand['k_reached']}, "
                     f"{cand['rows_suppressed']:,} rows suppressed; attacks: {rates}")
    ldp = s.get("ldp", {})
    if "epsilon" in ldp:
        lines.append(f"  LDP budget             epsilon {ldp['epsilon']:.3g} for an identification "
                     f"error >= {ldp['target_error']:g}")
    if s["options"]:
        best = s["options"][0]
        lines.append(f"  best measured option   {best['how']}: expected re-ids "
                     f"{best['expected_reidentifications']:,.1f}")
    return "\n".join(lines)
