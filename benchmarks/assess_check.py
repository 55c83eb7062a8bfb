"""reidrisk.assess's k-anonymity and sensitive-attribute measures against pycanon.

pycanon (Sáinz-Pardo Díaz & López García 2022) computes k-anonymity, distinct, entropy and
recursive (c,l)-diversity, t-closeness, δ-disclosure and basic / enhanced β-likeness of a pandas
table. This script computes each of them with pycanon and with ``reidrisk.assess`` (k = min fk of
``classes.sample_frequencies``, the rest ``diversity.diversity(...).summary()``) on the same
records and reports every value side by side:

- ``adult``: UCI Adult train, the records with no '?' in the columns used; QIs age (10-year bins),
  sex, race, marital-status, education, native-country; SAs occupation and income (nominal),
  hours-per-week // 10 (ordered, 10 values).
- ``adult-missing``: UCI Adult train with '?' as missing; QIs age (10-year bins), sex, race,
  workclass (1,836 missing), marital-status, native-country (583 missing); SAs income (nominal),
  education-num (ordered).
- ``communities``: UCI Communities and Crime (unnormalized); QIs state, population and median
  income (quintiles), LemasGangUnitDeploy (0 / 5 / 10, 1,872 of 2,215 missing); SAs
  ViolentCrimesPerPop (deciles, ordered; its 221 missing records dropped) and murders (0, 1-2,
  3-10, > 10, nominal).
- ``movielens``: the PWS Cup 2024 MovieLens subset; QIs gender, age group, the ZIP code's first
  digit and the ratings of movies 260, 1097 and 2628 (0 = not rated = missing); SAs occupation
  (nominal) and the rating of movie 1073 (ordered; the records that did not rate it dropped).

Fine QIs make almost every table 1-anonymous and 1-diverse, which checks little of k, l and (c,l),
so each table also comes with a ``coarse`` QI set: Adult age in 20-year bins and sex (the
complete records), and sex and native country US or not (with '?'); Communities
LemasGangUnitDeploy alone; MovieLens gender and whether movies 260 and 2628 were rated 4 or more
(missing when not rated).

pycanon groups with ``DataFrame.groupby``, which leaves out every record with a missing (NaN) QI:
such a record is in no class, yet its sensitive value still counts in the table's distribution.
Two inputs compare the two implementations on one definition each:

- ``value``: missing QI values given to pycanon as the code -1, a value of its own; ours with
  ``missing="value"`` (ARX's reading) over every record.
- ``nan``: missing QI values given to pycanon as NaN; ours with ``missing="value"`` aggregated over
  the records with every QI observed (``summary(where=complete)``, ``k`` = min fk over them), the
  table's distribution over all records as pycanon's.

Ours with ``missing="wildcard"`` (the package's default: a missing value matches any value) is
shown beside them; pycanon has no such reading. A sensitive attribute is given to pycanon as
strings when nominal (equal-distance EMD) and as integers in value order when ordered (pycanon's
ordered EMD is chosen by a numeric column).

    .venv/bin/python benchmarks/assess_check.py [--quick]

(10 minutes on the 2-core reference machine at a load average falling from 9 to 2, 35 at 10-15;
nearly all of it pycanon's; ``make bench-assess_check`` installs pycanon first).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402
from reidrisk.assess.classes import MISSING, sample_frequencies  # noqa: E402
from reidrisk.assess.diversity import RecordDiversity, diversity  # noqa: E402
from reidrisk.data.adult import load_adult  # noqa: E402
from reidrisk.data.communities import load_communities  # noqa: E402
from reidrisk.data.paths import shared_data_dir  # noqa: E402

MEASURES = ("k", "l", "entropy_l", "recursive_l", "recursive_c", "t", "delta", "beta_basic",
            "beta_enhanced")


@dataclass
class Sensitive:
    name: str
    codes: np.ndarray  # (n,), MISSING where missing
    size: int
    ordered: bool


@dataclass
class Table:
    name: str
    qi_names: list[str]
    qi: np.ndarray  # (n, q), MISSING where missing
    sensitive: list[Sensitive]


def encode(series: pd.Series) -> tuple[np.ndarray, int]:
    """Codes in sorted value order, MISSING for NaN, and the number of values."""
    codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
    return codes.astype(np.int64), len(uniques)


def binned(series: pd.Series, q: int) -> pd.Series:
    """Quantile bins (their left edge's rank), NaN kept."""
    return pd.qcut(series, q, labels=False, duplicates="drop")


def make_table(name, frame: pd.DataFrame, qis: list[str], sas: list[tuple[str, bool]]) -> Table:
    qi = np.column_stack([encode(frame[c])[0] for c in qis])
    sens = [Sensitive(c, *encode(frame[c]), ordered) for c, ordered in sas]
    return Table(name, qis, qi, sens)


def adult_tables() -> list[Table]:
    raw = load_adult("train")
    us = raw["native-country"].where(raw["native-country"].isna(),
                                     raw["native-country"] == "United-States")
    raw = raw.assign(age=(raw["age"] // 10) * 10, age20=(raw["age"] // 20) * 20,
                     hours=raw["hours-per-week"] // 10, us=us)
    cols = ["age", "sex", "race", "marital-status", "education", "native-country"]
    sas = [("occupation", False), ("income", False), ("hours", True)]
    complete = raw.dropna(subset=cols + [s for s, _ in sas]).reset_index(drop=True)
    miss_cols = ["age", "sex", "race", "workclass", "marital-status", "native-country"]
    miss_sas = [("income", False), ("education-num", True)]
    return [make_table("adult", complete, cols, sas),
            make_table("adult coarse", complete, ["age20", "sex"], sas),
            make_table("adult-missing", raw, miss_cols, miss_sas),
            make_table("adult-missing coarse", raw, ["sex", "us"], miss_sas)]


def communities_tables() -> list[Table]:
    raw = load_communities()
    frame = pd.DataFrame({
        "state": raw["state"],
        "population": binned(raw["population"], 5),
        "medIncome": binned(raw["medIncome"], 5),
        "LemasGangUnitDeploy": raw["LemasGangUnitDeploy"],
        "ViolentCrimesPerPop": binned(raw["ViolentCrimesPerPop"], 10),
        "murders": pd.cut(raw["murders"], [-1, 0, 2, 10, np.inf],
                          labels=["0", "1-2", "3-10", ">10"]).astype(str),
    })
    sas = [("ViolentCrimesPerPop", True), ("murders", False)]
    return [make_table("communities", frame,
                       ["state", "population", "medIncome", "LemasGangUnitDeploy"], sas),
            make_table("communities coarse", frame, ["LemasGangUnitDeploy"], sas)]


def movielens_tables() -> list[Table]:
    raw = pd.read_csv(shared_data_dir() / "pwscup2024-movielens-subset" / "A.csv")
    rated = {m: raw[m].where(raw[m] != 0) for m in ("260", "1097", "2628", "1073")}
    frame = pd.DataFrame({
        "gender": raw["Gender"], "age": raw["Age"],
        "zip1": raw["ZIP-code"].astype(str).str[0],
        **{f"r{m}": rated[m] for m in ("260", "1097", "2628")},
        **{f"likes{m}": rated[m].where(rated[m].isna(), rated[m] >= 4) for m in ("260", "2628")},
        "occupation": raw["Occupation"], "r1073": rated["1073"],
    })
    sas = [("occupation", False), ("r1073", True)]
    return [make_table("movielens", frame, ["gender", "age", "zip1", "r260", "r1097", "r2628"],
                       sas),
            make_table("movielens coarse", frame, ["gender", "likes260", "likes2628"], sas)]


# ---- the two sides -----------------------------------------------------------------------------
def pycanon_frame(qi_names, qi, sens: Sensitive, mode: str) -> pd.DataFrame:
    """The records given to pycanon: QI codes (-1 or NaN for missing), the SA as strings
    (nominal) or integers in value order (ordered)."""
    data = {}
    for j, c in enumerate(qi_names):
        col = qi[:, j]
        data[c] = col if mode == "value" else np.where(col == MISSING, np.nan, col.astype(float))
    data["__sa"] = sens.codes if sens.ordered else np.array([f"s{v}" for v in sens.codes],
                                                            dtype=object)
    return pd.DataFrame(data)


def pycanon_values(frame: pd.DataFrame, qis: list[str]) -> tuple[dict, dict]:
    """pycanon's measures of ``frame``, and the seconds each took."""
    from pycanon import anonymity as an

    sa = ["__sa"]
    calls = {
        "k": lambda: an.k_anonymity(frame, qis),
        "l": lambda: an.l_diversity(frame, qis, sa),
        "entropy_l": lambda: an.entropy_l_diversity(frame, qis, sa),
        "recursive": lambda: an.recursive_c_l_diversity(frame, qis, sa),
        "t": lambda: an.t_closeness(frame, qis, sa),
        "delta": lambda: an.delta_disclosure(frame, qis, sa),
        "beta_basic": lambda: an.basic_beta_likeness(frame, qis, sa),
        "beta_enhanced": lambda: an.enhanced_beta_likeness(frame, qis, sa),
    }
    out, secs = {}, {}
    for key, call in calls.items():
        t0 = time.perf_counter()
        value = call()
        secs[key] = time.perf_counter() - t0
        if key == "recursive":
            out["recursive_c"], out["recursive_l"] = float(value[0]), int(value[1])
        else:
            out[key] = float(value)
    return out, secs


def pycanon_reading_c(rd: RecordDiversity, l: int, where: np.ndarray) -> float:  # noqa: E741
    """pycanon's c computed from our class counts: the class's present counts sorted in
    *ascending* order r'_1 <= ... , then floor(r'_1 / (r'_l + ... ) + 1), the maximum over the
    classes (the paper sorts in descending order)."""
    asc = np.sort(np.where(rd.counts > 0, rd.counts, np.inf), axis=1)
    tail = np.where(np.isfinite(asc[:, l - 1:]), asc[:, l - 1:], 0.0).sum(axis=1)
    keep = where & rd.observed
    return float(np.floor(asc[keep, 0] / tail[keep] + 1).max())


def ours(qi, sens: Sensitive, rule: str, where: np.ndarray | None) -> tuple[dict, RecordDiversity]:
    fk, _ = sample_frequencies(qi, missing=rule)
    rd = diversity(qi, sens.codes, sens.size, ordered=sens.ordered, missing=rule)
    s = rd.summary(where=where)
    k = int(fk.min() if where is None else fk[where].min())
    return {"k": float(k), "l": float(s.distinct_l), "entropy_l": s.entropy_l,
            "recursive_l": float(s.recursive_l), "recursive_c": s.recursive_c,
            "t": s.t_closeness, "delta": s.delta_disclosure, "beta_basic": s.basic_beta,
            "beta_enhanced": s.enhanced_beta}, rd


def agree(measure: str, theirs: float, mine: float) -> bool:
    if measure == "entropy_l":  # pycanon returns the integer part
        return int(theirs) == math.floor(mine + 1e-9)
    if math.isnan(theirs) or math.isnan(mine):
        return math.isnan(theirs) and math.isnan(mine)
    return math.isclose(theirs, mine, rel_tol=1e-9, abs_tol=1e-12)


def fmt(x: float) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.6g}"


def run_case(res: Results, table: Table, sens: Sensitive, mode: str, rows: list, notes: list,
             tally: dict) -> None:
    keep = sens.codes != MISSING  # records without the sensitive value dropped on both sides
    qi = table.qi[keep]
    sens = Sensitive(sens.name, sens.codes[keep], sens.size, sens.ordered)
    has_missing = bool((qi == MISSING).any())
    if mode == "nan" and not has_missing:
        return
    complete = (qi != MISSING).all(axis=1)
    frame = pycanon_frame(table.qi_names, qi, sens, mode)
    theirs, secs = pycanon_values(frame, table.qi_names)
    mine, rd = ours(qi, sens, "value", complete if mode == "nan" else None)
    reading_c = pycanon_reading_c(rd, int(mine["recursive_l"]),
                                  complete if mode == "nan" else np.ones(len(qi), bool))
    wild = ours(qi, sens, "wildcard", None)[0] if has_missing else None
    params = {"table": table.name, "sa": sens.name, "ordered": sens.ordered, "input": mode,
              "records": int(len(qi)), "complete_records": int(complete.sum())}
    cells = []
    for m in MEASURES:
        same = agree(m, theirs[m], mine[m])
        res.add({**params, "measure": m}, "pycanon", theirs[m], "value")
        res.add({**params, "measure": m}, "reidrisk", mine[m], "value")
        res.add({**params, "measure": m}, "equal", float(same), "bool")
        if wild is not None:
            res.add({**params, "measure": m}, "reidrisk_wildcard", wild[m], "value")
        key = "equal" if same else ("c_ascending" if m == "recursive_c" else "differ")
        if m == "recursive_c" and not same and math.isnan(theirs[m]):
            key = "c_l_is_1"
        tally[key] = tally.get(key, 0) + 1
        cell = fmt(mine[m]) if same else f"**{fmt(theirs[m])} / {fmt(mine[m])}**"
        if m == "entropy_l" and same:
            cell = f"{fmt(theirs[m])} ({mine[m]:.4g})"
        cells.append(cell)
    res.add(params, "pycanon_seconds", sum(secs.values()), "s")
    res.add(params, "pycanon_reading_c", reading_c, "value")
    rows.append([table.name, sens.name + (" (ord.)" if sens.ordered else ""), mode,
                 f"{len(qi):,}", *cells, fmt(reading_c)])
    if wild is not None:
        rows.append(["", "", "ours, wildcard", "", *[fmt(wild[m]) for m in MEASURES], ""])
    if not math.isnan(theirs["recursive_c"]) and not agree("recursive_c", theirs["recursive_c"],
                                                          reading_c):
        notes.append(f"{table.name}/{sens.name}/{mode}: pycanon's c {theirs['recursive_c']} is not "
                     f"the ascending reading {reading_c}")
    print(f"{table.name:14s} {sens.name:20s} {mode:6s} pycanon {sum(secs.values()):6.1f} s "
          f"differ: {[m for m in MEASURES if not agree(m, theirs[m], mine[m])]}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="the first 1,500 records of each table, results into a temporary folder")
    args = ap.parse_args()
    res = Results("assess_check", packages=["pycanon", "pandas"],
                  results_dir=Path(tempfile.mkdtemp()) if args.quick else None)
    tables = [*adult_tables(), *communities_tables(), *movielens_tables()]
    if args.quick:
        tables = [Table(t.name, t.qi_names, t.qi[:1500],
                        [Sensitive(s.name, s.codes[:1500], s.size, s.ordered) for s in t.sensitive])
                  for t in tables]
    rows: list = []
    notes: list = []
    tally: dict = {}
    for table in tables:
        for sens in table.sensitive:
            for mode in ("value", "nan"):
                run_case(res, table, sens, mode, rows, notes, tally)
    res.write(body(rows, notes, tally), echo=False)


def body(rows, notes, tally) -> list[str]:
    heads = ["table", "SA", "input", "records", "k", "l", "entropy l", "(c,l): l", "(c,l): c",
             "t", "δ", "β basic", "β enhanced", "c, pycanon's reading"]
    total = sum(tally.values())
    lines = [
        "# assess: k, l, t, δ and β against pycanon",
        "",
        "Every table-level measure of `reidrisk.assess` (k = min fk of `classes.sample_frequencies`;"
        " the rest `diversity.diversity(...).summary()`) beside pycanon's on the same records "
        "(benchmarks/assess_check.py's docstring gives the tables, QIs and SAs). A cell shows "
        "the common value when both agree (to 1e-9 relative; entropy l: pycanon's integer part "
        "equals ours, ours in brackets), else **pycanon / ours**. `value`: missing QI values "
        "given to pycanon as a value of their own, ours with `missing=\"value\"`; `nan`: given "
        "as NaN, which pycanon's `groupby` leaves out of every class, ours with "
        "`missing=\"value\"` over the records with every QI observed. The row `ours, wildcard` "
        "is the package's default reading (a missing value matches any value), which pycanon "
        "does not have. The last column is pycanon's c recomputed from our class counts with "
        "the counts sorted in ascending order (see below).",
        "",
        md_table(heads, rows, "lllr" + "r" * 10),
        "",
        f"Cells equal: {tally.get('equal', 0)} of {total}; recursive c different because pycanon "
        f"sorts ascending: {tally.get('c_ascending', 0)}; c undefined in pycanon (its l is 1): "
        f"{tally.get('c_l_is_1', 0)}; other differences: {tally.get('differ', 0)}.",
        "",
        "## Every difference and its cause",
        "",
        "- **Recursive (c,l)-diversity, c.** Machanavajjhala et al. (2007, Def. 4.4) sort a "
        "class's counts in descending order, r1 >= r2 >= ... >= rm, and ask r1 < c (rl + ... + "
        "rm); ours takes c = floor(max r1 / (rl + ... + rm)) + 1, the smallest integer c that "
        "holds for every class at the table's l. pycanon sorts them with `np.sort` (ascending) "
        "and divides the class's *smallest* count by the sum of all but its l - 1 smallest; the "
        "last column recomputes that reading from our class counts"
        + (" and equals pycanon's c in every case." if not notes else
           ": " + "; ".join(notes) + ".")
        + " pycanon returns NaN for c when the table's l is 1; ours gives the c of (c,1).",
        "- **Entropy l.** pycanon returns `int(min exp(H))`, the integer part; ours keeps the "
        "real value exp(H) (Machanavajjhala et al. 2007, Def. 4.2), so they are compared on the "
        "integer part.",
        "- **Missing QI values.** With input `nan` pycanon puts a record with a missing QI in no "
        "class but counts its sensitive value in the table's distribution (t, δ, β); ours "
        "reproduces that with `summary(where=complete)`. The wildcard rows differ from both by "
        "definition: a record with a missing QI joins every class it could belong to, so the "
        "classes it joins grow (k, l up; t, δ, β usually down) and its own neighbourhood spans "
        "several classes.",
        "- **δ-disclosure.** Both take the largest |ln(q_s / p_s)| over the values present in "
        "the class; Brickell & Shmatikov's inequality read literally is infinite for a class "
        "that lacks a value of the table.",
        "- **Enhanced β.** Both give pycanon's reading, min(basic β, -ln min_s p_s); Cao & "
        "Karras (2012) state enhanced β-likeness as a bound (q_s - p_s) / p_s <= min(β, "
        "-ln p_s) per value rather than as one number.",
        "",
        "Records whose sensitive value is missing are dropped from the table before both sides "
        "see it (pycanon counts them in a class's size but in no value's share, so its class "
        "distributions would not sum to one).",
    ]
    return lines


if __name__ == "__main__":
    main()
