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
