"""UCI Adult (Census Income, 1994): loader and the schemas papers 004 and 000 use.

Files (``shared/data/uci-adult``, see its PROVENANCE.md): ``adult.data`` (train) and ``adult.test``
(test), 15 columns, no header, fields separated by ``", "``, ``"?"`` missing; ``adult.test``'s
junk first line ``|1x3 Cross validator`` and its labels' trailing ``"."`` are stripped here.

Schemas: ``"paper004"`` — all 15 attributes with 2..9 categories each (paper 004, Section 5.3,
gives only that range); the bins and merges below are ours, declared (not fitted):

==================  ==  =====================================================================
attribute           f   categories
==================  ==  =====================================================================
age                 6   [17, 25) [25, 35) [35, 45) [45, 55) [55, 65) [65, 90]
workclass           8   as declared in adult.names (no merge needed)
fnlwgt              5   edges 0, 100k, 150k, 200k, 250k, 1.5M (near the train quintiles)
education           9   Preschool-8th (Preschool, 1st-4th, 5th-6th, 7th-8th), 9th-12th (9th..12th),
                        HS-grad, Some-college, Assoc (-voc, -acdm), Bachelors, Masters, Prof-school, Doctorate
education-num       9   edges 1, 5, 9, 10, 11, 13, 14, 15, 16, 17: the same grouping as education
marital-status      7   as declared
occupation          9   Exec-managerial, Prof-specialty, Tech-support, Adm-clerical, Sales,
                        Craft-repair, Manual (Machine-op-inspct, Handlers-cleaners,
                        Transport-moving, Farming-fishing), Service (Other-service,
                        Priv-house-serv), Protective (Protective-serv, Armed-Forces)
relationship        6   as declared
race                5   as declared
sex                 2   Female, Male
capital-gain        3   [0, 1) i.e. none, [1, 5000), [5000, 100000]
capital-loss        3   [0, 1) i.e. none, [1, 1800), [1800, 4400]
hours-per-week      7   [1, 25) [25, 35) [35, 40) [40, 41) i.e. exactly 40, [41, 50) [50, 60)
                        [60, 99]
native-country      8   United-States, Mexico, Canada, Central-America-Caribbean, South-America,
                        Europe, East-Asia, South-Southeast-Asia (incl. Iran)
income              2   <=50K, >50K
==================  ==  =====================================================================

``"paper000"`` — the 9 categorical attributes of paper 000 (Section V), each with its full category
list from adult.names (education in level order, income ``<=50K`` < ``>50K``). Paper 000 uses the
complete records (Table 2) and the categories *observed* in them (``Never-worked`` occurs only with
a missing occupation): ``adult_schema("paper000", domain="observed")`` gives that domain.
"""

from __future__ import annotations

import gzip
import io
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.data.io import EncodedData, TableError
from reidrisk.data.paths import check_files, require
from reidrisk.schema import Attribute, Schema, SchemaError

DATASET = "uci-adult"
FILES = {"train": "adult.data", "test": "adult.test"}

COLUMNS: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
)
NUMERIC: tuple[str, ...] = (
    "age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week",
)

TRAIN_ROWS = 32_561
TEST_ROWS = 16_281
COMPLETE_TRAIN_ROWS = 30_162

# Category lists as declared in adult.names (education reordered by education-num).
WORKCLASS = ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
             "State-gov", "Without-pay", "Never-worked")
EDUCATION = ("Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th",
             "HS-grad", "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters",
             "Prof-school", "Doctorate")
MARITAL_STATUS = ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                  "Married-spouse-absent", "Married-AF-spouse")
OCCUPATION = ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
              "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
              "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
              "Armed-Forces")
RELATIONSHIP = ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried")
RACE = ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black")
SEX = ("Female", "Male")
NATIVE_COUNTRY = (
    "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
    "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
    "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
    "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
    "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
    "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
)
INCOME = ("<=50K", ">50K")

PAPER000_ATTRIBUTES = ("workclass", "education", "marital-status", "occupation", "relationship",
                       "race", "sex", "native-country", "income")

_EDUCATION_GROUPS = {
    "Preschool-8th": ["Preschool", "1st-4th", "5th-6th", "7th-8th"],
    "9th-12th": ["9th", "10th", "11th", "12th"],
    "HS-grad": ["HS-grad"],
    "Some-college": ["Some-college"],
    "Assoc": ["Assoc-voc", "Assoc-acdm"],
    "Bachelors": ["Bachelors"],
    "Masters": ["Masters"],
    "Prof-school": ["Prof-school"],
    "Doctorate": ["Doctorate"],
}
_OCCUPATION_GROUPS = {
    "Exec-managerial": ["Exec-managerial"],
    "Prof-specialty": ["Prof-specialty"],
    "Tech-support": ["Tech-support"],
    "Adm-clerical": ["Adm-clerical"],
    "Sales": ["Sales"],
    "Craft-repair": ["Craft-repair"],
    "Manual": ["Machine-op-inspct", "Handlers-cleaners", "Transport-moving", "Farming-fishing"],
    "Service": ["Other-service", "Priv-house-serv"],
    "Protective": ["Protective-serv", "Armed-Forces"],
}
_COUNTRY_GROUPS = {
    "United-States": ["United-States"],
    "Mexico": ["Mexico"],
    "Canada": ["Canada"],
    "Central-America-Caribbean": [
        "Puerto-Rico", "Outlying-US(Guam-USVI-etc)", "Cuba", "Jamaica", "Dominican-Republic",
        "Haiti", "Honduras", "Guatemala", "Nicaragua", "El-Salvador", "Trinadad&Tobago"],
    "South-America": ["Ecuador", "Columbia", "Peru"],
    "Europe": ["England", "Germany", "Greece", "Italy", "Poland", "Portugal", "Ireland", "France",
               "Hungary", "Scotland", "Yugoslavia", "Holand-Netherlands"],
    "East-Asia": ["China", "Japan", "Taiwan", "Hong", "South"],
    "South-Southeast-Asia": ["India", "Philippines", "Vietnam", "Laos", "Cambodia", "Thailand",
                             "Iran"],
}

VARIANTS = ("paper004", "paper000")


def _adult_root(root: str | Path | None, files: list[str]) -> Path:
    if root is None:
        return require(DATASET, files)
    return check_files(Path(root), files, DATASET)


def _read_file(path: Path, split: str) -> pd.DataFrame:
    try:
        frame = pd.read_csv(
            path,
            header=None,
            names=list(COLUMNS),
            sep=",",
            skipinitialspace=True,
            comment="|",  # the junk banner line of adult.test
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=True,
        )
    except pd.errors.ParserError as exc:
        raise TableError(f"{str(path)!r} is not in the Adult format (15 fields a line): {exc}") \
            from None
    frame = frame.apply(lambda col: col.str.strip())
    empty = (frame.isna() | (frame == "")).any(axis=1).to_numpy()
    if empty.any():
        # No Adult field is ever empty: an empty one means a short (truncated) record.
        row = int(np.flatnonzero(empty)[0])
        raise TableError(
            f"{str(path)!r}: record {row} has fewer than 15 fields; the file is truncated or "
            "not the UCI Adult file (see PROVENANCE.md for the expected md5)"
        )
    if split == "test":
        frame["income"] = frame["income"].str.removesuffix(".")
    bad = ~frame["income"].isin(INCOME)
    if bad.any():
        raise TableError(
            f"{str(path)!r}: unexpected income label {frame['income'][bad].iloc[0]!r}; "
            f"expected one of {list(INCOME)}"
        )
    for col in NUMERIC:
        try:
            frame[col] = frame[col].astype(np.int64)
        except ValueError:
            raise TableError(f"{str(path)!r}: column {col!r} has a non-integer value") from None
    for col in frame.columns.difference(NUMERIC):
        frame[col] = frame[col].where(frame[col] != "?", None)
    return frame


def load_adult(split: str = "train", root: str | Path | None = None) -> pd.DataFrame:
    """Load UCI Adult as a DataFrame with the 15 named columns ``COLUMNS``.

    Numeric columns are int64; text columns are strings with missing values (``"?"`` in the
    files) as NaN.

    Parameters
    ----------
    split : {"train", "test", "both"}
        ``"train"`` (adult.data, 32,561 rows), ``"test"`` (adult.test, 16,281 rows) or ``"both"``
        (train then test, 48,842 rows).
    root : str or Path, optional
        The folder holding the files (default: ``shared_data_dir()/uci-adult``).

    Returns
    -------
    pandas.DataFrame
        The records.

    Raises
    ------
    DatasetNotFound
        If the files are absent.
    """
    if split not in ("train", "test", "both"):
        raise ValueError(f"split must be 'train', 'test' or 'both', got {split!r}")
    splits = ["train", "test"] if split == "both" else [split]
    folder = _adult_root(root, [FILES[s] for s in splits])
    frames = [_read_file(folder / FILES[s], s) for s in splits]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def adult_schema(variant: str = "paper004", domain: str = "declared") -> Schema:
    """The Adult schema of a paper (see the module docstring for every bin and merge).

    Parameters
    ----------
    variant : {"paper004", "paper000"}
        ``"paper004"``: 15 attributes, 2..9 categories each (paper 004, Section 5.3).
        ``"paper000"``: the 9 categorical attributes of paper 000 (Section V, Table 2).
    domain : {"declared", "observed"}
        For ``"paper000"``: the full category lists (``"declared"``) or only the categories
        observed in the 30,162 complete train records (``"observed"``: drops workclass
        ``Never-worked``; product of the domain sizes 54,001,920 = the 5.4e7 of Table 2).

    Returns
    -------
    Schema
        The schema.
    """
    if domain not in ("declared", "observed"):
        raise ValueError(f"domain must be 'declared' or 'observed', got {domain!r}")
    if variant == "paper004":
        if domain != "declared":
            raise ValueError("domain='observed' applies to variant='paper000' only")
        attrs = (
            Attribute.binned("age", [17, 25, 35, 45, 55, 65, 90]),
            Attribute("workclass", WORKCLASS),
            Attribute.binned("fnlwgt", [0, 100_000, 150_000, 200_000, 250_000, 1_500_000]),
            Attribute.grouped("education", _EDUCATION_GROUPS),
            Attribute.binned("education-num", [1, 5, 9, 10, 11, 13, 14, 15, 16, 17]),
            Attribute("marital-status", MARITAL_STATUS),
            Attribute.grouped("occupation", _OCCUPATION_GROUPS),
            Attribute("relationship", RELATIONSHIP),
            Attribute("race", RACE),
            Attribute("sex", SEX),
            Attribute.binned("capital-gain", [0, 1, 5_000, 100_000]),
            Attribute.binned("capital-loss", [0, 1, 1_800, 4_400]),
            Attribute.binned("hours-per-week", [1, 25, 35, 40, 41, 50, 60, 99]),
            Attribute.grouped("native-country", _COUNTRY_GROUPS),
            Attribute("income", INCOME),
        )
        return Schema(attrs)
    if variant == "paper000":
        workclass = WORKCLASS if domain == "declared" else WORKCLASS[:-1]
        return Schema((
            Attribute("workclass", workclass),
            Attribute("education", EDUCATION),
            Attribute("marital-status", MARITAL_STATUS),
            Attribute("occupation", OCCUPATION),
            Attribute("relationship", RELATIONSHIP),
            Attribute("race", RACE),
            Attribute("sex", SEX),
            Attribute("native-country", NATIVE_COUNTRY),
            Attribute("income", INCOME),
        ))
    raise ValueError(f"unknown Adult schema variant {variant!r}; choose one of {list(VARIANTS)}")


def load_adult_encoded(
    variant: str = "paper004",
    split: str = "train",
    complete_only: bool = False,
    root: str | Path | None = None,
    domain: str = "declared",
) -> EncodedData:
    """Adult encoded with ``adult_schema(variant, domain)``; unpacks as
    ``schema, codes = load_adult_encoded()``.

    ``codes`` is int32 (n, g), ``MISSING`` where the file has ``"?"``.

    Parameters
    ----------
    variant, domain
        As in ``adult_schema``.
    split, root
        As in ``load_adult``.
    complete_only : bool
        Keep only the rows with every schema attribute present (train: 30,162 of 32,561 for both
        variants).

    Returns
    -------
    EncodedData
        The schema and the codes (n, g) int32.
    """
    schema = adult_schema(variant, domain)
    frame = load_adult(split, root)[schema.names]
    if complete_only:
        frame = frame[frame.notna().all(axis=1)].reset_index(drop=True)
    try:
        codes = schema.encode(frame)
    except SchemaError as exc:
        raise SchemaError(
            f"{exc}. (Adult {variant!r}, domain={domain!r}: a value outside the observed domain "
            "appears only in incomplete rows; pass complete_only=True or domain='declared')"
        ) from None
    return EncodedData(schema, codes)


EXTRACT_COLUMNS: tuple[str, ...] = (
    "age", "education", "marital-status", "occupation", "race", "sex", "native-country",
    "hours-per-week", "income",
)
"""The columns of the shipped extract: what a data holder's table of people would hold."""

EXTRACT_ROWS = 10_000
EXTRACT_SEED = 20_240_611
EXTRACT_FILE = "adult_extract.csv.gz"
"""The extract shipped in the package (``reidrisk/data/``, attribution in ``ADULT_EXTRACT.md``
beside it): ``EXTRACT_ROWS`` complete train records drawn without replacement by
``numpy.random.default_rng(EXTRACT_SEED)``, in file order, ``EXTRACT_COLUMNS`` only."""


def make_adult_extract(root: str | Path | None = None) -> pd.DataFrame:
    """Draw the shipped extract from the full Adult train file (deterministic).

    Parameters
    ----------
    root : str or Path, optional
        The folder holding ``adult.data`` (as in ``load_adult``).

    Returns
    -------
    pandas.DataFrame
        ``EXTRACT_ROWS`` rows, ``EXTRACT_COLUMNS``: the complete records (no ``"?"`` in those
        columns) chosen by ``EXTRACT_SEED``, kept in their file order.

    Raises
    ------
    DatasetNotFound
        If the Adult files are absent.
    """
    frame = load_adult("train", root)[list(EXTRACT_COLUMNS)]
    frame = frame[frame.notna().all(axis=1)].reset_index(drop=True)
    keep = np.sort(np.random.default_rng(EXTRACT_SEED).choice(len(frame), EXTRACT_ROWS,
                                                              replace=False))
    return frame.iloc[keep].reset_index(drop=True)


def write_adult_extract(path: str | Path, root: str | Path | None = None) -> Path:
    """Write ``make_adult_extract(root)`` as a gzip CSV whose bytes depend only on the data.

    The gzip header carries no file name and a zero time stamp, so two runs give the same bytes.

    Parameters
    ----------
    path : str or Path
        The file to write (``src/reidrisk/data/adult_extract.csv.gz`` in the package).
    root : str or Path, optional
        The folder holding ``adult.data``.

    Returns
    -------
    Path
        ``path``.
    """
    text = make_adult_extract(root).to_csv(index=False, lineterminator="\n")
    path = Path(path)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    return path


def load_adult_extract() -> pd.DataFrame:
    """The Adult extract shipped in the package: real records without the shared data folder.

    UCI Machine Learning Repository, "Adult" (Becker & Kohavi, 1996), CC BY 4.0; the extract's
    attribution and how it was drawn: ``ADULT_EXTRACT.md`` beside the file.

    Returns
    -------
    pandas.DataFrame
        ``EXTRACT_ROWS`` records with ``EXTRACT_COLUMNS``: age and hours-per-week int64, the
        others strings, none missing.
    """
    data = resources.files("reidrisk.data").joinpath(EXTRACT_FILE).read_bytes()
    frame = pd.read_csv(io.BytesIO(gzip.decompress(data)), dtype=str, keep_default_na=False)
    for col in ("age", "hours-per-week"):
        frame[col] = frame[col].astype(np.int64)
    return frame


__all__ = [
    "COLUMNS", "EXTRACT_COLUMNS", "EXTRACT_FILE", "EXTRACT_ROWS", "EXTRACT_SEED",
    "load_adult_extract", "make_adult_extract", "write_adult_extract", "COMPLETE_TRAIN_ROWS", "NUMERIC", "PAPER000_ATTRIBUTES", "TEST_ROWS", "TRAIN_ROWS",
    "VARIANTS", "adult_schema", "load_adult", "load_adult_encoded",
]
