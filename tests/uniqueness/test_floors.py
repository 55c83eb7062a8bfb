import math

import numpy as np
import pytest
from scipy.special import lambertw

from reidrisk.uniqueness.floors import INV_E, FloorError, floor_bound, floor_q


@pytest.mark.parametrize("N", [1, 30_000, 10_000_000])
@pytest.mark.parametrize("alpha", [1e-6, 0.01, 0.1, 0.3, 0.36])
def test_lambertw_solves_paper_equation(N, alpha):
    # eq. 13 with N for n: N q exp(-N q) = alpha, smaller root (N q <= 1)
    q = float(floor_bound(N, alpha, "lambertw"))
    lam = N * q
    assert lam <= 1.0
    assert lam * math.exp(-lam) == pytest.approx(alpha, rel=1e-12)


@pytest.mark.parametrize("alpha", [1e-6, 0.1, 0.5, 0.9, 0.999])
def test_poisson_solves_exact_existence_equation(alpha):
    N = 95_130
    q = float(floor_bound(N, alpha, "poisson"))
    assert -math.expm1(-N * q) == pytest.approx(alpha, rel=1e-12)


def test_alpha_at_branch_point_is_exactly_one_over_N():
    for a in (INV_E, math.exp(-1), 0.36787944117144233):
        assert floor_bound(1000, a, "lambertw") == 1.0 / 1000
    # a hair below 1/e stays real and close to 1/N
    assert float(floor_bound(1000, INV_E - 1e-12, "lambertw")) * 1000 == pytest.approx(1.0, abs=1e-5)


def test_alpha_above_inverse_e_names_the_fix():
    with pytest.raises(FloorError, match=r'floor="poisson".*|0\.3678'):
        floor_bound(100, 0.4, "lambertw")
    with pytest.raises(FloorError, match="0.36787944117144233"):
        floor_q([0.1], 100, 0.5, "lambertw")
    # the Poisson floor accepts it
    assert float(floor_bound(100, 0.5, "poisson")) == pytest.approx(math.log(2) / 100)


def test_floor_q_is_max_and_vectorized():
    N, alpha = 10_000, 0.2
    b = float(floor_bound(N, alpha, "lambertw"))
    q = np.array([0.0, b / 10, b, 2 * b, 0.5, 1.0])
    out = floor_q(q, N, alpha, "lambertw")
    np.testing.assert_array_equal(out, np.maximum(q, b))
    np.testing.assert_array_equal(floor_q(q, N, alpha, "none"), q)
    # the lambertw floor is ABOVE the poisson floor for the same alpha: under Poisson(lam = N q),
    # P(X = 1) = lam e^-lam < P(X >= 1) = 1 - e^-lam for every lam > 0, so P(X = 1) reaches alpha
    # only at a larger lam (docs/design/uniqueness.md#floor-on-q: q = -W0(-alpha) / N against
    # q = -ln(1 - alpha) / N); the closed forms, computed here with scipy, give 0.2592 / N and
    # 0.2231 / N at alpha = 0.2
    lam_w = -lambertw(-alpha, 0).real
    lam_p = -math.log1p(-alpha)
    assert float(floor_bound(N, alpha, "lambertw")) == pytest.approx(lam_w / N, rel=1e-12)
    assert float(floor_bound(N, alpha, "poisson")) == pytest.approx(lam_p / N, rel=1e-12)
    assert lam_w > lam_p
    assert floor_bound(N, alpha, "lambertw") > floor_bound(N, alpha, "poisson")


def test_bad_inputs():
    with pytest.raises(FloorError, match="unknown floor"):
        floor_q([0.1], 10, 0.1, "gauss")
    with pytest.raises(FloorError, match="not a probability"):
        floor_q([1.5], 10, 0.1)
    with pytest.raises(FloorError, match=">= 1"):
        floor_q([0.1], 0, 0.1)
    with pytest.raises(FloorError, match="alpha"):
        floor_q([0.1], 10, -0.1)
    with pytest.raises(FloorError, match="alpha"):
        floor_q([0.1], 10, 1.0, "poisson")
