"""A small table with missing QIs, weights and sensitive attributes for the assess tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def people(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(str),
        "sex": rng.choice(["F", "M"], n),
        "zip": rng.choice([f"100{i}" for i in range(8)], n),
        "marital-status": rng.choice(["single", "married", "widowed"], n, p=[0.4, 0.5, 0.1]),
        "diagnosis": rng.choice(["flu", "asthma", "diabetes", "none"], n),
        "income": rng.integers(1, 9, n).astype(str),
        "weight": rng.uniform(5, 15, n).round(2).astype(str),
        "record_id": np.arange(n).astype(str),
    })
    frame.loc[rng.random(n) < 0.05, "zip"] = ""
    frame.loc[rng.random(n) < 0.05, "sex"] = "?"
    return frame


@pytest.fixture
def table() -> pd.DataFrame:
    return people()


@pytest.fixture
def table_csv(tmp_path, table):
    path = tmp_path / "people.csv"
    table.to_csv(path, index=False)
    return path
