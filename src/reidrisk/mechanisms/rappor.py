"""Symmetric one-hot RAPPOR (O-RAPPOR over a known domain; basic one-time RAPPOR).

Design: docs/design/core.md#oue-and-rappor.

Kairouz, Bonawitz and Ramage (ICML 2016) and Erlingsson et al. (CCS 2014): the input is one-hot
encoded over the k known values and every bit is flipped independently with probability
f = 1 / (1 + e^{eps/2}). So bit x is 1 with probability p = e^{eps/2} / (1 + e^{eps/2}) and any
other bit with q = 1 - p; two inputs differ in two bits, giving the worst-case ratio
(p/q)^2 = e^eps. This is the O-RAPPOR baseline of paper 004 Section 5.

Reports share the representation of ``OUE``: uint8 (n, k) bits, a row of ``MISSING_BITS`` (255)
where the input was missing.
"""

from __future__ import annotations

import math

from reidrisk.mechanisms.oue import UnaryEncoding


class ORappor(UnaryEncoding):
    """Symmetric unary encoding: p = e^{eps/2} / (1 + e^{eps/2}), q = 1 - p.

    Parameters
    ----------
    epsilon, k
        As in ``UnaryEncoding``.
    """

    name = "rappor"

    @property
    def p_bit(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.epsilon / 2.0))

    @property
    def q_bit(self) -> float:
        return 1.0 / (1.0 + math.exp(self.epsilon / 2.0))
