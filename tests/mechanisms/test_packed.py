"""Bit-packed unary reports (``perturb_packed``, ``PackedBits``): the same channel as ``perturb``.

The goodness-of-fit checks follow test_sampling.py: one chi-square over all inputs per case and bit
generator, a Bonferroni family with family-wise false-alarm probability ALPHA under a correct
sampler; seeds are a formula of the parameter indices.
"""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_checks import ALPHA, GENERATORS, channel_gof_pvalue

from reidrisk.mechanisms import OUE, ORappor
from reidrisk.mechanisms.oue import MISSING_BITS, PackedBits
from reidrisk.schema import MISSING

CASES = {
    "oue-3": lambda: OUE(1.0, 3),
    "oue-5": lambda: OUE(2.5, 5),
    "rappor-5": lambda: ORappor(0.5, 5),
    "oue-9": lambda: OUE(1.5, 9),  # two bytes a report, seven padding bits
}
THRESHOLD = ALPHA / (len(CASES) * len(GENERATORS))


class _Unpacked:
    """A mechanism whose ``perturb`` draws packed reports and unpacks them."""

    def __init__(self, mech):
        self.mech, self.k = mech, mech.k

    def perturb(self, values, rng=None):
        return self.mech.perturb_packed(values, rng).unpack()

    def enumerate_outputs(self):
        return self.mech.enumerate_outputs()

    def channel(self):
        return self.mech.channel()


@pytest.mark.parametrize("gen", list(GENERATORS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_packed_reports_fit_exact_channel(case, gen):
    mech = CASES[case]()
    seed = 7_000 + 10 * sorted(CASES).index(case) + list(GENERATORS).index(gen)
    p = channel_gof_pvalue(_Unpacked(mech), 20_000, GENERATORS[gen](seed))
    assert p > THRESHOLD, f"{mech!r} packed, {gen}: chi-square p-value {p:.2e} <= {THRESHOLD:.1e}"


@pytest.mark.parametrize("k", [2, 8, 13, 1024])
def test_packed_reports_are_perturb_packed_bit_for_bit(k):
    """Same seed, same draws: perturb_packed consumes the generator as perturb does (chunk by
    chunk), so its unpacked reports equal perturb's exactly, missing rows included."""
    mech = OUE(1.0, k)
    rng = np.random.default_rng(k)
    n = 3 * (1 << 22) // k + 5 if k == 1024 else 2_000  # several of perturb's chunks
    x = rng.integers(0, k, n)
    x[rng.random(n) < 0.2] = MISSING
    ref = mech.perturb(x, rng=11)
    packed = mech.perturb_packed(x, rng=11)
    assert isinstance(packed, PackedBits) and packed.bits.shape == (n, -(-k // 8))
    np.testing.assert_array_equal(packed.missing, x == MISSING)
    np.testing.assert_array_equal(packed.unpack(), ref)
    np.testing.assert_array_equal(packed.unpack(100, 250), ref[100:250])
    assert (packed.unpack()[x == MISSING] == MISSING_BITS).all()
    np.testing.assert_array_equal(mech.pack(ref).bits, packed.bits)
    assert packed.nbytes <= n * (k // 8 + 2)  # ~8x smaller than the n x k uint8 reports


def test_packed_bits_refuse_bad_shapes():
    with pytest.raises(ValueError, match=r"must be \(n, 2\) bytes"):
        PackedBits(np.zeros((4, 3), np.uint8), np.zeros(4, bool), 10)
    with pytest.raises(ValueError, match=r"missing mask must be \(4,\)"):
        PackedBits(np.zeros((4, 2), np.uint8), np.zeros(3, bool), 10)
