"""UCI Communities and Crime Unnormalized: loader and the schema paper 004 uses.

Files (``shared/data/uci-communities-crime-unnormalized``, see its PROVENANCE.md):
``CommViolPredUnnormalizedData.txt`` (2,215 records x 147 comma-separated fields, no header, CRLF,
``"?"`` for missing) and ``headers.csv`` (one line, the 147 column names).

The 147 columns are 5 identifiers (communityname, state, countyCode, communityCode, fold: not
predictive), 124 predictive attributes and 18 potential goals (crime counts and rates, the last 18
columns). Paper 004 (Section 5.3) uses "124 predictive attributes" and, "after removing the 22
attributes with more than 80% missing values", 102 attributes: the 22 removed are the LEMAS police
columns, each missing in 1,872 of 2,215 rows (84.5 %). ``communities_schema`` reproduces that
selection. The paper does not say how it made the numeric attributes categorical; we bin each at
its empirical quantiles, ``bins=5`` (quintiles) by default, ties merged (so a column with few
distinct values gets fewer bins, never fewer than 2). The goal columns are left out by default.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.data.io import EncodedData, TableError
from reidrisk.data.paths import check_files, require
from reidrisk.schema import Attribute, Schema, SchemaError

DATASET = "uci-communities-crime-unnormalized"
DATA_FILE = "CommViolPredUnnormalizedData.txt"
HEADER_FILE = "headers.csv"
ROWS = 2_215
N_COLUMNS = 147

IDENTIFIERS: tuple[str, ...] = ("communityname", "state", "countyCode", "communityCode", "fold")
GOALS: tuple[str, ...] = (
    "murders", "murdPerPop", "rapes", "rapesPerPop", "robberies", "robbbPerPop", "assaults",
    "assaultPerPop", "burglaries", "burglPerPop", "larcenies", "larcPerPop", "autoTheft",
    "autoTheftPerPop", "arsons", "arsonsPerPop", "ViolentCrimesPerPop", "nonViolPerPop",
)
TEXT_COLUMNS: tuple[str, ...] = ("communityname", "state")
DEFAULT_BINS = 5
DEFAULT_MAX_MISSING = 0.8


def load_communities(root: str | Path | None = None) -> pd.DataFrame:
    """Load the data as a DataFrame (2,215 rows x 147 named columns).

    Numeric columns are float64 with NaN where the file has ``"?"``; ``communityname`` and ``state``
    are strings.

    Parameters
    ----------
    root : str or Path, optional
        The folder holding the two files (default:
        ``shared_data_dir()/uci-communities-crime-unnormalized``).

    Returns
    -------
    pandas.DataFrame
        The records.

    Raises
    ------
    DatasetNotFound
        If the files are absent.
    """
    files = [DATA_FILE, HEADER_FILE]
    folder = require(DATASET, files) if root is None else check_files(Path(root), files, DATASET)
    names = (folder / HEADER_FILE).read_text().strip().split(",")
    names = [n.strip() for n in names]
    if len(names) != N_COLUMNS or len(set(names)) != N_COLUMNS:
        raise TableError(
            f"{str(folder / HEADER_FILE)!r} should list {N_COLUMNS} distinct column names, "
            f"found {len(names)} ({len(set(names))} distinct)"
        )
    try:
        frame = pd.read_csv(
            folder / DATA_FILE,
            header=None,
            names=names,
            na_values=["?"],
            keep_default_na=False,
            dtype={c: str for c in TEXT_COLUMNS},
            skip_blank_lines=True,
        )
    except (pd.errors.ParserError, ValueError) as exc:
        raise TableError(
            f"{str(folder / DATA_FILE)!r} is not in the expected format ({N_COLUMNS} "
            f"comma-separated fields, '?' for missing): {exc}"
        ) from None
    numeric = [c for c in names if c not in TEXT_COLUMNS]
    not_numeric = [c for c in numeric if not pd.api.types.is_numeric_dtype(frame[c])]
    if not_numeric:
        raise TableError(
            f"{str(folder / DATA_FILE)!r}: column(s) {not_numeric[:5]} hold non-numeric values "
            "other than '?'; the file is not the UCI Communities and Crime Unnormalized data"
        )
    frame[numeric] = frame[numeric].astype(np.float64)
    return frame


def predictive_columns(frame: pd.DataFrame, include_goals: bool = False) -> list[str]:
    """The frame's columns minus the identifiers (and minus the 18 goals unless asked).

    Parameters
    ----------
    frame : pandas.DataFrame
        The data as ``load_communities`` returns it.
    include_goals : bool
        Keep the 18 goal columns.

    Returns
    -------
    list of str
        The column names.
    """
    drop = set(IDENTIFIERS) | (set() if include_goals else set(GOALS))
    return [c for c in frame.columns if c not in drop]


def communities_schema(
    frame: pd.DataFrame,
    bins: int = DEFAULT_BINS,
    max_missing: float = DEFAULT_MAX_MISSING,
    include_goals: bool = False,
) -> Schema:
    """The schema of paper 004's Community experiment (Section 5.3): the predictive attributes
    with at most ``max_missing`` of their values missing (124 -> 102 at 0.8), each binned at its
    quantiles (ties merged).

    Parameters
    ----------
    frame : pandas.DataFrame
        The data as ``load_communities`` returns it.
    bins : int
        Number of quantile bins per attribute (fewer where ties merge).
    max_missing : float
        Largest share of missing values an attribute may have to be kept.
    include_goals : bool
        Keep the 18 goal attributes as well (default: predictive attributes only).

    Returns
    -------
    Schema
        The schema.
    """
    if not 0.0 <= max_missing <= 1.0:
        raise ValueError(f"max_missing must be a fraction in [0, 1], got {max_missing!r}")
    columns = predictive_columns(frame, include_goals)
    if not columns:
        raise SchemaError("the frame has no predictive columns; pass load_communities() output")
    missing_rate = frame[columns].isna().mean()
    keep = [c for c in columns if missing_rate[c] <= max_missing]
    return Schema(tuple(Attribute.quantile_binned(c, frame[c], bins) for c in keep))


def load_communities_encoded(
    bins: int = DEFAULT_BINS,
    max_missing: float = DEFAULT_MAX_MISSING,
    include_goals: bool = False,
    root: str | Path | None = None,
) -> EncodedData:
    """The data encoded with ``communities_schema``: ``schema, codes = load_communities_encoded()``,
    codes int32 (2,215, 102) by default with ``MISSING`` where the file has ``"?"``.

    Parameters
    ----------
    bins, max_missing, include_goals
        As in ``communities_schema``.
    root
        As in ``load_communities``.

    Returns
    -------
    EncodedData
        The schema and the codes.
    """
    frame = load_communities(root)
    schema = communities_schema(frame, bins=bins, max_missing=max_missing,
                                include_goals=include_goals)
    return EncodedData(schema, schema.encode(frame))


__all__ = [
    "GOALS", "IDENTIFIERS", "ROWS", "communities_schema", "load_communities",
    "load_communities_encoded", "predictive_columns",
]
