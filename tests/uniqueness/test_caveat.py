"""The CLI's caveat on P(unique) under LDP: given only where the measured reliability gap at the
databases' epsilon is above the limit, with the number, and keyed to the measured table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.data.synthetic import make_population
from reidrisk.mechanisms import RecordRandomizer
from reidrisk.uniqueness import caveat
from reidrisk.uniqueness.caveat import GAP_LIMIT, MEASURED_GAPS, ldp_caveat, measured_gap

REPO = Path(__file__).resolve().parents[2]
N = 3000
SIZES = [3, 4, 5, 2, 3]


def test_caveat_at_epsilon_one_gives_the_measured_gap():
    at, gap = measured_gap(1.0)
    assert at == 1.0 and gap == MEASURED_GAPS["latent"][1.0] and gap > GAP_LIMIT
    note = ldp_caveat(1.0)
    assert note is not None
    assert f"{gap:.2f}" in note and "epsilon = 1 per attribute" in note and caveat.RESULTS_FILE in note


def test_no_caveat_where_the_measured_gap_is_within_the_limit():
    for world, row in MEASURED_GAPS.items():
        for eps, gap in row.items():
            assert (ldp_caveat(eps, world) is None) == (gap <= GAP_LIMIT), (world, eps)
    table = {"latent": {1.0: 0.3, 5.0: GAP_LIMIT, 10.0: 0.02}}
    assert ldp_caveat(1.0, table=table) is not None
    assert ldp_caveat(5.0, table=table) is None  # a gap of exactly the limit is within it
    assert ldp_caveat(20.0, table=table) is None  # above the largest measured epsilon: its gap
    # between two measured points the larger of the two gaps speaks: 3 lies between 1 and 5
    assert measured_gap(3.0, table=table) == (1.0, 0.3)
    assert "the worse of the two measured points around 3" in ldp_caveat(3.0, table=table)
    assert measured_gap(7.0, table=table) == (5.0, GAP_LIMIT)
    # the note calls the point it uses nearest only where it is: 4.9 is nearer 5 than 1, and
    # below the smallest measured epsilon the end point is the nearest
    assert "nearest" not in ldp_caveat(4.9, table=table)
    assert "the measured point nearest to 0.5" in ldp_caveat(0.5, table=table)


def test_table_matches_the_results_files():
    paths = [REPO / f for f in caveat.RESULTS_FILES]
    if not all(p.exists() for p in paths):
        pytest.skip(f"{caveat.RESULTS_FILES} are not in this checkout")
    # per world and epsilon, the point measured on the most records over the files (the default
    # point or the epsilon sweep), a tie going to the earlier file (caveat.RESULTS_FILES)
    best: dict[str, dict[float, tuple[int, float, str]]] = {}
    for name, path in zip(caveat.RESULTS_FILES, paths):
        for rec in json.loads(path.read_text()):
            p = rec.get("params", {})
            if (rec.get("metric") == "calibration_max_gap" and p.get("private") is True
                    and p.get("sweep", "epsilon") == "epsilon" and p.get("dataset") == "adult"
                    and str(p.get("method", "")).endswith(" world")):
                world = p["method"].removeprefix("reidrisk, ").removesuffix(" world")
                eps = float(p.get("epsilon", 1.0))  # the default point is at epsilon = 1
                seen = best.setdefault(world, {}).get(eps)
                if seen is None or int(p["records"]) > seen[0]:
                    best[world][eps] = (int(p["records"]), round(float(rec["value"]), 3), name)
    found = {w: {e: v for e, (_, v, _) in r.items()} for w, r in best.items()}
    assert found, f"no epsilon-sweep gaps in {caveat.RESULTS_FILES}"
    assert {w: dict(r) for w, r in MEASURED_GAPS.items()} == found, (
        f"reidrisk.uniqueness.caveat.MEASURED_GAPS differs from {caveat.RESULTS_FILES}; copy the "
        "new measurements into it")
    for world, row in best.items():
        assert {e: f for e, (_, _, f) in row.items()} == dict(caveat.MEASURED_SOURCES), world
    # the note names the file its number comes from
    assert caveat.MEASURED_SOURCES[2.0] in ldp_caveat(2.0)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("caveat")
    pop = make_population(N, SIZES, 0.5, rng=2)
    rng = np.random.default_rng(1)
    pop.schema.decode(pop.codes[rng.random(N) < 0.2]).to_csv(tmp / "db.csv", index=False)
    # k-RR with 1 per attribute: the whole-record budget is 1 x the number of attributes
    reports = RecordRandomizer(pop.schema, "grr", 1.0 * len(SIZES)).randomize(pop.codes[rng.random(N) < 0.1], rng)
    pop.schema.decode(np.column_stack(reports.reports)).to_csv(tmp / "db_krr.csv", index=False)
    pop.schema.decode(pop.codes[:20]).to_csv(tmp / "records.csv", index=False)
    pop.schema.save(tmp / "schema.json")
    return tmp


def _score(files, *dbs):
    args = ["uniqueness", "score", "--population", str(N), "--records", str(files / "records.csv"),
            "--schema", str(files / "schema.json")]
    for d in dbs:
        args += ["--db", d]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.stderr


def test_cli_gives_the_caveat_at_epsilon_one_and_not_where_the_gap_is_small(files, monkeypatch):
    private = f"{files / 'db_krr.csv'}:0.1:grr:{len(SIZES)}"
    note = _score(files, private)
    gap = MEASURED_GAPS["latent"][1.0]
    assert "Note:" in note and "epsilon = 1 per attribute" in note and f"{gap:.2f}" in note
    # a raw database calibrates the prior: no caveat
    assert "Note:" not in _score(files, f"{files / 'db.csv'}:0.2", private)
    # where the measured gap at that epsilon is within the limit: no caveat
    small = {w: {**row, 1.0: GAP_LIMIT / 2} for w, row in MEASURED_GAPS.items()}
    monkeypatch.setattr(caveat, "MEASURED_GAPS", small)
    assert "Note:" not in _score(files, private)
