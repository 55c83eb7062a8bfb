"""The extras ``reidrisk assess`` runs by default."""

from __future__ import annotations

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
    assert default_extras(0) == {}
