"""The output files: all three or none, JSON without NaN, a page that names every measure."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from reidrisk.assess.report import report_html, summary_json, write_outputs
from reidrisk.assess.run import assess
from reidrisk.assess.table import prepare_table


@pytest.fixture
def result(table):
    return assess(prepare_table(table, ["sex", "zip", "marital-status"], ["diagnosis"]),
                  fraction=0.5, options=True)


def test_files(tmp_path, result):
    written = write_outputs(result, tmp_path / "out")
    assert sorted(p.name for p in written) == ["records.csv", "report.html", "summary.json"]
    records = pd.read_csv(tmp_path / "out" / "records.csv")
    assert len(records) == result.n and {"fk", "p_unique"} <= set(records.columns)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for key in ("k_anonymity", "prosecutor", "journalist", "marketer",
                "expected_reidentifications", "population_uniques"):
        assert key in summary


def test_parquet_records(tmp_path, result):
    write_outputs(result, tmp_path, "parquet")
    assert len(pd.read_parquet(tmp_path / "records.parquet")) == result.n


def test_json_has_no_nan(result):
    text = summary_json(result)
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)


def test_page_explains_and_escapes(table):
    table = table.rename(columns={"zip": "<zip>"})
    res = assess(prepare_table(table, ["sex", "<zip>"]), options=True)
    page = report_html(res)
    assert "&lt;zip&gt;" in page and "<zip>" not in page
    for words in ("k-anonymity", "safe", "prosecutor risk", "journalist risk", "marketer risk",
                  "Population uniques", "What lowers the risk", "Missing values",
                  "whole population"):
        assert words in page


def test_failed_write_leaves_nothing(tmp_path, result, monkeypatch):
    import reidrisk.assess.report as report

    def broken(res):
        raise OSError("disk full")

    monkeypatch.setattr(report, "report_html", broken)
    with pytest.raises(OSError):
        write_outputs(result, tmp_path / "out")
    assert not any((tmp_path / "out").glob("*.*"))
