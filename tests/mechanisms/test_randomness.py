"""Where the noise comes from: the secure default of clients, seeds for simulations, and random bits
that do not depend on the bit generator's type or word width."""

from __future__ import annotations

import numpy as np
import pytest
from mechanism_checks import ALPHA, GENERATORS, NAMES, assert_frequencies
from scipy import stats

from reidrisk.collect.baselines import LaplaceIndex, NegativeSurvey
from reidrisk.collect.protocol import Protocol
from reidrisk.mechanisms import (
    OUE,
    MechanismError,
    ORappor,
    RecordRandomizer,
    base,
    is_secure,
    make_mechanism,
    random_bytes,
    secure_generator,
)
from reidrisk.mechanisms.base import as_generator
from reidrisk.schema import MISSING, Attribute, Schema


# ---- random bits that do not depend on the bit generator ----------------------------------------
@pytest.mark.parametrize("gen", list(GENERATORS))
def test_random_bytes_are_uniform_at_every_position_of_a_word(gen):
    """Each of the 8 byte positions of a 64-bit word is uniform on 0..255: a chi-square over the
    8 x 256 counts (2040 degrees of freedom), Bonferroni over the generators. Reading MT19937's
    ``random_raw`` as bytes fails this at positions 4..7 (always 0)."""
    u = random_bytes(GENERATORS[gen](17), (40_000, 8))
    assert u.dtype == np.uint8
    counts = np.stack([np.bincount(u[:, j], minlength=256) for j in range(8)])
    stat = float(((counts - 40_000 / 256) ** 2 / (40_000 / 256)).sum())
    p = float(stats.chi2.sf(stat, 8 * 255))
    assert p > ALPHA / len(GENERATORS), f"{gen}: chi-square p-value {p:.2e}"


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.Philox, np.random.SFC64])
def test_random_bytes_keep_the_seeded_streams_of_64_bit_generators(bits):
    """For 64-bit bit generators the bytes are those of ``random_raw``: seeded simulations give the
    reports they gave before."""
    raw = np.random.Generator(bits(5)).bit_generator.random_raw(13).view(np.uint8)[:100]
    np.testing.assert_array_equal(random_bytes(np.random.Generator(bits(5)), 100), raw)


def test_random_bytes_shapes():
    rng = np.random.default_rng(0)
    assert random_bytes(rng, 5).shape == (5,)
    assert random_bytes(rng, (3, 7)).shape == (3, 7)
    assert random_bytes(rng, (0, 4)).shape == (0, 4)


@pytest.mark.parametrize("cls", (OUE, ORappor))
@pytest.mark.parametrize("gen", list(GENERATORS))
def test_unary_bits_do_not_depend_on_word_width(cls, gen):
    """The reproduction of the leak: OUE(1.0, 4) on 200,000 zeros under MT19937 gave the other bits
    frequency 1.0 on every odd row (q = 0.269). Every other bit, grouped by its byte position in
    the generator's 64-bit words, must be 1 with frequency q (Bonferroni over the 8 x 3 cells)."""
    n, k = 200_000, 4
    mech = cls(1.0, k)
    bits = mech.perturb(np.zeros(n, np.int64), GENERATORS[gen](1))
    assert_frequencies(bits[:, 0].reshape(-1, 2).mean(axis=0), np.full(2, mech.p_bit), n // 2,
                       f"{mech!r} ({gen}), bit x by row parity")
    others = bits[:, 1:].reshape(n // 2, 2, k - 1)  # cell (row, v) sits at byte 4 row + v mod 8
    freq = others.mean(axis=0)
    assert_frequencies(freq, np.full(freq.shape, mech.q_bit), n // 2,
                       f"{mech!r} ({gen}), other bits by byte position")


# ---- the secure generator -----------------------------------------------------------------------
def _chacha20_block(key_words: list[int], tail: list[int]) -> bytes:
    """The ChaCha20 block function of RFC 8439 section 2.3, written from the RFC: 16 words in
    (constants, key, counter/nonce), 20 rounds, the input added back, serialized little-endian."""
    m = 0xFFFFFFFF

    def rotl(v, c):
        return ((v << c) & m) | (v >> (32 - c))

    def quarter(s, a, b, c, d):
        s[a] = (s[a] + s[b]) & m
        s[d] = rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & m
        s[b] = rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & m
        s[d] = rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & m
        s[b] = rotl(s[b] ^ s[c], 7)

    init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key_words, *tail]
    s = list(init)
    for _ in range(10):
        for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            quarter(s, a, b, c, d)
    return np.array([(x + y) & m for x, y in zip(s, init)], dtype="<u4").tobytes()


def test_secure_generator_streams_the_chacha20_keystream():
    key = bytes(range(32))
    key_words = np.frombuffer(key, "<u4").tolist()
    # RFC 8439 section 2.3.2 test vector: counter 1, nonce 00000009 0000004a 00000000
    block = _chacha20_block(key_words, [1, 0x09000000, 0x4A000000, 0])
    assert block[:16].hex() == "10f1e7e4d13b5915500fdd1fa32071c4"
    assert block[-16:].hex() == "b5129cd1de164eb9cbd083e8a2503c4e"
    # the secure generator: this key, nonce 0, blocks 0, 1, 2 in order
    gen = secure_generator(key=int.from_bytes(key, "little"))
    assert is_secure(gen)
    stream = gen.bit_generator.random_raw(24).astype("<u8").tobytes()
    expected = b"".join(_chacha20_block(key_words, [c, 0, 0, 0]) for c in range(3))
    assert stream == expected


def test_default_generator_is_secure_and_fresh():
    a, b = as_generator(None), as_generator(None)
    assert is_secure(a) and is_secure(b)
    # two 256-bit keys from the OS: equal streams have probability 2^-256
    assert not np.array_equal(a.integers(0, 2**63, 4), b.integers(0, 2**63, 4))
    assert is_secure(secure_generator()) and not is_secure(np.random.default_rng(0))
    assert not is_secure(np.random.Generator(np.random.MT19937(0)))


def test_seeds_stay_reproducible_pcg64():
    """Simulations, benchmarks and tests keep their seeds: an int is numpy's default_rng."""
    g = as_generator(7)
    assert isinstance(g.bit_generator, np.random.PCG64) and not is_secure(g)
    np.testing.assert_array_equal(g.random(5), np.random.default_rng(7).random(5))
    np.testing.assert_array_equal(as_generator(np.random.SeedSequence(3)).random(3),
                                  np.random.default_rng(np.random.SeedSequence(3)).random(3))
    own = np.random.Generator(np.random.SFC64(1))
    assert as_generator(own) is own


@pytest.mark.parametrize("key", [-1, 1 << 256, 1.5, "abc", True])
def test_secure_generator_rejects_bad_keys(key):
    with pytest.raises(MechanismError, match="key must be an int in 0..2\\^256 - 1"):
        secure_generator(key=key)


# ---- every client entry point defaults to the secure generator ----------------------------------
@pytest.fixture
def spy(monkeypatch):
    """Replace the secure generator by a recorded one with a fixed key, so that a test sees both
    that the default path asked for it and that the reports were drawn from it."""
    calls = []

    def fake(key=None):
        calls.append(key)
        return secure_generator(key=12345)

    monkeypatch.setattr(base, "secure_generator", fake)
    return calls


SCHEMA = Schema((Attribute("a", ("x", "y", "z")), Attribute("b", tuple("abcde")),
                 Attribute("c", ("u", "v"))))
CODES = np.array([[0, 4, 1], [2, MISSING, 0], [1, 3, MISSING], [MISSING, 0, 1]] * 5, dtype=np.int32)


@pytest.mark.parametrize("name", NAMES + ("negative", "laplace_index"))
def test_perturb_defaults_to_the_secure_generator(spy, name):
    local = {"negative": NegativeSurvey, "laplace_index": LaplaceIndex}
    mech = local[name](1.0, 5) if name in local else make_mechanism(name, 1.0, 5)
    x = np.array([0, 4, MISSING, 2, 1, 3] * 10)
    got = mech.perturb(x)
    assert spy == [None]
    np.testing.assert_array_equal(got, mech.perturb(x, secure_generator(key=12345)))


def test_record_randomizer_defaults_to_the_secure_generator(spy):
    rr = RecordRandomizer(SCHEMA, "oue", 2.0)
    got = rr.randomize(CODES)
    assert spy == [None]
    again = rr.randomize(CODES, secure_generator(key=12345))
    for a, b in zip(got.reports, again.reports):
        np.testing.assert_array_equal(a, b)


def test_protocol_client_defaults_to_the_secure_generator(spy):
    proto = Protocol(2.0, attributes_per_person=2, mechanism="grr")
    got = proto.randomize(SCHEMA, CODES)
    assert spy == [None]
    again = proto.randomize(SCHEMA, CODES, secure_generator(key=12345))
    for a, b in zip(got.reports, again.reports):
        np.testing.assert_array_equal(a, b)
    proto.select(CODES != MISSING)
    assert spy == [None, None]
