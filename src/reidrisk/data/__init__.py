"""Data: table files, the shared real data sets, synthetic populations, missingness, exact tables.

- ``paths``: where the shared data sets live (``shared_data_dir``, ``DatasetNotFound``).
- ``io``: CSV/Parquet tables and encoded data (``read_table``, ``write_table``, ``read_encoded``).
- ``adult``, ``communities``: the UCI data sets used by papers 000 and 004, with their schemas.
- ``synthetic``: populations drawn through a latent Gaussian with known structure.
- ``missing``: MCAR and MAR missingness injection (paper 004, Sections 5-6).
- ``tables``: exact c-way contingency tables (the ground truth of paper 004's evaluation).
"""

from reidrisk.data.adult import adult_schema, load_adult, load_adult_encoded
from reidrisk.data.communities import (
    communities_schema,
    load_communities,
    load_communities_encoded,
)
from reidrisk.data.io import (
    EncodedData,
    TableError,
    read_encoded,
    read_table,
    write_encoded,
    write_table,
)
from reidrisk.data.missing import mar, mar_probabilities, mcar
from reidrisk.data.paths import DatasetNotFound, require, shared_data_dir
from reidrisk.data.synthetic import Population, make_binary_population, make_population
from reidrisk.data.tables import contingency

__all__ = [
    "DatasetNotFound", "EncodedData", "Population", "TableError", "adult_schema",
    "communities_schema", "contingency", "load_adult", "load_adult_encoded", "load_communities",
    "load_communities_encoded", "make_binary_population", "make_population", "mar",
    "mar_probabilities", "mcar", "read_encoded", "read_table", "require", "shared_data_dir",
    "write_encoded", "write_table",
]
