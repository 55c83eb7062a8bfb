"""Paper 001's worked examples (Tables 2, 3, 4, 10, 11)."""

import pandas as pd
import pytest

QI = ["QI1", "QI2", "QI3"]
SA = ["SA1", "SA2"]


def table(qi3, sa1, sa2):
    return pd.DataFrame({"QI1": [2, 2, 1, 1], "QI2": [1, 1, 1, 1], "QI3": qi3,
                         "SA1": [float(v) for v in sa1], "SA2": [float(v) for v in sa2]})


@pytest.fixture
def X():
    """Table 2: the sample original data X."""
    return table([1, 1, 2, 2], [100, 200, 300, 400], [100, 400, 200, 500])


@pytest.fixture
def B():
    """Table 3: X with noise on the SA columns."""
    return table([1, 1, 2, 2], [110, 220, 280, 390], [90, 390, 210, 520])


@pytest.fixture
def D():
    """Table 4: X with QI3 unified to 1."""
    return table([1, 1, 1, 1], [100, 200, 300, 400], [100, 400, 200, 500])
