"""The prior's world model: latent class model or Gaussian copula (``UniquenessModel(world=...)``)."""

from __future__ import annotations

import numpy as np
import pytest

from reidrisk.data.synthetic import make_population
from reidrisk.latent import LatentClassModel
from reidrisk.mechanisms import RecordRandomizer
from reidrisk.uniqueness.model import Database, UniquenessError, UniquenessModel


@pytest.fixture(scope="module")
def population():
    pop = make_population(6000, [4, 5, 3, 6], dependence=0.6, rng=3)
    return pop.schema, pop.codes.astype(np.int64)


def _raw_db(schema, pop, seed=0):
    gen = np.random.default_rng(seed)
    return Database(pop[gen.random(pop.shape[0]) < 0.2], 0.2)


def test_auto_world_is_copula_with_a_raw_database_and_latent_without(population):
    schema, pop = population
    N = pop.shape[0]
    raw = UniquenessModel(rng=0).fit([_raw_db(schema, pop)], N, schema)
    assert raw.world_ == "copula" and raw.latent_ is None and raw.copula_ is not None
    reps = RecordRandomizer(schema, "grr", 8.0).randomize(pop[:1500], 1)
    priv = UniquenessModel(rng=0, n_calibration=300, simulation_cap=6000).fit([Database(reps, 0.25)], N)
    assert priv.world_ == "latent" and isinstance(priv.latent_, LatentClassModel)
    assert priv.prior_.source == "simulation"
    s = priv.score(pop[:50], [1, 10])
    assert np.all((s.p_unique >= 0) & (s.p_unique <= 1))
    assert UniquenessModel("paper").world == "copula"


def test_latent_world_q_is_the_latent_model_probability(population):
    schema, pop = population
    N = pop.shape[0]
    m = UniquenessModel(world="latent", rng=0).fit([_raw_db(schema, pop)], N, schema)
    assert m.world_ == "latent" and m.copula_ is None
    rec = pop[:40]
    assert np.allclose(m.cell_probability(rec), m.latent_.prob(rec))
    s = m.score(rec, [1])
    assert np.allclose(s.q, m.latent_.prob(rec))
    # a fitted world is a mixture of at least 2 classes on this dependent population
    assert m.latent_.n_classes_ >= 2


def test_bad_world_names_the_choices():
    with pytest.raises(UniquenessError, match="world must be one of"):
        UniquenessModel(world="vine")
