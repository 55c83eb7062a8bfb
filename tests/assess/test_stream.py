"""A table read in chunks gives the measures of the table read whole, record for record."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reidrisk.assess import stream
from reidrisk.assess.classes import AssessError, sample_frequencies
from reidrisk.assess.run import assess
from reidrisk.assess.stream import expand, first_rows, read_aggregate, write_records
from reidrisk.assess.table import prepare_table

QI = ["sex", "zip", "marital-status", "age"]


@pytest.fixture
def parts(tmp_path, table):
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(4):
        table.iloc[i * 100:(i + 1) * 100].to_parquet(folder / f"p{i}.parquet")
    return folder


def test_aggregate_counts_every_record(parts, table):
    agg, labels = read_aggregate(parts, QI, ["diagnosis"], "weight", {"age": 10}, chunk_rows=37)
    assert agg.n == len(table) and agg.counts.sum() == len(table)
    assert agg.weights.sum() == pytest.approx(table["weight"].astype(float).sum())
    assert list(labels.columns) == QI + ["diagnosis"] and len(labels) == agg.rows


def test_chunked_measures_equal_the_whole_table(tmp_path, parts, table):
    whole = prepare_table(table, QI, ["diagnosis"], "weight", {"age": 10})
    fk_whole, Fk_whole = sample_frequencies(whole.codes, whole.weights)
    agg, labels = read_aggregate(parts, QI, ["diagnosis"], "weight", {"age": 10}, chunk_rows=37)
    result = assess(agg, model=False)
    assert result.k_anonymity == fk_whole.min()
    out = tmp_path / "records.csv"
    write_records(parts, labels, result.records(), out, bins={"age": 10}, chunk_rows=37)
    records = pd.read_csv(out)
    np.testing.assert_array_equal(records["fk"], fk_whole)
    np.testing.assert_allclose(records["Fk"], Fk_whole)
    direct = assess(whole, model=False)
    assert result.expected_reidentifications == pytest.approx(direct.expected_reidentifications)
    for name in ("prosecutor", "journalist", "marketer"):
        assert result.attackers[name].average == pytest.approx(direct.attackers[name].average)
    assert result.summary()["records_at_risk"] == pytest.approx(
        direct.summary()["records_at_risk"])
    for name in ("pitman", "zayatz", "snb"):
        assert result.uniques[name].in_table == pytest.approx(direct.uniques[name].in_table)


def test_expand_restores_records(parts):
    agg, _ = read_aggregate(parts, QI, ["diagnosis"], bins={"age": 10}, chunk_rows=50)
    records = expand(agg)
    assert records.rows == agg.n and records.counts is None
    np.testing.assert_array_equal(records.codes[first_rows(agg)], agg.codes)


def test_bad_weight_names_its_row_across_chunks(tmp_path, table):
    table.loc[250, "weight"] = "-1"
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    with pytest.raises(AssessError, match="row 251"):
        read_aggregate(path, ["sex"], weight="weight", chunk_rows=100)


def test_parquet_records(tmp_path, parts):
    agg, labels = read_aggregate(parts, ["sex", "zip"], chunk_rows=64)
    result = assess(agg, model=False)
    out = tmp_path / "records.parquet"
    write_records(parts, labels, result.records(), out, "parquet", chunk_rows=64)
    assert len(pd.read_parquet(out)) == 400


def test_model_refused_on_counts(parts):
    agg, _ = read_aggregate(parts, ["sex", "zip"], chunk_rows=64)
    result = assess(agg, fraction=0.5)  # the model needs records: skipped on aggregated rows
    assert result.p_unique is None and "reidrisk" not in result.uniques


def test_large_tables_skip_record_measures(tmp_path, parts, monkeypatch):
    from click.testing import CliRunner

    from reidrisk.cli import cli

    monkeypatch.setattr(stream, "RECORD_LIMIT", 100)
    res = CliRunner().invoke(cli, ["assess", str(parts), "--qi", "sex,zip", "--fraction", "0.5",
                                   "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "model, SUDA and the candidate release are skipped" in res.output
    assert len(pd.read_csv(tmp_path / "out" / "records.csv")) == 400
