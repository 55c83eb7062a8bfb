"""``reidrisk linkage``: score a release before publishing it, and anonymize a table by a pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reidrisk._options import CommaList, echo_json, flat, json_option

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def _names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """The column names of a repeated ``--qi`` / ``--sa``, in the order given, as a list."""
    return list(value)


@click.group()
def group() -> None:
    """Anonymization, linkage attacks and their scores (paper 001)."""


def _read(path: Path, columns: list[str]) -> pd.DataFrame:
    # kept off the command line's start: loaded only by this command
    from reidrisk.data.io import read_table

    return read_table(path, columns=columns)


def _with_numeric_sa(frame: pd.DataFrame, sa: list[str], path: Path) -> pd.DataFrame:
    # kept off the command line's start: loaded only by this command
    from reidrisk.linkage.release import numeric_matrix

    frame = frame.copy()
    values = numeric_matrix(frame, sa, where=repr(str(path)))
    for j, c in enumerate(sa):
        frame[c] = values[:, j]
    return frame


def _read_truth(path: Path, x: pd.DataFrame, y: pd.DataFrame, qi: list[str], sa: list[str]
                ) -> np.ndarray:
    """The true mapping in ``path``: column ``original_row`` (0-based rows of the original), in the
    release's order or keyed by a column ``release_row`` (0-based rows of the release, any order);
    checked by ``check_truth``."""
    # kept off the command line's start: loaded only by this command
    import numpy as np

    from reidrisk.data.io import TableError, read_table
    from reidrisk.linkage.release import LinkageError, check_truth

    frame = read_table(path)
    extra = [c for c in frame.columns if c not in ("original_row", "release_row")]
    if "original_row" not in frame.columns or extra:
        raise TableError(f"{str(path)!r} has columns {list(frame.columns)}; a true mapping has the "
                         "column 'original_row' (the 0-based row of the original for each released "
                         "row) and optionally 'release_row' (the 0-based released row it is for), "
                         "as written by `reidrisk linkage anonymize --truth-output`: rename or drop "
                         "the other columns")
    truth = _row_numbers(path, frame, "original_row")
    if "release_row" in frame.columns:
        at = _row_numbers(path, frame, "release_row")
        if len(at) != len(y) or not np.array_equal(np.sort(at), np.arange(len(y))):
            base = (" (it looks 1-based: subtract 1)" if np.array_equal(np.sort(at),
                                                                         np.arange(1, len(y) + 1))
                    else "")
            raise TableError(f"{str(path)!r}, column 'release_row': give each released row "
                             f"0..{len(y) - 1} exactly once{base}")
        ordered = np.empty_like(truth)
        ordered[at] = truth
        truth = ordered
    try:
        return check_truth(x, y, truth, qi=qi, sa=sa, where=repr(str(path)))
    except LinkageError as exc:
        raise TableError(str(exc)) from None


def _row_numbers(path: Path, frame: pd.DataFrame, col: str) -> np.ndarray:
    # kept off the command line's start: loaded only by this command
    import numpy as np
    import pandas as pd

    from reidrisk.data.io import TableError

    values = pd.to_numeric(frame[col], errors="coerce")
    bad = values.isna() | (values != values.round())
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise TableError(f"{str(path)!r}, column {col!r}, row {i + 1}: {frame[col].iloc[i]!r} is not "
                         "a row number; give 0-based integer row positions")
    return values.to_numpy(dtype=np.int64)


@group.command("evaluate")
@click.option("--original", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The original table X (CSV or Parquet).")
@click.option("--release", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The anonymized table Y to check (CSV or Parquet).")
@click.option("--qi", "qi", type=CommaList(click.STRING), multiple=True, required=True,
              callback=flat(_names), metavar="COLS",
              help="Quasi-identifier columns (repeatable, each a comma list).")
@click.option("--sa", "sa", type=CommaList(click.STRING), multiple=True, required=True,
              callback=flat(_names), metavar="COLS",
              help="Sensitive (numeric) columns (repeatable, each a comma list).")
@click.option("--truth", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="True mapping: column 'original_row', the 0-based row of X of each row of Y, in Y's "
                   "order or keyed by a column 'release_row' (0-based rows of Y).")
@click.option("--aligned", is_flag=True,
              help="Row i of the release descends from row i of the original (instead of --truth).")
@click.option("--attack", "attacks", type=CommaList(click.STRING), multiple=True,
              callback=flat(), metavar="NAME",
              help="Attack to run (repeatable, each a comma list; default all: E1 E2 E3 E4 EUC1 "
                   "EUC2 assign).")
@click.option("--scale", is_flag=True,
              help="Standardize SA columns before distances (default: raw values, as paper 001).")
@click.option("--distance", "metric", type=click.Choice(["auto", "euclidean", "scaled", "log"]),
              default="auto", show_default=True,
              help="SA distance of E2, E4, EUC1, EUC2 and assign: auto = the one an attacker "
                   "would pick without the mapping; euclidean = paper 001's; scaled = on columns "
                   "divided by their sd; log = relative differences (multiplicative noise).")
@click.option("--recode", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Recode map of a coded release: original value or range -> released code, "
                   "per QI column (TOML tables or CSV column,value,code).")
@click.option("--json", "as_json", is_flag=True, help="Print the scorecard as JSON.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random tie-breaks.")
def evaluate_cmd(original, release, qi, sa, truth, aligned, attacks, scale, metric, recode,
                 as_json, seed) -> None:
    """Score a release: utility lost (U1-U6), class sizes (S1-S2) and, with the true mapping, the
    share of rows each linkage attack re-identifies, with a 95% interval."""
    # kept off the command line's start: loaded only by this command
    import numpy as np

    from reidrisk.linkage.attacks import ATTACKS
    from reidrisk.linkage.evaluate import evaluate
    from reidrisk.linkage.generalization import RecodeMap
    from reidrisk.linkage.release import LinkageError

    if truth is not None and aligned:
        raise click.UsageError("give either --truth or --aligned, not both")
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown:
        raise click.BadParameter(f"unknown attack(s) {unknown}; use some of {list(ATTACKS)}",
                                 param_hint="--attack")
    overlap = sorted(set(qi) & set(sa))
    if overlap:
        raise click.BadParameter(f"column(s) {overlap} given both as --qi and --sa; list each once",
                                 param_hint="--sa")
    recoding = RecodeMap.from_file(recode) if recode is not None else None
    x = _qi_as_text(_with_numeric_sa(_read(original, qi + sa), sa, original), qi)
    if recoding is not None:
        x = recoding.apply(x, qi)
    y = _qi_as_text(_with_numeric_sa(_read(release, qi + sa), sa, release), qi)
    for path, frame in ((original, x), (release, y)):
        if len(frame) == 0:
            raise LinkageError(f"{str(path)!r} has a header but no rows; nothing to evaluate")
    if len(y) > len(x):
        raise LinkageError(f"{str(release)!r} has {len(y)} rows, more than the {len(x)} of "
                           f"{str(original)!r}; each released row must come from a distinct original "
                           "row — are --original and --release swapped?")
    if truth is not None:
        mapping = _read_truth(truth, x, y, qi, sa)
    elif aligned:
        mapping = np.arange(len(y), dtype=np.int64)
    else:
        mapping = None
    card = evaluate(x, y, qi=qi, sa=sa, truth=mapping, attacks=list(attacks) or None, rng=seed,
                    scale=scale, metric=metric)
    for note in card.notes:
        if "match no original row" in note:
            click.echo(f"Warning: {note}", err=True)
    if as_json:
        click.echo(json.dumps(card.to_dict(), indent=2))
    else:
        click.echo(card.to_text())
        if mapping is None:
            click.echo("Without the true mapping only the scores above can be computed: give "
                       "--truth MAP.csv (as written by `reidrisk linkage anonymize --truth-output`), "
                       "or --aligned if row i of the release comes from row i of the original, to "
                       "see how many rows each attack re-identifies.")


def _publishable(frame: pd.DataFrame) -> pd.DataFrame:
    """Generalized QI columns hold original values and labels side by side (``30`` and ``40-49``);
    Parquet needs one type per column, so such columns are written as text (as CSV does anyway)."""
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype == object:
            out[c] = out[c].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return out


def _qi_as_text(frame: pd.DataFrame, qi: list[str]) -> pd.DataFrame:
    """QI values compared as text, so a Parquet original (``30``) and a release written as text
    (``"30"``, ``"40-49"``) agree."""
    out = frame.copy()
    for c in qi:
        if out[c].dtype != object or not out[c].map(lambda v: isinstance(v, str)).all():
            out[c] = out[c].astype(str)
    return out


def _same_file(a: Path, b: Path) -> bool:
    """Whether paths ``a`` and ``b`` name one file, however spelt: ``./x.csv`` and ``x.csv``, a
    symbolic link and its target, two hard links (compared by device and inode when both exist,
    else as resolved absolute paths)."""
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


@group.command("anonymize")
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Pipeline TOML: [[steps]] tables with step = k_anonymize | noise | shuffle | "
                   "unify | average_sa | swap_sa | delete and their parameters.")
@click.option("--input", "input_", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The original table (CSV or Parquet).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where the release is written (CSV or Parquet); not the --input file.")
@click.option("--truth-output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the true mapping (columns release_row, original_row) here; keep it "
                   "secret.")
@json_option
@click.option("--seed", type=int, default=None,
              help="Seed for a reproducible release (default: fresh randomness; do not publish a "
                   "release made with a known seed).")
def anonymize_cmd(config, input_, output, truth_output, as_json, seed) -> None:
    """Anonymize a table with the pipeline in --config and write the release."""
    # kept off the command line's start: loaded only by this command
    import numpy as np
    import pandas as pd

    from reidrisk.data.io import check_output_path, read_table, write_table
    from reidrisk.linkage.anonymize import Pipeline
    from reidrisk.linkage.release import LinkageError

    for option, path in (("--output", output), ("--truth-output", truth_output)):
        if path is not None and _same_file(path, input_):
            raise click.BadParameter(f"{str(path)!r} is the --input file {str(input_)!r}: writing "
                                     f"there would overwrite the original; give {option} another "
                                     "path", param_hint=option)
    if truth_output is not None and _same_file(truth_output, output):
        raise click.BadParameter("--truth-output must differ from --output",
                                 param_hint="--truth-output")
    pipeline = Pipeline.from_toml(config)
    check_output_path(output)
    if truth_output is not None:
        check_output_path(truth_output)
    frame = read_table(input_)
    needed = set()
    for step in pipeline.steps:
        for k, v in step.params:
            if k in ("qi", "sa", "columns"):
                needed.update([v] if isinstance(v, str) else list(v))
    absent = sorted(needed - set(frame.columns))
    if absent:
        raise LinkageError(f"{str(input_)!r} lacks the column(s) {absent} named in {str(config)!r}; "
                           f"its columns are {list(frame.columns)}")
    sa_cols = sorted({c for s in pipeline.steps for k, v in s.params if k == "sa"
                      for c in ([v] if isinstance(v, str) else v)})
    if sa_cols:
        frame = _with_numeric_sa(frame, sa_cols, input_)
    release = pipeline.apply(frame, rng=seed)
    write_table(_publishable(release.data), output)
    if truth_output is not None:
        write_table(pd.DataFrame({"release_row": np.arange(release.n), "original_row": release.truth}),
                    truth_output)
    if as_json:
        echo_json({"output": output, "truth_output": truth_output, "rows": release.n,
                   "input_rows": len(frame), "steps": list(release.steps), "seed": seed})
    else:
        click.echo(f"Wrote {output}: {release.n} of {len(frame)} rows after "
                   f"{' -> '.join(release.steps)}", err=True)
