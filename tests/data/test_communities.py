import numpy as np
import pandas as pd
import pytest

from reidrisk.data.communities import (
    GOALS,
    IDENTIFIERS,
    communities_schema,
    load_communities,
    load_communities_encoded,
    predictive_columns,
)
from reidrisk.data.paths import DatasetNotFound
from reidrisk.schema import MISSING


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    try:
        return load_communities()
    except DatasetNotFound as exc:
        pytest.skip(str(exc))


def test_loader_matches_provenance(frame):
    assert frame.shape == (2_215, 147)
    assert list(frame.columns[:5]) == list(IDENTIFIERS) and list(frame.columns[-18:]) == list(GOALS)
    assert int(frame.isna().sum().sum()) == 44_592
    assert int(frame.isna().any(axis=1).sum()) == 2_104
    assert int(frame["LemasSwornFT"].isna().sum()) == 1_872
    assert frame["population"].dtype == np.float64


def test_schema_keeps_the_papers_102_attributes(frame):
    assert len(predictive_columns(frame)) == 124
    schema = communities_schema(frame)
    assert len(schema) == 102
    assert not set(schema.names) & (set(IDENTIFIERS) | set(GOALS))
    assert not any(name.startswith("Lemas") and name != "LemasPctOfficDrugUn"
                   for name in schema.names)
    assert ((schema.sizes >= 2) & (schema.sizes <= 5)).all()
    assert len(communities_schema(frame, max_missing=1.0)) == 124
    assert len(communities_schema(frame, include_goals=True)) == 102 + 18  # goals < 11 % missing


def test_encoded_codes_follow_quantile_bins(frame):
    schema, codes = load_communities_encoded()
    assert codes.shape == (2_215, 102)
    np.testing.assert_array_equal(codes == MISSING, frame[schema.names].isna().to_numpy())
    j = schema.index("medIncome")  # continuous: quintiles hold ~1/5 of the rows each
    counts = np.bincount(codes[:, j], minlength=5)
    assert schema.sizes[j] == 5 and counts.min() >= 2_215 // 5 - 2
    assert load_communities_encoded(bins=3).schema.sizes.max() == 3
