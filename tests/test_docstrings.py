"""Docstrings state contracts, not measurements.

Module docstrings say what the module is for and where its equations come from in a screen or less
(``MAX_MODULE_DOCSTRING`` lines). No docstring or comment under src/reidrisk restates a figure that a
benchmark script wrote to docs/results: a measured figure lives on its results page and is linked
by name (``docs/results/<page>.md``), so that a re-run never leaves stale prose behind.

A *figure* is a number on a docs/results page (a Markdown table row or a JSON value) that has a
decimal point or three or more significant digits. A docstring or comment *quotes* one when the
number is followed by a unit of measurement (s, ms, x, %, MB, ...) or preceded, in the same
sentence, by a word of measurement ("measured", "took", "gap", "ratio", "worst", "median", ...).
References to a paper's numbering ("Section 4.1", "Cor. 3.9") and code literals in double
backquotes are not figures.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "reidrisk"
RESULTS = ROOT / "docs" / "results"
MAX_MODULE_DOCSTRING = 40

NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?=[x×](?!\w)|[^\w]|$)"
                    r"(?!\.\d)")
#: a unit right after a number: "1.6x" (a ratio; "500 x 500" is a shape), "14 s", "3 %", ...
UNIT_AFTER = re.compile(r"[x×](?!\w)|\s?(?:s|ms|us|min|h|%|MB|GB|MiB|GiB|kB|KiB|seconds?|"
                        r"minutes?|hours?|times)(?!\w)")
MEASURE_BEFORE = re.compile(r"\b(?:measured|measures|took|takes|gap|ratio|worst|median|faster|"
                            r"slower|speed-?up|fell|rose|JS|reached|reaches)\b", re.IGNORECASE)
NUMBERING_BEFORE = re.compile(r"(?:Section|Sections|Sec\.|Cor\.|Corollary|Prop\.|Proposition|"
                              r"Thm\.?|Thms|Theorem|Lemma|Table|Tables|Fig\.|Figure|eq\.|eqs\.|"
                              r"Eq\.|Algorithm|Alg\.|Definition|Def\.|Example|Remark|Appendix)"
                              r"\s*[\d.,\- and]*$")
CODE_LITERAL = re.compile(r"``[^`]*``")

#: Numbers that appear in a measurement context but are definitions, not measurements:
#: (file relative to src/reidrisk, number as written). Keep each with its reason.
ALLOWED = {
    # HTTP status codes the client retries on
    ("client/__init__.py", "408"), ("client/__init__.py", "425"), ("client/__init__.py", "429"),
    ("client/__init__.py", "500"), ("client/__init__.py", "503"),
    # the request-size limit the service enforces (a setting, not a timing)
    ("service/app.py", "100"),
    # the sleep between polls of the service command (a setting)
    ("service/cli.py", "0.1"),
    # examples of a formatting rule ("120 s" is what the rule avoids writing; "0.0 %" likewise)
    ("collect/model_io.py", "120"), ("story_report.py", "0.0"),
}


def significant(number: str) -> bool:
    """Whether a number is specific enough to be a figure: a decimal point or 3+ significant
    digits."""
    plain = number.replace(",", "")
    return "." in plain or len(plain.lstrip("0")) >= 3


def _values(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _values(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _values(v)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield repr(obj)


def results_figures(results: Path = RESULTS) -> set[str]:
    """Every significant number in docs/results: Markdown table rows and JSON values (commas
    dropped)."""
    found: set[str] = set()
    for page in results.glob("*.md"):
        for line in page.read_text().splitlines():
            if line.lstrip().startswith("|"):
                found.update(m.group(0).replace(",", "") for m in NUMBER.finditer(line)
                             if significant(m.group(0)))
    for page in results.glob("*.json"):
        found.update(v for v in _values(json.loads(page.read_text())) if significant(v))
    return found


def prose(text: str) -> list[tuple[int, str]]:
    """(first line, text) of every docstring and comment of a source: the docstrings of modules,
    classes and functions, and the string statements after an assignment (attribute docstrings)."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            out.append((node.lineno, node.value.value))
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    return out


def quoted_figures(text: str, figures: set[str]) -> list[tuple[int, str, str]]:
    """(line offset, number, context) of every figure of ``figures`` that ``text`` quotes in a
    measurement context."""
    out = []
    masked = CODE_LITERAL.sub(lambda m: " " * len(m.group(0)), text)
    for m in NUMBER.finditer(masked):
        number = m.group(0)
        if not significant(number) or number.replace(",", "") not in figures:
            continue
        before = masked[:m.start()]
        sentence = re.split(r"[.;:!?]\s|\n\s*\n", before)[-1][-80:]
        if NUMBERING_BEFORE.search(before[-40:]):
            continue
        if UNIT_AFTER.match(masked, m.end()) or MEASURE_BEFORE.search(sentence):
            context = text[max(0, m.start() - 50):m.end() + 10].replace("\n", " ")
            out.append((before.count("\n"), number, context))
    return out


def _sources():
    return sorted(SRC.rglob("*.py"))


def test_module_docstrings_fit_on_a_screen():
    long = []
    for path in _sources():
        tree = ast.parse(path.read_text())
        doc = tree.body[0] if tree.body else None
        if (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)):
            lines = doc.end_lineno - doc.lineno + 1
            if lines > MAX_MODULE_DOCSTRING:
                long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not long, (f"module docstrings longer than {MAX_MODULE_DOCSTRING} lines (keep the "
                      "contract; move history and reasoning to docs/design):\n" + "\n".join(long))


def test_no_docstring_or_comment_quotes_a_measured_figure():
    figures = results_figures()
    assert len(figures) > 100, "docs/results has no figures to check against"
    bad = []
    for path in _sources():
        rel = path.relative_to(SRC).as_posix()
        for line, text in prose(path.read_text()):
            for offset, number, context in quoted_figures(text, figures):
                if (rel, number) not in ALLOWED:
                    bad.append(f"src/reidrisk/{rel}:{line + offset}: {number!r} in ...{context}...")
    assert not bad, ("docstrings or comments quote figures measured in docs/results (link the "
                     "page by name instead):\n" + "\n".join(bad))


@pytest.mark.parametrize("text, flagged", [
    ("Fits in 14.2 s on 10^6 reports.", ["14.2"]),
    ("The measured gap is 0.151 at epsilon 1.", ["0.151"]),
    ("Worst cell 1.59x over 174 cells.", ["1.59", "174"]),
    ("A noisy 500 x 500 matrix.", []),
    ("A speed-up of 3.75 times.", ["3.75"]),
    ("Paper 002, Cor. 3.9 and Section 4.1 give the bound.", []),
    ("The default ``threshold=0.151`` is a setting.", []),
    ("Defaults to 0.151 when unset.", []),
    ("The ratio is 2.5 in the paper's example.", []),  # 2.5 is not a figure of docs/results here
])
def test_the_figure_check_catches_a_quoted_figure(text, flagged):
    figures = {"14.2", "0.151", "1.59", "174", "3.75", "3.9", "4.1"}
    assert [n for _, n, _ in quoted_figures(text, figures)] == flagged


def test_the_figures_are_read_from_tables_and_json(tmp_path):
    (tmp_path / "a.md").write_text("Intro 9.99 s.\n\n| cell | ratio |\n|---|---|\n| x | 1.234 |\n"
                                   "| y | 12,345 |\n| z | 7 |\n")
    (tmp_path / "a.json").write_text(json.dumps([{"value": 0.5, "n": 42, "m": 4200}]))
    assert results_figures(tmp_path) == {"1.234", "12345", "0.5", "4200"}
