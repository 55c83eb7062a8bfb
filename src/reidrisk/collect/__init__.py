"""Collection under local differential privacy with missing values (paper 004), end to end.

Design: docs/design/collect.md.

Clients randomize each record under a ``Protocol`` (the paper's even budget split over all g
attributes, or attribute sampling: k attributes per person with epsilon / k each,
``choose_attributes_per_person``);
the server reads the reports (``read_reports``; CSV or Parquet with metadata, validated), fits the
model (``CollectPipeline().fit`` -> ``CollectModel``: marginals, pair tables, Gaussian copula) and
answers contingency-table queries or generates synthetic records. ``CollectModel.save``/``load``
use a versioned JSON format. The compared methods of the paper (and Indep, Uniform and the
true-pairs reference) are in ``reidrisk.collect.baselines``; the command line is
``reidrisk collect``.
"""

from typing import TYPE_CHECKING

from reidrisk._compat import warn_renamed
from reidrisk._lazy import lazy_exports

if TYPE_CHECKING:  # the names below load on first use (reidrisk._lazy)
    from reidrisk.collect.model_io import (
        MODEL_FORMAT,
        MODEL_VERSION,
        ModelFileError,
        load_model,
    )
    from reidrisk.collect.pipeline import (
        CollectError,
        CollectModel,
        CollectPipeline,
        CollectWarning,
        FitReport,
        fit,
    )
    from reidrisk.collect.protocol import (
        Protocol,
        ProtocolError,
        SamplingChoice,
        choose_attributes_per_person,
        choose_k,
        expected_pair_errors,
        pair_coverage,
        variance_factor,
    )
    from reidrisk.collect.reports_io import (
        CollectedReports,
        ReportsFileError,
        read_reports,
        write_reports,
    )

__all__ = [
    "MODEL_FORMAT",
    "MODEL_VERSION",
    "CollectError",
    "CollectModel",
    "CollectPipeline",
    "CollectWarning",
    "CollectedReports",
    "FitReport",
    "ModelFileError",
    "Protocol",
    "ProtocolError",
    "ReportsFileError",
    "SamplingChoice",
    "choose_attributes_per_person",
    "choose_k",
    "expected_pair_errors",
    "fit",
    "load_model",
    "pair_coverage",
    "read_reports",
    "variance_factor",
    "write_reports",
]


_exported, __dir__ = lazy_exports(__name__)


def __getattr__(name: str):
    if name == "KChoice":  # former name of SamplingChoice
        warn_renamed("class", "KChoice", "SamplingChoice")
        return _exported("SamplingChoice")
    return _exported(name)
