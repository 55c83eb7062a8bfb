"""The counting kernel of ``pair_counts``: reports written straight into transposed row chunks and
added up by a symmetric rank-k update; every count must equal a brute-force count exactly."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import reidrisk.estimation.pairs as pairs_mod
from reidrisk.estimation import pair_counts
from reidrisk.mechanisms import GRR, OLH, OUE, ORappor, RecordReports, Subset
from reidrisk.schema import MISSING, Attribute, Schema


def _schema(sizes) -> Schema:
    return Schema(tuple(Attribute(f"a{j}", tuple(str(v) for v in range(f)))
                        for j, f in enumerate(sizes)))


class _DenseGRR(GRR):
    """GRR whose support is a dense array: a mechanism the kernel only knows by ``support``."""

    report_layout = None

    def support(self, reports):
        return np.asarray(super().support(reports).toarray(), dtype=np.float32)


KINDS = {"grr": GRR, "subset": Subset, "oue": OUE, "rappor": ORappor, "olh": OLH,
         "dense_grr": _DenseGRR}


def _reports(n, sizes, kinds, rng, missing=0.3, epsilon=1.5) -> RecordReports:
    codes = np.column_stack([rng.integers(0, f, n) for f in sizes]).astype(np.int32)
    codes[rng.random(codes.shape) < missing] = MISSING
    mechs = tuple(KINDS[k](epsilon, f) for k, f in zip(kinds, sizes))
    reps = tuple(m.perturb(codes[:, j], rng) for j, m in enumerate(mechs))
    return RecordReports(_schema(sizes), mechs, reps)


def _brute(rr: RecordReports) -> tuple[np.ndarray, np.ndarray]:
    """B^T B and P^T P in exact integer arithmetic from the mechanisms' own support matrices."""
    B = np.hstack([np.asarray(s.toarray() if sp.issparse(s) else s) != 0
                   for s in rr.supports()]).astype(np.int64)
    P = rr.present().astype(np.int64)
    return B.T @ B, P.T @ P


ALL = ["grr", "subset", "oue", "rappor", "olh", "dense_grr"]


@pytest.mark.parametrize("dense", [True, False, None])
@pytest.mark.parametrize("chunk", ["one", "many"])
def test_every_mechanism_kind_counts_exactly(monkeypatch, dense, chunk):
    """Mixed mechanisms (the kernel's own writers for GRR, subset, OUE, RAPPOR; the generic
    support path for OLH and a subclass overriding ``support``), missing values, chunks that do
    not divide n and a float32 accumulator flushed every 5 rows: every count is exact."""
    rng = np.random.default_rng(7)
    sizes = [3, 5, 2, 4, 6, 3, 2]
    kinds = ["grr", "subset", "oue", "rappor", "olh", "dense_grr", "subset"]
    rr = _reports(203, sizes, kinds, rng)
    if chunk == "many":
        F = sum(sizes)
        monkeypatch.setattr(pairs_mod, "_CHUNK_BYTES", 4 * (F + 1) * 11)  # 11 rows a chunk
        monkeypatch.setattr(pairs_mod, "_CHUNK_ROWS_MAX", 5)  # flush (and re-chunk) often
    pc = pair_counts(rr, dense=dense)
    gram, npair = _brute(rr)
    np.testing.assert_array_equal(pc.gram, gram)
    np.testing.assert_array_equal(pc.n_pair, npair)
    assert pc.n == 203
    np.testing.assert_array_equal(pc.offsets, np.concatenate([[0], np.cumsum(sizes)]))


@pytest.mark.parametrize("kind", ALL)
def test_each_kind_alone_with_a_missing_attribute(kind):
    """One kind at a time, with one attribute wholly missing (zero rows and zero presence)."""
    rng = np.random.default_rng(11)
    sizes = [4, 3, 5]
    rr = _reports(97, sizes, [kind] * 3, rng, missing=0.4)
    gone = rr.mechanisms[1]
    empty = gone.perturb(np.full(97, MISSING, dtype=np.int32), rng)
    rr = RecordReports(rr.schema, rr.mechanisms, (rr.reports[0], empty, rr.reports[2]))
    for dense in (True, False):
        pc = pair_counts(rr, dense=dense)
        gram, npair = _brute(rr)
        np.testing.assert_array_equal(pc.gram, gram)
        np.testing.assert_array_equal(pc.n_pair, npair)
        assert pc.n_present(1) == 0 and not pc.block(1, 1).any()


def test_no_reports_give_zero_counts():
    rng = np.random.default_rng(3)
    rr = _reports(0, [3, 2], ["grr", "oue"], rng)
    pc = pair_counts(rr)
    assert pc.n == 0 and pc.gram.shape == (5, 5) and not pc.gram.any() and not pc.n_pair.any()


def test_large_counts_stay_exact_past_float32_integers(monkeypatch):
    """The float32 accumulator is flushed to int64 every ``_CHUNK_ROWS_MAX`` rows (so no count in
    it passes 2^24, where float32 stops holding every integer). The bound is lowered to 64 rows
    here: with 1,000 rows the accumulator is flushed 15 times, and counts above 64 are sums of
    several flushes, which must add up exactly (a flush that kept or lost rows would show)."""
    monkeypatch.setattr(pairs_mod, "_CHUNK_ROWS_MAX", 64)
    rng = np.random.default_rng(5)
    rr = _reports(1000, [2, 2], ["grr", "oue"], rng, missing=0.0, epsilon=8.0)
    pc = pair_counts(rr, dense=True)
    gram, _ = _brute(rr)
    np.testing.assert_array_equal(pc.gram, gram)
    assert gram.max() > 64


def test_packed_unary_reports_count_like_their_bits():
    """Bit-packed unary reports (``PackedBits``) are unpacked a chunk at a time: the counts equal
    those of the same reports as a bit matrix."""
    from reidrisk.mechanisms import oue

    if not hasattr(oue, "PackedBits") or not hasattr(OUE, "perturb_packed"):
        pytest.skip("this version has no bit-packed unary reports")
    rng = np.random.default_rng(19)
    n, sizes = 150, [9, 4]
    codes = np.column_stack([rng.integers(0, f, n) for f in sizes]).astype(np.int32)
    codes[rng.random(codes.shape) < 0.3] = MISSING
    mechs = (OUE(1.0, 9), Subset(1.0, 4))
    packed = mechs[0].perturb_packed(codes[:, 0], np.random.default_rng(1))
    bits = mechs[0].perturb(codes[:, 0], np.random.default_rng(1))
    other = mechs[1].perturb(codes[:, 1], rng)
    a = pair_counts(RecordReports(_schema(sizes), mechs, (packed, other)), dense=True)
    b = pair_counts(RecordReports(_schema(sizes), mechs, (bits, other)), dense=True)
    np.testing.assert_array_equal(a.gram, b.gram)
    np.testing.assert_array_equal(a.n_pair, b.n_pair)
    assert a.n_present(0) == int((codes[:, 0] != MISSING).sum())
