"""The main job on one table (reidrisk.story): its parts on known inputs, and one small run whose
steps feed each other."""

import numpy as np
import pandas as pd
import pytest

from reidrisk.data.adult import EXTRACT_ROWS
from reidrisk.story import StoryError, link_reports, population_counts, run_story


def test_population_counts_bin_age_as_the_assessment_does():
    population = pd.DataFrame({"age": [20, 29, 30, 41, 41], "sex": ["F", "F", "F", "M", "M"]})
    table = population.iloc[[0, 2, 3]]
    # 20 and 29 share the bin [20, 30); 30 is alone in [30, 40); the two 41s share theirs
    assert population_counts(population, table, ("age", "sex")).tolist() == [2, 1, 2]


def test_link_reports_finds_every_person_when_the_reports_are_the_truth():
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    assert link_reports(codes, codes, np.random.default_rng(0)) == 1.0


def test_link_reports_guesses_among_equal_reports():
    # every report agrees equally with everyone: each pick is a guess among n, so the hits are
    # binomial(n, 1 / n), about Poisson(1): more than 6 has probability < 1e-4
    n = 400
    codes = np.zeros((n, 2), dtype=np.int64)
    assert link_reports(codes, codes, np.random.default_rng(1)) * n <= 6


def test_link_reports_prefers_the_report_agreeing_on_more_qis():
    codes = np.array([[0, 0, 0], [1, 1, 1]])
    reports = np.array([[1, 1, 0], [0, 0, 0]])  # person 0's report now looks like person 1
    assert link_reports(codes, reports, np.random.default_rng(0)) == 0.0


@pytest.mark.parametrize("kwargs, match", [({"sample": 10}, "--sample 10 is out of range"),
                                           ({"sample": EXTRACT_ROWS + 1}, "out of range"),
                                           ({"target_error": 1.0}, "--target-error 1.0")])
def test_out_of_range_parameters_are_refused_with_their_range(kwargs, match):
    with pytest.raises(StoryError, match=match):
        run_story(progress=False, **kwargs)


@pytest.mark.slow
def test_a_small_story_feeds_each_step_from_the_previous_one():
    story = run_story(sample=300, target_error=0.5, seed=3, progress=False)
    assert story.n == 300 and story.population == EXTRACT_ROWS
    a = story.assessment
    assert a.N == EXTRACT_ROWS and not a.census  # one population: the extract
    assert story.release.k_target == 5 and story.release.k_reached >= 5
    # the budget PIE certifies for these 300 people under Prop. 4.1 (any epsilon-LDP mechanism)
    from reidrisk.pie import calibrate

    domain = int(np.prod([attr.size for attr in story.table.schema]))
    assert story.collection.epsilon == pytest.approx(calibrate(0.5, 300, domain, "ldp").epsilon)
    # the truth of step 4 is that of step 1, and a person counted unique is in a class of 1
    assert np.array_equal(story.remaining.truly_unique, story.truly_unique)
    assert (a.fk[story.truly_unique] == 1).all()
    assert story.remaining.p_unique.shape == (300,)
    assert 0 <= story.remaining.link_rate <= 1 - story.target_error
    assert set(story.seconds) == {"assess", "release", "collect", "remaining"}
