"""Fixtures shared by the top-level tests (the demo and the command line)."""

import pytest


@pytest.fixture
def fast_collect_section(monkeypatch):
    """The demo with a stand-in for its collection section (3-4 s of method fits on small data,
    tested in tests/collect/test_report.py), for tests about everything else."""
    from reidrisk.collect import report as collect_report
    from reidrisk.report import Section

    monkeypatch.setattr(collect_report, "demo_collect_section",
                        lambda *a, **k: Section("Collection: contingency tables", "<p>-</p>",
                                                anchor="collect"))
