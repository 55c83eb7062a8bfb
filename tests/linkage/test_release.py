"""reidrisk.linkage.release: a release and its hidden mapping to the original rows."""

import numpy as np
import pandas as pd
import pytest

from reidrisk.linkage.release import (
    LinkageError,
    Release,
    as_release,
    check_columns,
    derive,
    numeric_matrix,
)

X = pd.DataFrame({"age": [30, 40, 50], "income": [1.0, 2.0, 3.0]})


def test_a_table_is_its_own_identity_release():
    r = as_release(X)
    assert r.n == 3 and r.steps == ()
    np.testing.assert_array_equal(r.truth, [0, 1, 2])
    assert as_release(r) is r
    with pytest.raises(LinkageError, match="expected a pandas DataFrame"):
        as_release([1, 2])


def test_derive_composes_the_mapping():
    # keep rows 2 and 0 of X, then row 1 of that: the original row 0
    r1 = derive(as_release(X), X.iloc[[2, 0]], np.array([2, 0]), "pick", {"n": 2})
    r2 = derive(r1, r1.data.iloc[[1]], np.array([1]), "again", {})
    np.testing.assert_array_equal(r1.truth, [2, 0])
    np.testing.assert_array_equal(r2.truth, [0])
    assert r2.steps == ("pick", "again")
    assert r2.details == ({"step": "pick", "n": 2}, {"step": "again"})
    with pytest.raises(ValueError):
        r2.truth[0] = 1  # read-only


def test_truth_must_have_one_entry_per_row():
    with pytest.raises(LinkageError, match="the true mapping has 2 entries but the release has 3"):
        Release(X, np.array([0, 1]))


def test_check_columns_names_the_absent_and_the_repeated():
    assert check_columns(X, "age", "QI") == ["age"]
    with pytest.raises(LinkageError, match=r"lacks the QI column\(s\) \['zip'\]"):
        check_columns(X, ["age", "zip"], "QI")
    with pytest.raises(LinkageError, match="name a column twice"):
        check_columns(X, ["age", "age"], "QI")


def test_numeric_matrix_parses_text_numbers_and_names_a_bad_value():
    frame = pd.DataFrame({"a": ["1.5", "2"], "b": [3, 4]})
    np.testing.assert_array_equal(numeric_matrix(frame, ["a", "b"]), [[1.5, 3.0], [2.0, 4.0]])
    with pytest.raises(LinkageError, match="column 'a' must be numeric, but row 2 holds 'x'"):
        numeric_matrix(pd.DataFrame({"a": ["1", "x"]}), ["a"])


def test_check_truth_refuses_a_shared_original_row_and_a_shifted_mapping():
    from reidrisk.linkage.release import check_truth

    x = pd.DataFrame({"q": list("abcdefgh"), "s": np.arange(8.0) ** 2})
    y = x.iloc[[2, 4, 6]].reset_index(drop=True)
    np.testing.assert_array_equal(check_truth(x, y, np.array([2, 4, 6]), qi=["q"], sa=["s"]),
                                  [2, 4, 6])
    with pytest.raises(LinkageError, match="released rows 0 and 2 .* original row 2"):
        check_truth(x, y, np.array([2, 4, 2]), qi=["q"], sa=["s"])
    with pytest.raises(LinkageError, match="looks 1-based"):
        check_truth(x, y, np.array([3, 5, 7]), qi=["q"], sa=["s"])
    with pytest.raises(LinkageError, match="outside 0..7 .*1-based"):
        check_truth(x, x, np.arange(1, 9), qi=["q"], sa=["s"])
