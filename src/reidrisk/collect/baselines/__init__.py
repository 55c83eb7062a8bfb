"""The methods paper 004 compares against (Section 5), two it omits, and one reference.

Design: docs/design/collect.md#baselines.

Every method has the same life cycle (``reidrisk.collect.baselines.base.Method``): its client
protocol for a budget split (``protocol(epsilon, attributes_per_person)``), ``fit(reports)`` and
``table(cols)``.

=====================  ===========================================================================
``Proposed``           paper 004 (``CollectPipeline``)
``ORapporCompleteCase``  O-RAPPOR [3], complete reports, Kronecker inversion + projection
``S2MbCompleteCase``   S2Mb [4], complete reports, Kronecker EM
``MDNCompleteCase``    MDN [23] (epsilon-LDP negative survey), complete reports, inversion + projection
``PDEETECompleteCase`` PDE/ETE [5] (Laplace on the category index), complete reports, exact EM
``DFCopula``           the copula on the raw randomized reports (Section 5.1)
``Indep``              product of the estimated marginals (not in the paper)
``Uniform``            no information (not in the paper)
``TruePairsCopula``    reference, not a method: the copula on the true pair tables (needs the data)
``CALM``               CALM (Zhang et al., CCS 2018): l-way marginals of user groups, consistency,
                       maximum entropy (not in paper 004)
=====================  ===========================================================================

``BASELINES`` holds the methods whose clients share the per-attribute budget split
(``Protocol``); CALM's clients report one l-way marginal each with the whole budget
(``CALMProtocol``), so it stands beside them.
"""

from reidrisk.collect.baselines.base import Method, NotFittedError, product_table
from reidrisk.collect.baselines.calm import CALM, CALMProtocol, CALMReports
from reidrisk.collect.baselines.complete_case import CompleteCase
from reidrisk.collect.baselines.dfcopula import DFCopula
from reidrisk.collect.baselines.indep import Indep
from reidrisk.collect.baselines.mdn import MDNCompleteCase
from reidrisk.collect.baselines.orappor import ORapporCompleteCase
from reidrisk.collect.baselines.pde_ete import PDEETECompleteCase
from reidrisk.collect.baselines.proposed import Proposed
from reidrisk.collect.baselines.s2mb import S2MbCompleteCase
from reidrisk.collect.baselines.truepairs import TruePairsCopula
from reidrisk.collect.baselines.uniform import Uniform
from reidrisk.mechanisms.baselines import LOCAL_MECHANISMS, LaplaceIndex, NegativeSurvey

BASELINES: dict[str, type[Method]] = {
    "proposed": Proposed,
    "orappor": ORapporCompleteCase,
    "s2mb": S2MbCompleteCase,
    "mdn": MDNCompleteCase,
    "pde_ete": PDEETECompleteCase,
    "df_copula": DFCopula,
    "indep": Indep,
    "uniform": Uniform,
    "true_pairs_copula": TruePairsCopula,
}
"""Every compared method by name (the names used in result tables and the CLI)."""

__all__ = [
    "BASELINES", "CALM", "CALMProtocol", "CALMReports", "CompleteCase", "DFCopula", "Indep",
    "LOCAL_MECHANISMS", "LaplaceIndex",
    "MDNCompleteCase", "Method", "NegativeSurvey", "NotFittedError", "ORapporCompleteCase",
    "PDEETECompleteCase", "Proposed", "S2MbCompleteCase", "TruePairsCopula", "Uniform",
    "product_table",
]
