"""Where the noise comes from: a cryptographic generator for real answers, seeds for simulations.

LDP protects a person only if nobody can predict or replay the noise added to their answer. A
statistical PRNG does not give that: its whole stream follows from its seed, and it is not designed
to keep its state secret from its outputs (MT19937's follows from 624 of them), so whoever knows or
recovers the seed subtracts the noise — with a known seed every raw value is recovered from GRR
reports. A client randomizing a real answer therefore draws from ``secure_generator()``: the
ChaCha20 keystream (Bernstein 2008; the block function of RFC 8439, 20 rounds, nonce 0, block
counter from 0) under a 256-bit key from the operating system (``secrets``), driven through
numpy's ``Generator`` so that every sampler works unchanged. The bit generator is
``randomgen.ChaCha``.

``as_generator`` (``reidrisk.mechanisms.base``) applies one rule across the package:

* ``rng=None`` — a fresh ``secure_generator()``: what a client randomizing a real answer gets by
  default, and what any other function asked for fresh randomness gets too (not reproducible, as
  before, and now unpredictable as well);
* an int or ``numpy.random.SeedSequence`` — ``numpy.random.default_rng(seed)`` (PCG64), a
  reproducible stream for simulations, benchmarks and tests only: never seed a client that
  randomizes a real answer;
* a ``numpy.random.Generator`` — used as it is (any bit generator: the samplers draw only through
  ``Generator`` methods whose output does not depend on the bit generator's type or word width).

Samplers that want raw random bits take them from ``random_bytes``, never from
``bit_generator.random_raw`` (whose word width differs between bit generators: MT19937 fills 32 of
its 64 bits).
"""

from __future__ import annotations

import secrets

import numpy as np

from reidrisk.errors import ReidriskError

SECURE_ROUNDS: int = 20
"""ChaCha rounds of the secure generator (ChaCha20, the standard cipher; fewer rounds are not
used)."""


class MechanismError(ReidriskError, ValueError):
    """Bad mechanism parameter or bad report. The message names the parameter/value and the fix.

    Defined here, at the bottom of ``reidrisk.mechanisms`` (the noise source every mechanism
    draws from), and re-exported by ``reidrisk.mechanisms.base``.
    """


_KEY_BITS = 256
_U64_MAX = np.iinfo(np.uint64).max


def secure_generator(key: int | None = None) -> np.random.Generator:
    """A ``numpy.random.Generator`` over ChaCha20 keyed from the operating system's CSPRNG.

    Every call returns a new, independent generator with a fresh 256-bit key from ``secrets``
    (``os.urandom``) and counter 0. A generator must not be shared across ``fork`` (both processes
    would draw the same stream): create one per process.

    Parameters
    ----------
    key : int, optional
        An int in 0..2^256 - 1 that replays a fixed stream of the same cipher; for tests only (a
        key, like a seed, lets its holder remove the noise). ``None``: a fresh key.

    Returns
    -------
    numpy.random.Generator
        A generator over ChaCha20 with a fresh key.
    """
    from randomgen import ChaCha  # imported on first use: it is only needed by clients

    if key is None:
        key = secrets.randbits(_KEY_BITS)
    elif isinstance(key, bool) or not isinstance(key, (int, np.integer)) or not (
            0 <= int(key) < 1 << _KEY_BITS):
        raise MechanismError(
            f"key must be an int in 0..2^256 - 1, got {key!r}; pass None in production"
        )
    return np.random.Generator(ChaCha(key=int(key), counter=0, rounds=SECURE_ROUNDS))


def is_secure(rng: np.random.Generator) -> bool:
    """True when ``rng`` draws from the secure generator's cipher (ChaCha with 20 rounds).

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator to inspect (any object; without a ChaCha ``bit_generator`` the answer is
        False).

    Returns
    -------
    bool
        Whether ``rng`` is such a generator.
    """
    try:
        from randomgen import ChaCha
    except ImportError:  # pragma: no cover - randomgen is a dependency
        return False
    bits = getattr(rng, "bit_generator", None)
    return isinstance(bits, ChaCha) and bits.state["state"]["rounds"] == SECURE_ROUNDS


def random_bytes(rng: np.random.Generator, shape) -> np.ndarray:
    """Uniform random uint8 array of ``shape``, whatever ``rng``'s bit generator.

    Drawn as full-range uint64 integers (``Generator.integers(0, 2^64 - 1, endpoint=True)``, which
    numpy fills with one ``next_uint64`` of the bit generator per word — 64 random bits for every
    bit generator, MT19937 composing two 32-bit outputs) and read as little-endian bytes. For
    PCG64, Philox and SFC64 these are the same words as ``bit_generator.random_raw`` returns, so
    seeded streams are unchanged; unlike ``random_raw``, it does not assume a 64-bit word.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator to draw from, whatever its bit generator.
    shape : int or tuple of int
        Shape of the returned uint8 array.

    Returns
    -------
    numpy.ndarray of uint8
        Bytes of the given shape.
    """
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    size = int(np.prod(shape, dtype=np.int64))
    words = rng.integers(0, _U64_MAX, size=-(-size // 8), dtype=np.uint64, endpoint=True)
    return words.astype("<u8", copy=False).view(np.uint8)[:size].reshape(shape)
