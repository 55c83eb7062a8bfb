"""The extras ``reidrisk assess`` runs by default."""

from __future__ import annotations

import pytest

from reidrisk.assess.extras import default_extras


def test_default_extras_are_callables():
    for extra in default_extras(2).values():
        assert callable(extra)


def _prepared(table):
    from reidrisk.assess.table import prepare_table

    return prepare_table(table, ["sex", "zip", "marital-status", "age"], bins={"age": 10})


def test_suda_extra_gives_each_record_its_suda(table):
    import numpy as np

    from reidrisk.assess.classes import sample_frequencies
    from reidrisk.assess.extras import suda_extra
    from reidrisk.assess.suda import suda

    prepared = _prepared(table)
    codes = prepared.codes.astype(np.int64)
    fk, _ = sample_frequencies(codes)
    out = suda_extra(3)(prepared, fk, "wildcard")
    want = suda(codes, 3)
    np.testing.assert_array_equal(out["records"]["suda_score"], want.score)
    np.testing.assert_array_equal(out["records"]["dis_suda_score"], want.dis_score)
    for k in range(3):
        np.testing.assert_array_equal(out["records"][f"msu_{k + 1}"], want.msu_counts[:, k])
    s = out["summary"]["suda"]
    assert s["records_with_msu"] == int(want.msu_counts.any(axis=1).sum()) > 0
    assert list(s["contribution_percent"]) == prepared.qis
    assert "Special uniques" in out["html"]


def test_suda_extra_on_an_aggregated_table_equals_the_records(table):
    import dataclasses

    import numpy as np

    from reidrisk.assess.classes import DistinctRows, sample_frequencies
    from reidrisk.assess.extras import suda_extra

    prepared = _prepared(table)
    codes = prepared.codes.astype(np.int64)
    distinct = DistinctRows.of(codes)
    counts = np.bincount(distinct.inverse)
    agg = dataclasses.replace(prepared, codes=distinct.rows.astype(np.int32), weights=None,
                              counts=counts, sensitive=())
    fk_rows = np.rint(sample_frequencies(distinct.rows, counts.astype(float))[1])
    per_row = suda_extra(4)(agg, fk_rows, "wildcard")["records"]
    per_record = suda_extra(4)(prepared, sample_frequencies(codes)[0], "wildcard")["records"]
    # equal, the DIS-SUDA sum taken in another order aside
    np.testing.assert_allclose(per_row.to_numpy()[distinct.inverse], per_record.to_numpy(),
                               rtol=1e-12, atol=0)


def test_assess_carries_the_suda_columns_and_summary(table):
    from reidrisk.assess.run import assess

    result = assess(_prepared(table), options=False, extras=default_extras(2))
    frame = result.records()
    assert {"suda_score", "dis_suda_score", "msu_1", "msu_2"} <= set(frame.columns)
    assert result.summary()["suda"]["max_msu_size"] == 2
    assert list(default_extras(0)) == ["sensitive attributes"]  # no SUDA


def test_diversity_of_a_table_and_of_its_aggregate_agree(table, tmp_path):
    import numpy as np

    from reidrisk.assess.diversity import diversity
    from reidrisk.assess.extras import diversity_extra
    from reidrisk.assess.stream import read_aggregate
    from reidrisk.assess.table import prepare_table

    prepared = prepare_table(table, ["sex", "zip", "marital-status"], ["diagnosis", "income"])
    out = diversity_extra()(prepared, None, "wildcard")
    direct = diversity(prepared.codes, prepared.sensitive[0].codes,
                       len(prepared.sensitive[0].categories)).summary()
    assert out["summary"]["diversity"]["diagnosis"]["distinct_l"] == direct.distinct_l
    assert out["summary"]["l_diversity"] == min(
        f["distinct_l"] for f in out["summary"]["diversity"].values())
    np.testing.assert_array_equal(out["records"]["l_diagnosis"],
                                  diversity(prepared.codes, prepared.sensitive[0].codes, 4)
                                  .distinct_l)
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    agg, _ = read_aggregate(path, ["sex", "zip", "marital-status"], ["diagnosis", "income"],
                            chunk_rows=97)
    again = diversity_extra()(agg, None, "wildcard")["summary"]
    for key in ("l_diversity", "entropy_l_diversity", "t_closeness", "delta_disclosure",
                "beta_likeness"):
        assert again[key] == pytest.approx(out["summary"][key])


def test_no_sensitive_attribute_gives_null_figures(table):
    from reidrisk.assess.extras import DIVERSITY_KEYS, diversity_extra
    from reidrisk.assess.table import prepare_table

    out = diversity_extra()(prepare_table(table, ["sex"]), None, "wildcard")
    assert all(out["summary"][k] is None for k in DIVERSITY_KEYS)
