"""The index of `reidrisk assess`'s evidence: one row per results page, what it checks and when.

Reads the pages the assess benchmarks write (``PAGES``) and writes docs/results/assess.md and
assess.json: for each page its claim, its title, the date and load of its run and whether its
JSON records a failed check. No figure is copied: the pages hold them.

Run: ``.venv/bin/python benchmarks/assess.py`` after the scripts it lists.
"""

from __future__ import annotations

import json
import re
import sys

from _harness import REPO, RESULTS_DIR, Results, md_table

PAGES = {
    "assess_check": "k, l-diversity (distinct, entropy, recursive), t-closeness, δ-disclosure and "
                    "β-likeness equal pycanon's on Adult and three other tables with missing values",
    "assess_suda": "SUDA's sample uniques and MSU counts equal the PyPI suda package's; speed at "
                   "10^5 x 10 QIs",
    "assess_speed": "fk / k / l / t on 10^6 records x 10 QIs within 2 s and against pycanon",
    "assess_estimators": "population uniques by Pitman, Zayatz, SNB, Dankar's rule, "
                         "Benedetti-Franconi and paper 000's model against the truth of four "
                         "real tables, 1-50 % samples",
    "assess_scale": "the whole assessment of Adult within 10 s; the memory of a table read in "
                    "chunks, at two sizes 10x apart",
}


def _line(text: str, label: str) -> str:
    match = re.search(rf"^{label}[^:]*:\s*(.+)$", text, flags=re.M)
    return match.group(1).strip() if match else "not stated"


def main() -> None:
    res = Results("assess", quiet="--quiet" in sys.argv)
    rows = []
    for name, claim in PAGES.items():
        page = RESULTS_DIR / f"{name}.md"
        if not page.exists():
            rows.append([f"`{name}.md`", claim, "not run yet", "", ""])
            res.add({"page": name}, "present", 0, "bool")
            continue
        text = page.read_text(encoding="utf-8")
        title = text.splitlines()[0].lstrip("# ").strip()
        date, load = _line(text, "Date"), _line(text, "Load average")
        records = json.loads(page.with_suffix(".json").read_text(encoding="utf-8"))
        res.add({"page": name}, "present", 1, "bool")
        res.add({"page": name}, "points", len(records) - 1, "points")
        rows.append([f"[`{name}.md`]({name}.md)", claim, title, date, load])
    body = [
        "# assess: the evidence",
        "",
        "`reidrisk assess` (docs/design/assess.md) is checked against independent implementations, "
        "against the truth of real tables and for speed by one script each; this index lists their "
        "pages, each with the command, machine and load it ran on. The figures are on the pages.",
        "",
        md_table(["page", "what it checks", "title", "run (UTC)", "load average"], rows),
    ]
    res.write(body, echo=True)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    main()
