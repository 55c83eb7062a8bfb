"""The benchmarks and their results pages keep the layout benchmarks/README.md promises: every
script is listed there, every results page has its JSON, and the JSON is the run record(s) then
one object per measured point with its parameters, metric, value and unit."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
RESULTS = ROOT / "docs" / "results"


def test_every_benchmark_script_is_listed_in_the_readme():
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    assert scripts
    missing = [s for s in scripts if f"`{s}`" not in readme]
    assert not missing, f"benchmarks/README.md does not list {missing}: add a row to its table"


def test_every_results_page_has_its_json_and_says_how_it_was_made():
    pages = sorted(RESULTS.glob("*.md"))
    assert pages
    for page in pages:
        assert page.with_suffix(".json").exists(), f"{page.name} has no {page.stem}.json"
        text = page.read_text(encoding="utf-8")
        for what in ("Command", "Load average"):
            assert what in text, f"{page.name} does not state its {what.lower()}"
    for data in RESULTS.glob("*.json"):
        assert data.with_suffix(".md").exists(), f"{data.name} has no {data.stem}.md"


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_results_json_is_the_run_record_then_one_object_per_point(path):
    records = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(records, list) and records, path.name
    first = records[0]
    assert first.get("record") == "machine" and first.get("command"), (
        f"{path.name}: the first object must be the run record (machine, command)")
    points = [r for r in records if not str(r.get("record", "")).startswith("machine")]
    assert points, f"{path.name} holds no measured point"
    for r in points:
        assert isinstance(r.get("params"), dict) and all(
            k in r for k in ("benchmark", "metric", "value", "unit")), (path.name, r)
