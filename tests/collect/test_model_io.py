"""The model file carries the guarantee of the reports it was fitted on, and re-checks it."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from reidrisk.collect import CollectPipeline, model_io
from reidrisk.collect.model_io import CollectModel, ModelFileError
from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import CollectedReports
from reidrisk.schema import Attribute, Schema

SCHEMA = Schema(tuple(Attribute(f"a{j}", tuple("abcd")) for j in range(5)))
PROTOCOL = Protocol(4.0, attributes_per_person=2)  # 2.0 per attribute; the five budgets sum to 10.0


def _fit(reports):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fallback warning is irrelevant here
        return CollectPipeline().fit(reports)


@pytest.fixture(scope="module")
def reports():
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 4, (1000, 5)).astype(np.int32)
    return PROTOCOL.randomize(SCHEMA, codes, rng)


@pytest.fixture(scope="module")
def model(reports):
    return _fit(CollectedReports(reports, PROTOCOL))


def test_model_states_the_protocols_loss_not_the_summed_budgets(model):
    assert math.isclose(model.privacy_loss, 4.0, rel_tol=1e-9)


def test_model_of_reports_without_their_protocol_bounds_by_every_attribute(reports):
    """Without the protocol nothing limits how many attributes one person reported."""
    assert math.isclose(_fit(reports).privacy_loss, 10.0, rel_tol=1e-9)


def test_round_trip_keeps_the_guarantee(tmp_path, model):
    path = model.save(tmp_path / "model.json")
    d = json.loads(path.read_text())
    assert d["privacy_loss"] == model.privacy_loss
    assert CollectModel.load(path).privacy_loss == model.privacy_loss


def test_model_declaring_less_than_its_mechanisms_imply_is_refused(tmp_path, model):
    d = model.to_dict()
    d["privacy_loss"] = 2.0
    path = tmp_path / "model.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFileError, match=r"model\.json.*privacy loss of 2 .* imply 4"):
        CollectModel.load(path)


def test_older_model_files_get_the_recomputed_loss(tmp_path, model):
    d = model.to_dict()
    del d["privacy_loss"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(d))
    assert math.isclose(CollectModel.load(path).privacy_loss, 4.0, rel_tol=1e-9)


def test_model_files_with_the_former_keys_still_load(tmp_path, model):
    """Files written before the renames store the attributes per person under "k" and the
    copula's pair fit under "method"."""
    d = model.to_dict()
    proto = d["protocol"]
    assert proto["attributes_per_person"] == 2 and "k" not in proto
    proto["k"] = proto.pop("attributes_per_person")
    params = d["copula"]["params"]
    params["method"] = params.pop("copula_fit")
    path = tmp_path / "old_key.json"
    path.write_text(json.dumps(d))
    back = CollectModel.load(path)
    assert back.protocol == PROTOCOL and back.protocol.attributes_per_person == 2
    assert math.isclose(back.privacy_loss, 4.0, rel_tol=1e-9)


def _imported_modules(path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_model_io_is_the_file_format_only():
    # the pipeline builds models (and fits their copula) and imports model_io, never the reverse:
    # no import of the pipeline anywhere in model_io, at the top or inside a function
    imported = _imported_modules(Path(model_io.__file__))
    assert "reidrisk.collect.pipeline" not in imported
    assert "reidrisk.collect" not in imported  # the package would import the pipeline
    assert not hasattr(model_io, "fit_copula")


def test_a_model_holds_exactly_one_of_a_copula_and_a_latent_class_model(model):
    # kind is read from which one is set, so a model with neither or both is refused
    with pytest.raises(model_io.CollectError, match="exactly one of a copula and a latent"):
        dataclasses.replace(model, copula=None)
    assert model.kind == "copula" and model.to_dict()["model"] == "copula"


# ---- the exact table in timed chunks ----------------------------------------------------------
def _copula(c: int, f: int, rho: float):
    from reidrisk.copula import GaussianCopula

    rng = np.random.default_rng(c)
    corr = np.full((c, c), rho)
    np.fill_diagonal(corr, 1.0)
    return GaussianCopula.from_parameters([rng.dirichlet(np.full(f, 2.0)) for _ in range(c)], corr)


class _Clock:
    """model_io's clock, advanced by ``cost`` seconds per cell the copula computes."""

    def __init__(self, monkeypatch, cost: float):
        from reidrisk.copula import GaussianCopula

        self.now, self.cost, self.calls = 0.0, cost, []
        real = GaussianCopula.cell_probability

        def slow(copula, grid, *args, **kwargs):
            self.now += self.cost * len(grid)
            self.calls.append(len(grid))
            return real(copula, grid, *args, **kwargs)

        monkeypatch.setattr(GaussianCopula, "cell_probability", slow)
        monkeypatch.setattr(model_io, "_clock", lambda: self.now)


@pytest.mark.parametrize(("c", "f", "rho"), [(3, 6, 0.5), (4, 5, 0.8)])
def test_exact_copula_table_is_the_one_shot_table_bit_for_bit(c, f, rho):
    """Chunks in a shuffled order compute each cell as the one call over the whole table does: the
    QMC point sets of each round are drawn from the same seed whichever cells are in the call."""
    cop = _copula(c, f, rho)
    seen = []
    t = model_io.exact_copula_table(cop, list(range(c)), progress=lambda *a: seen.append(a))
    assert np.array_equal(t, cop.contingency_table(list(range(c))))
    assert len(seen) >= 2 and seen[0][:2] == (model_io.EXACT_FIRST_CHUNK, f**c)  # in chunks
    assert seen[-1] == (f**c, f**c, 0.0)


def test_exact_copula_table_stops_when_the_measured_rate_exceeds_the_limit(monkeypatch):
    """216 cells of 1 s each: the first 64 take 64 s, so the table would take 216 s, above a limit
    of 100 s; it stops after that one chunk, naming the measured estimate, the limit and the fix.
    At 0.4 s per cell (86 s) it is computed to the end."""
    cop = _copula(3, 6, 0.5)
    clock = _Clock(monkeypatch, 1.0)
    with pytest.raises(model_io.CollectError) as info:
        model_io.exact_copula_table(cop, [0, 1, 2], limit=100.0)
    exc = info.value
    assert isinstance(exc, model_io.ExactTableTooLong)
    assert clock.calls == [64] and (exc.done, exc.cells) == (64, 216)
    assert exc.seconds == 216.0 and exc.limit == 100.0
    assert str(exc) == ("the exact 6x6x6 table (216 cells) would take about 4 min to compute "
                        "(measured on 64 of its cells in 64.0 s), more than the limit of 100 s; "
                        "count it from synthetic records instead (exact=False), or choose fewer "
                        "or smaller attributes")
    clock.cost, clock.calls = 0.4, []
    t = model_io.exact_copula_table(cop, [0, 1, 2], limit=100.0)
    assert sum(clock.calls) == 216 and np.array_equal(t, cop.contingency_table([0, 1, 2]))


def test_exact_copula_table_stops_when_the_elapsed_time_exceeds_the_limit(monkeypatch):
    """Chunks shorter than EXACT_TIMING_SECONDS carry the fixed cost of a call, so their rate is
    not extrapolated to refuse a table; the elapsed time still is checked after each chunk."""
    cop = _copula(3, 6, 0.5)
    clock = _Clock(monkeypatch, 0.001)  # 64 ms, 128 ms, ...: 0.216 s in all
    monkeypatch.setattr(model_io, "EXACT_TIMING_SECONDS", 1.0)
    with pytest.raises(model_io.ExactTableTooLong) as info:
        model_io.exact_copula_table(cop, [0, 1, 2], limit=0.15)
    assert clock.calls == [64, 128] and info.value.done == 192  # 0.192 s > 0.15 s
    # a 64-cell chunk takes 64 ms: below the 1 s that makes a rate trusted, so 0.216 s
    # extrapolated from it does not stop a table with 0.2 s to go
    clock.calls = []
    with pytest.raises(model_io.ExactTableTooLong):
        model_io.exact_copula_table(cop, [0, 1, 2], limit=0.1)
    assert clock.calls == [64, 128]


def test_exact_copula_table_checks_its_input():
    cop = _copula(3, 4, 0.5)
    for bad in (0, -1.0, float("nan"), float("inf"), "5", True):
        with pytest.raises(model_io.CollectError, match="limit must be a positive number"):
            model_io.exact_copula_table(cop, [0, 1, 2], limit=bad)
    with pytest.raises(model_io.CollectError, match="progress must be callable"):
        model_io.exact_copula_table(cop, [0, 1, 2], progress="yes")
    # two attributes: the closed form, neither chunked nor timed
    assert np.array_equal(model_io.exact_copula_table(cop, [0, 2]), cop.contingency_table([0, 2]))


def test_model_table_is_computed_in_chunks_within_its_limit(model, monkeypatch):
    """CollectModel.table's exact copula table is exact_copula_table's (the CLI and the service
    call it with their progress and limit); without a limit it runs to the end."""
    clock = _Clock(monkeypatch, 1.0)
    monkeypatch.setattr(model_io, "EXACT_FIRST_CHUNK", 16)
    with pytest.raises(model_io.ExactTableTooLong, match=r"4x4x4 table \(64 cells\) would take "
                                                         r"about 64 s"):
        model.table(["a0", "a1", "a2"], limit=10.0)
    assert clock.calls == [16]
    t = model.table(["a0", "a1", "a2"])
    assert np.array_equal(t, model.copula.contingency_table([0, 1, 2]))


def test_exact_copula_table_checks_its_attributes():
    """An index out of range escaped as a bare IndexError, a fractional or boolean one was
    truncated to a different attribute without a word, and a repeat raised the copula's own error:
    each is now a CollectError naming the indices and the fix."""
    cop = _copula(4, 3, 0.5)
    for bad in ([0, 1, 7], [0, 1, 2.7], [0, True, 2], [0, 0, 1], [0, 1, -1], []):
        with pytest.raises(model_io.CollectError, match=r"cols must be distinct attribute indices "
                                                        r"in 0\.\.3"):
            model_io.exact_copula_table(cop, bad)
    assert np.array_equal(model_io.exact_copula_table(cop, np.array([3, 0, 1])),
                          cop.contingency_table([3, 0, 1]))


def test_duration_text_rounds_into_the_unit_it_names():
    """Below a second the text was "0 s", so a refusal under a limit of 0.15 s read "about 0 s
    ..., more than the limit of 0 s"; at the unit boundaries the rounding gave "120 s" and
    "120 min" where the next unit begins."""
    d = model_io.duration_text
    assert [d(s) for s in (0, 0.15, 0.5, 1.0, 72, 119.4)] == ["0 s", "0.15 s", "0.5 s", "1 s",
                                                               "72 s", "119 s"]
    assert [d(s) for s in (119.6, 2100, 7199, 9000)] == ["2 min", "35 min", "2.0 h", "2.5 h"]


def test_model_table_checks_its_limit_and_progress_whatever_the_table(model):
    """A limit or progress that is not one was refused only on the copula's exact path: a counted
    table (or a latent model's) accepted limit="5" without a word."""
    for kwargs in ({"limit": "5"}, {"limit": 0}, {"progress": "yes"}):
        for exact in (True, False):
            with pytest.raises(model_io.CollectError, match="must be"):
                model.table(["a0", "a1", "a2"], exact=exact, rng=0, **kwargs)
