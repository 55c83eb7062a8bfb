"""reidrisk.linkage: anonymize a table, attack the release, score it (paper 001, PWSCUP 2015).

Design: docs/design/linkage.md.

``anonymize`` builds releases (``Release``: the table and its hidden true mapping), ``attacks`` links
released rows back to the original (E1-E4, EUC1, EUC2 and a global assignment), ``scores`` gives
U1-U6, S1-S2 and re-identification rates with confidence intervals, ``evaluate`` a scorecard.
"""

from typing import TYPE_CHECKING

from reidrisk._lazy import lazy_exports

if TYPE_CHECKING:  # the names below load on first use (reidrisk._lazy)
    from reidrisk.linkage.anonymize import (
        ANONYMIZERS,
        Pipeline,
        add_noise,
        average_sa,
        delete_records,
        k_anonymize,
        shuffle_rows,
        swap_sa,
        unify,
    )
    from reidrisk.linkage.attacks import ATTACKS, Linking, attack
    from reidrisk.linkage.evaluate import Scorecard, evaluate
    from reidrisk.linkage.generalization import RecodeMap, read_release
    from reidrisk.linkage.release import LinkageError, Release
    from reidrisk.linkage.scores import (
        Rate,
        Security,
        Utility,
        reid_rate,
        security_scores,
        utility_scores,
    )

__all__ = [
    "ANONYMIZERS", "ATTACKS", "LinkageError", "Linking", "Pipeline", "Rate", "RecodeMap", "Release",
    "Scorecard", "Security", "Utility", "add_noise", "attack", "average_sa", "delete_records",
    "evaluate", "k_anonymize", "read_release", "reid_rate", "security_scores", "shuffle_rows",
    "swap_sa", "unify", "utility_scores",
]

__getattr__, __dir__ = lazy_exports(__name__)
