"""Former home of the baselines' client mechanisms, now ``reidrisk.mechanisms.baselines``: the
negative survey (MDN) and the Laplace noise on the index (PDE/ETE). The names are re-exported here.
"""

from __future__ import annotations

from reidrisk.mechanisms.baselines import LOCAL_MECHANISMS, LaplaceIndex, NegativeSurvey

__all__ = ["LOCAL_MECHANISMS", "LaplaceIndex", "NegativeSurvey"]
