"""Shared pieces of the linkage benchmarks (paper 001): the data sets with their QI/SA split, the
single anonymizations of Table 9 as used for Table 13, and the paper's Table 13 values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reidrisk.data.microdata import make_microdata

#: population size of the synthetic table (paper 001, Section 2.1: 8,333 records)
SYNTH_N = 8_333

#: paper 001 Table 13 (Utility and Security of test data, 100-row sample), transcribed from the
#: paper's text: rows U1-U6, S1-S2, E1-E4, EUC1, EUC2; columns Original, D_a .. D_h.
PAPER_COLUMNS = ("original", "Da", "Db", "Dc", "Dd", "De", "Df", "Dg", "Dh")
PAPER_TABLE13 = {
    "U1": (0, 0, 46.225, 0, 0, 0, 0, 0, 295.731),
    "U2": (0, 38837.9, 7808.7, 0, 0, 15135.7, 104.9, 209.7, 1094.4),
    "U3": (0, 5.833, 0, 0, 0, 2, 0, 0, 0.097),
    "U4": (0, 0, 0.02, 0, 0, 0, 0, 0, 0.049),
    "U5": (0, 0, 0.016, 0.12, 0, 0, 0, 0, 0),
    "U6": (0, 0, 0, 0, 0, 0, 0, 0, 10),
    "S1": (1, 3, 1, 1, 1, 1, 1, 1, 1),
    "S2": (1.031, 7.692, 1.031, 1.031, 1.053, 1.053, 1.031, 1.031, 1.034),
    "E1": (0, 0.13, 0.99, 0, 0.07, 0.11, 0.94, 1, 1),
    "E2": (0, 0.17, 1, 0, 1, 1, 1, 1, 1),
    "E3": (0, 1, 0.54, 0, 1, 1, 1, 0.91, 0.067),
    "E4": (0.24, 0.24, 0.22, 0, 0.24, 0.24, 0.24, 0.24, 0.089),
    "EUC1": (0, 0.13, 1, 0, 0.07, 0.11, 1, 1, 1),
    "EUC2": (0, 0.17, 1, 0, 1, 1, 1, 1, 1),
}

#: the SA column E2 and E4 look at: the synthetic table's 8th SA column, like the paper's
#: attribute 21 ("identify-sa21"; 76 % zeros); Adult: the library's default, the first SA (age)
SA21 = {"synthetic": "education", "adult": None}

#: Table 9 of paper 001: the single anonymizations D_a .. D_h
METHODS = {
    "Da": "k-anonymization of QI (k = 3)",
    "Db": "noise added to SA",
    "Dc": "shuffling rows (Yamaoka / cheating)",
    "Dd": "unification of QI not used by U2/U3",
    "De": "unification of QI used by U2/U3",
    "Df": "SA replaced by QI-group means",
    "Dg": "SA swapped within QI groups",
    "Dh": "10 % of the records deleted",
}


# ---- data sets ---------------------------------------------------------------------------------
def synthetic(n: int = SYNTH_N, seed: int = 2015):
    """(frame, qi, sa) of the synthetic expenditure table (``reidrisk.data.microdata``)."""
    m = make_microdata(n, rng=seed)
    return m.data, list(m.qi), list(m.sa)


ADULT_QI = ["workclass", "education", "marital-status", "occupation", "relationship", "race",
            "sex", "native-country", "income"]
ADULT_SA = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def adult():
    """(frame, qi, sa) of UCI Adult (train, 32,561 rows): the 9 categorical columns as QI (a
    missing value, '?' in the file, is kept as the category '?'), the 6 numeric ones as SA
    (float)."""
    from reidrisk.data.adult import load_adult

    frame = load_adult("train")
    out = pd.DataFrame({c: frame[c].fillna("?").astype(str) for c in ADULT_QI})
    for c in ADULT_SA:
        out[c] = frame[c].astype(float)
    return out, list(ADULT_QI), list(ADULT_SA)


def movielens():
    """(frame, qi, sa) of the PWSCUP 2024 MovieLens subset (1,920 people): Gender, Age,
    Occupation and the 3-digit ZIP prefix as QI, the 46 ratings (0 = not rated) as SA."""
    from reidrisk.data.paths import require

    folder = require("pwscup2024-movielens-subset", ["A.csv"])
    frame = pd.read_csv(folder / "A.csv", dtype={"ZIP-code": str})
    qi = ["Gender", "Age", "Occupation", "ZIP-code"]
    sa = [c for c in frame.columns if c not in ("User ID", *qi)]
    out = frame[qi].astype(str).copy()
    for c in sa:
        out[f"m{c}"] = frame[c].astype(float)
    return out, qi, [f"m{c}" for c in sa]


def sample_index(size: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` sorted row positions out of ``size``, drawn without replacement."""
    return np.sort(rng.choice(size, size=n, replace=False))


def sample(frame: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows drawn without replacement (``sample_index``), re-indexed 0..n-1."""
    return frame.iloc[sample_index(len(frame), n, rng)].reset_index(drop=True)


def control_sample(frame: pd.DataFrame, taken: np.ndarray, n: int, rng) -> pd.DataFrame:
    """``n`` rows of ``frame`` outside the positions ``taken``, re-indexed 0..n-1."""
    rest = np.setdiff1d(np.arange(len(frame)), taken)
    return frame.iloc[np.sort(rng.choice(rest, size=n, replace=False))].reset_index(drop=True)


def qi_key(frame: pd.DataFrame, qi) -> np.ndarray:
    """One hashable key per row of its QI vector (for counting which rows have a QI match)."""
    return pd.util.hash_pandas_object(frame[list(qi)].astype(str), index=False).to_numpy()


# ---- Adult hierarchies for anjana (categorical: value -> group -> '*') -------------------------
def adult_hierarchies(frame: pd.DataFrame) -> dict:
    """Generalization hierarchies of the Adult QI for anjana: level 0 the value, level 1 a group
    (the groups reidrisk's Adult schema uses for education, occupation and native-country;
    workclass and marital-status grouped by hand; the rest have no middle level), level 2 '*'.
    One dict per column, ``{level: pd.Series}`` aligned by row (anjana's format)."""
    from reidrisk.data import adult as A

    def invert(groups):
        return {v: g for g, vs in groups.items() for v in vs}

    middle = {
        "education": invert(A._EDUCATION_GROUPS),
        "occupation": invert(A._OCCUPATION_GROUPS),
        "native-country": invert(A._COUNTRY_GROUPS),
        "workclass": invert({
            "Private": ["Private"],
            "Self-emp": ["Self-emp-not-inc", "Self-emp-inc"],
            "Gov": ["Federal-gov", "Local-gov", "State-gov"],
            "Unpaid": ["Without-pay", "Never-worked"],
        }),
        "marital-status": invert({
            "Married": ["Married-civ-spouse", "Married-AF-spouse", "Married-spouse-absent"],
            "Not-married": ["Divorced", "Never-married", "Separated", "Widowed"],
        }),
    }
    out = {}
    for col in ADULT_QI:
        values = pd.Series(sorted(frame[col].unique()))
        if col in middle:
            level1 = values.map(lambda v, m=middle[col]: m.get(v, "?"))
            out[col] = {0: values, 1: level1, 2: pd.Series(["*"] * len(values))}
        else:
            out[col] = {0: values, 1: pd.Series(["*"] * len(values))}
    return out
