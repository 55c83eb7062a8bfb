"""Generalized releases as they are published (issue 26, point 1): the QI attacks' rates on one
k-anonymous release of UCI Adult written four ways.

The release: ``reidrisk linkage anonymize`` on the first ``--rows`` rows of Adult (train; default
5,000, where k = 5 recodes age into ranges, which it leaves alone on all 32,561) with QI = age, sex,
race, marital-status, education, workclass, native-country and SA = fnlwgt, capital-gain,
capital-loss, hours-per-week; pipeline k_anonymize (k = 5) -> additive noise (0.1 sd) -> shuffle.
It is then evaluated (``reidrisk linkage evaluate --json``, seed 0) as

- **by hand**: the release as written, against an original prepared by hand (each QI value
  replaced by the release's label covering it, with this script's own reading of ``lo-hi`` and
  ``a|b``), so that plain equality matches;
- **as written**: the release's ``lo-hi`` ranges and ``a|b`` sets against the raw original;
- **ranges [lo,hi)**: the same with every range rewritten as ``[lo,hi+1)``;
- **coded + map**: every range replaced by its low end, every set by a code ``merged<i>``,
  with the recode map (``--recode``, CSV column,value,code) of those codes;
- **coded, no map**: the coded release without the map (what a reader without it gets).

    .venv/bin/python benchmarks/linkage_generalized.py [--rows 5000]

Writes docs/results/linkage_generalized.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Results, md_table  # noqa: E402

QI = ["age", "sex", "race", "marital-status", "education", "workclass", "native-country"]
SA = ["fnlwgt", "capital-gain", "capital-loss", "hours-per-week"]
ATTACKS = ["E1", "E2", "EUC1", "EUC2", "assign"]
VARIANTS = ["by hand", "as written", "ranges [lo,hi)", "coded + map", "coded, no map"]
PIPELINE = f"""qi = {json.dumps(QI)}
sa = {json.dumps(SA)}

[[steps]]
step = "k_anonymize"
k = 5

[[steps]]
step = "noise"
scale = 0.1

[[steps]]
step = "shuffle"
"""
RANGE = re.compile(r"^(-?\d+)-(-?\d+)$")


def run(*args) -> str:
    from click.testing import CliRunner

    from reidrisk.cli import cli

    res = CliRunner().invoke(cli, ["linkage", *map(str, args)])
    if res.exit_code != 0:
        raise SystemExit(f"reidrisk linkage {args[0]} failed: {res.output}")
    return res.stdout


def rewrite(release: pd.DataFrame, original: pd.DataFrame):
    """(original by hand, ranges as [lo,hi), coded release, recode map rows, labels per column)."""
    hand, brackets, coded = original.copy(), release.copy(), release.copy()
    recode, labels = [], {}
    for c in QI:
        present = set(original[c].astype(str))
        own, ranges, codes = {}, {}, {}
        for i, lab in enumerate(sorted(set(release[c].astype(str)) - present)):
            m = RANGE.match(lab)
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                own.update({str(v): lab for v in range(lo, hi + 1)})
                ranges[lab] = f"[{lo},{hi + 1})"
                codes[lab] = str(lo)
            else:
                own.update({v: lab for v in lab.split("|")})
                codes[lab] = f"merged{i}"
        labels[c] = len(codes)
        hand[c] = original[c].astype(str).map(lambda v, own=own: own.get(v, v))
        brackets[c] = release[c].astype(str).map(lambda v, r=ranges: r.get(v, v))
        coded[c] = release[c].astype(str).map(lambda v, k=codes: k.get(v, v))
        recode += [(c, lab, code) for lab, code in codes.items()]
    return hand, brackets, coded, pd.DataFrame(recode, columns=["column", "value", "code"]), labels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=5000, help="first N rows of Adult (0: all)")
    args = ap.parse_args()
    from reidrisk.data.adult import load_adult

    res = Results("linkage_generalized")
    adult = load_adult("train")
    x = pd.DataFrame({c: adult[c].fillna("?").astype(str) for c in QI if c != "age"})
    x.insert(0, "age", adult["age"].astype(int))
    for c in SA:
        x[c] = adult[c].astype(float)
    if args.rows:
        x = x.iloc[:args.rows].reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        x.to_csv(d / "x.csv", index=False)
        (d / "pipe.toml").write_text(PIPELINE)
        run("anonymize", "--config", d / "pipe.toml", "--input", d / "x.csv", "--output",
            d / "rel.csv", "--truth-output", d / "truth.csv", "--seed", 1)
        rel = pd.read_csv(d / "rel.csv", dtype=str, keep_default_na=False)
        hand, brackets, coded, recode, labels = rewrite(rel, pd.read_csv(d / "x.csv", dtype=str,
                                                                         keep_default_na=False))
        hand.to_csv(d / "hand.csv", index=False)
        brackets.to_csv(d / "brackets.csv", index=False)
        coded.to_csv(d / "coded.csv", index=False)
        recode.to_csv(d / "recode.csv", index=False)
        common = ["--qi", ",".join(QI), "--sa", ",".join(SA), "--truth", d / "truth.csv", "--json",
                  "--seed", 0]
        cases = {"by hand": ("hand.csv", "rel.csv", []),
                 "as written": ("x.csv", "rel.csv", []),
                 "ranges [lo,hi)": ("x.csv", "brackets.csv", []),
                 "coded + map": ("x.csv", "coded.csv", ["--recode", d / "recode.csv"]),
                 "coded, no map": ("x.csv", "coded.csv", [])}
        rates: dict[str, dict[str, float]] = {}
        notes: dict[str, list[str]] = {}
        for name, (orig, release, extra) in cases.items():
            card = json.loads(run("evaluate", "--original", d / orig, "--release", d / release,
                                  *common, *extra))
            rates[name] = {r["attack"]: r["rate"] for r in card["rates"] if r["attack"] in ATTACKS}
            notes[name] = card["notes"]
            for a, v in rates[name].items():
                res.add({"variant": name, "attack": a}, "rate", v, "share")
    n_rel = len(rel)
    rows = [[a] + [f"{rates[v][a]:.4f}" for v in VARIANTS] for a in ATTACKS]
    same = all(rates[v][a] == rates["by hand"][a] for a in ATTACKS
               for v in ("as written", "ranges [lo,hi)", "coded + map"))
    warned = [n for n in notes["coded, no map"] if "match no original row" in n]
    body = [
        "# Generalized releases: ranges, sets and recode maps (UCI Adult)",
        "",
        f"One release of UCI Adult ({len(x):,} rows; {n_rel:,} released after suppression), "
        "made by `reidrisk linkage anonymize` (k_anonymize k = 5 -> noise 0.1 sd -> shuffle) with "
        f"QI = {', '.join(QI)} and SA = {', '.join(SA)}; the recoding merged values into "
        + ", ".join(f"{k} label(s) in {c}" for c, k in labels.items() if k) + ". "
        "Each column is the share of released rows `reidrisk linkage evaluate` (seed 0) links to "
        "their true row when the release is read as described in the script's docstring.",
        "",
        md_table(["attack", *VARIANTS], rows),
        "",
        ("The three readings of the generalized release (as written, ranges rewritten as "
         "`[lo,hi)`, coded through the recode map) reach exactly the rates of the release "
         "prepared by hand, for every QI attack." if same else
         "**The readings differ from the release prepared by hand** (see the table)."),
        "",
        "Without the map the coded release's QI match nothing; `evaluate` warns: "
        + (f"\"{warned[0]}\"" if warned else "(no warning was printed)"),
        "",
    ]
    res.write(body, echo=True)


if __name__ == "__main__":
    main()
