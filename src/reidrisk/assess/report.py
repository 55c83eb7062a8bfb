"""The assessment as files: ``records.csv`` (or ``.parquet``), ``summary.json`` and ``report.html``.

``write_outputs`` writes the three together (all or none: ``reidrisk.data.io.atomic_write_files``).
The HTML page is self-contained (no script, no remote asset), says what every number is and what a
safe value is, and reads on a phone (tables scroll inside their own box, text wraps).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from reidrisk.assess.run import Assessment
from reidrisk.data.io import atomic_write_files

RECORD_FORMATS = ("csv", "parquet")

MISSING_NOTE = (
    "A missing QI value matches any value: a record with a missing age matches the records of "
    "every age that agree on its other QIs (reidrisk's one rule, as sdcMicro's freqCalc counts by "
    "default, alpha = 1). ARX instead treats a missing value as a value of its own "
    "(--missing value here); pycanon's pandas grouping drops rows with missing QIs."
)


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-ready")


def _clean(value):
    """NaN and infinities as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def summary_json(result: Assessment) -> str:
    """``summary.json``'s text.

    Parameters
    ----------
    result : Assessment
        The assessment.

    Returns
    -------
    str
        Indented JSON, NaN and infinities written as null.
    """
    return json.dumps(_clean(result.summary()), indent=2, default=_json_default) + "\n"


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:60rem;margin:0 auto;
padding:1rem;line-height:1.45;color:#1b1b1b}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.bad{color:#a00;font-weight:600}.ok{color:#060;font-weight:600}
.note{color:#444;font-size:.9rem}code{overflow-wrap:anywhere}p,li{overflow-wrap:anywhere}
"""


def _verdict(ok: bool) -> str:
    return '<span class="ok">safe</span>' if ok else '<span class="bad">at risk</span>'


def report_html(result: Assessment) -> str:
    """The report page's HTML.

    Parameters
    ----------
    result : Assessment
        The assessment.

    Returns
    -------
    str
        A self-contained page (inline style, no script, every name escaped).
    """
    s = result.summary()
    t = result.threshold
    safe_k = math.ceil(1 / t)
    e = html.escape
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>Disclosure risk of {e(s['table'])}</title><style>{CSS}</style></head><body>",
             f"<h1>Disclosure risk of {e(s['table'])}</h1>"]
    pop = (f"the table is taken to be the whole population (N = {_fmt(s['population'])}); give "
           "--population or --weight if it is a sample" if s["population_assumed_census"] else
           f"a sample of a population of {_fmt(s['population'])}")
    parts.append(
        f"<p>{_fmt(s['records'])} records, {len(s['quasi_identifiers'])} quasi-identifiers "
        f"(<code>{e(', '.join(s['quasi_identifiers']))}</code>: what an attacker may know), "
        f"sensitive attributes: <code>{e(', '.join(s['sensitive_attributes']) or 'none')}</code>; "
        f"{pop}. A record is <em>at risk</em> when the probability of re-identifying it exceeds "
        f"{_fmt(t)} (1/{safe_k}: fewer than {safe_k} people share its QI values).</p>")

    parts.append("<h2>The table at a glance</h2>")
    rows = [
        ["k-anonymity", _fmt(s["k_anonymity"]),
         f"the smallest number of records sharing a record's QI values; safe: at least {safe_k}",
         _verdict(s["k_anonymity"] >= safe_k)],
        ["sample uniques", _fmt(s["sample_uniques"]), "records no other record matches", ""],
        ["records at risk", _pct(s["records_at_risk"]),
         f"share of records whose individual risk exceeds {_fmt(t)}; safe: 0", _verdict(
             s["records_at_risk"] == 0)],
        ["expected re-identifications", _fmt(s["expected_reidentifications"]),
         "the sum of the individual risks (sdcMicro's global risk): how many records an attacker "
         "matching every record against the population is expected to identify rightly", ""],
    ]
    for name in ("prosecutor", "journalist", "marketer"):
        a = s[name]
        rows.append([f"{name} risk", f"highest {_fmt(a['highest'])}, average {_fmt(a['average'])}, "
                     f"{_pct(a['records_at_risk'])} above {_fmt(t)}", e(a["meaning"]),
                     _verdict(a["highest"] <= t)])
    parts.append(_table(["measure", "value", "what it means", "verdict"], rows))

    parts.append("<h2>Population uniques</h2><p>How many of the table's records are unique in "
                 "the population, i.e. re-identifiable with certainty by anyone who knows their QIs. "
                 "Every estimator sees the same table; where they disagree, their assumptions "
                 "differ.</p>")
    urows = [[e(name), _fmt(u["in_table"]), _fmt(u["in_population"]), e(u["assumes"]),
              e(u["note"]) if u["valid"] else '<span class="bad">failed</span> ' + e(u["note"])]
             for name, u in s["population_uniques"].items()]
    parts.append(_table(["estimator", "uniques in the table", "in the population", "assumes",
                         "note"], urows))

    for extra in result.extras.values():
        block = extra.get("html")
        if block:
            parts.append(block)

    parts.append("<h2>What lowers the risk</h2><p>Each row was measured on this table: the "
                 "expected re-identifications, the k-anonymity and the share of records at risk "
                 "after the action (best first).</p>")
    orow = [[e(o["how"]), _fmt(o["expected_reidentifications"]), _fmt(o["k_anonymity"]),
             _pct(o["records_at_risk"])] for o in s["options"][:15]]
    if orow:
        parts.append(_table(["action", "expected re-identifications", "k-anonymity",
                             "records at risk"], [["as it is", _fmt(
                                 s["expected_reidentifications"]), _fmt(s["k_anonymity"]),
                                 _pct(s["records_at_risk"])]] + orow))
    parts.append("<h2>The riskiest records</h2><p>Row numbers count data rows from 1. "
                 "<em>Drivers</em>: the QIs whose removal alone would make the record match "
                 "the most others.</p>")
    frame = result.records()
    top = frame.sort_values("risk", ascending=False, kind="stable").head(10)
    rrows = [[str(i + 1), _fmt(int(r["fk"])), _fmt(r["risk"]),
              _fmt(r["p_unique"]) if "p_unique" in r else "n/a", e(str(r["drivers"]))]
             for i, r in top.iterrows()]
    parts.append(_table(["row", "fk", "individual risk", "P(unique in population)", "drivers"],
                        rrows))
    parts.append(f"<h2>Missing values</h2><p class='note'>{e(MISSING_NOTE)} This table: "
                 f"{_fmt(s['missing_qi_records'])} records have a missing QI; rule used: "
                 f"<code>{e(s['missing_values'])}</code>.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_outputs(result: Assessment, folder: str | Path, record_format: str = "csv",
                  write_records: Callable[[Path], None] | None = None) -> list[Path]:
    """Write ``records.<format>``, ``summary.json`` and ``report.html`` into ``folder``.

    Parameters
    ----------
    result : Assessment
        The assessment.
    folder : str or Path
        Created when missing.
    record_format : {"csv", "parquet"}
        The per-record file's format.
    write_records : callable, optional
        ``write_records(tmp)`` writes the per-record file (a table read in chunks writes it by a
        second pass, ``reidrisk.assess.stream.write_records``); default: ``result.records()``.

    Returns
    -------
    list of Path
        The files written (all three, or none on a failure).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    records = folder / f"records.{record_format}"

    def from_result(tmp: Path) -> None:
        frame = result.records()
        if record_format == "parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)

    text, page = summary_json(result), report_html(result)
    files = [(records, write_records or from_result),
             (folder / "summary.json", lambda tmp: Path(tmp).write_text(text, encoding="utf-8")),
             (folder / "report.html", lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))]
    atomic_write_files(files)
    return [path for path, _ in files]


__all__ = ["MISSING_NOTE", "RECORD_FORMATS", "report_html", "summary_json", "write_outputs"]
