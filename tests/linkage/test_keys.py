"""reidrisk.linkage._keys: integer keys equal exactly when the QI vectors are equal."""

import numpy as np
import pandas as pd

from reidrisk.linkage._keys import canonical, column_codes, combine, group_ids, qi_keys


def test_column_codes_keep_missing_as_a_value():
    codes, size = column_codes(pd.Series(["a", None, "b", "a", None]))
    assert size == 3
    np.testing.assert_array_equal(codes, [0, 1, 2, 0, 1])


def test_combine_is_mixed_radix():
    # codes (1, 2) with sizes (2, 3) -> 1 * 3 + 2 = 5
    key = combine([np.array([1, 0, 1]), np.array([2, 2, 0])], [2, 3], 3)
    np.testing.assert_array_equal(key, [5, 2, 3])


def test_combine_stays_injective_beyond_int64():
    # 8 columns of 2^10 values each need 2^80 radix positions: refactorized on the way
    rng = np.random.default_rng(0)
    cols = [rng.integers(0, 1024, 50) for _ in range(8)]
    key = combine(cols, [1024] * 8, 50)
    rows = {tuple(int(c[i]) for c in cols) for i in range(50)}
    assert len(set(key.tolist())) == len(rows)


def test_shared_code_book_across_frames():
    x = pd.DataFrame({"age": [30, 40, 30], "sex": ["f", "m", "f"]})
    y = pd.DataFrame({"age": [40, 30], "sex": ["m", "m"]})
    kx, ky = qi_keys(x, y, qi=["age", "sex"])
    assert kx[0] == kx[2] != kx[1]
    assert ky[0] == kx[1] and ky[1] not in kx  # (40, m) shared; (30, m) only in y


def test_group_ids_are_equivalence_classes():
    frame = pd.DataFrame({"zip": [1, 1, 2, 2, 1], "age": [5, 6, 5, 5, 5]})
    ids = group_ids(frame, ["zip", "age"])
    assert ids[0] == ids[4] and ids[2] == ids[3]
    assert len(set(ids.tolist())) == 3


def test_numbers_and_padded_text_are_one_value_across_frames():
    # a Parquet original holds 20000 (int) and 2.5; a CSV release writes "20000.0", " 20000", "2.50"
    x = pd.DataFrame({"limit": [20000, 30000, 2.5], "sex": ["f", "m", "f"]})
    y = pd.DataFrame({"limit": ["20000.0", " 20000", "2.50", "3e4"], "sex": ["f", "f ", "f", "m"]})
    kx, ky = qi_keys(x, y, qi=["limit", "sex"])
    np.testing.assert_array_equal(ky, [kx[0], kx[0], kx[2], kx[1]])


def test_canonical_keeps_text_and_missing_values():
    assert [canonical(v) for v in ["a ", " 007", "1.0e0", "inf", True]] == ["a", "7", "1", "inf",
                                                                           "True"]
    assert canonical(None) is None and canonical(float("nan")) != canonical(float("nan"))


def test_large_integer_codes_stay_distinct():
    a, b = 12345678901234567, 12345678901234568       # equal as float64
    assert canonical(a) != canonical(b) and canonical(str(b)) == canonical(b) == str(b)
    assert canonical("+007") == canonical(7.0) == "7"
