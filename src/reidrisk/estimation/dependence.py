"""Chi-square statistics of pair independence from the Gram counts, many pairs at once.

The collection pipeline tests every pair (j, j') for dependence beyond the LDP noise
(``reidrisk.collect.pipeline``, module doc "Fallback"): with ``T`` the unbiased inversion of the
pair's support frequencies through the Kronecker channel, ``T = M_j^{-1} (W_jj' / n) M_j'^{-T}``
(paper 004 eq. 12-13 inverted), its row and column sums ``r``, ``c`` and the centring maps
``L_1 = I - r 1^T``, ``L_2 = I - 1 c^T``, the departure from independence is ``D = L_1 T L_2`` and
its covariance factors are ``K_1 = L_1 A_j L_1^T``, ``K_2 = L_2^T A_j' L_2`` (``A``: each
attribute's per-report second moment of the inversion vector), so

    stat = n tr(K_1^+ D K_2^+ D^T),   df = (f_j - 1)(f_j' - 1),

chi-square under independence: the quadratic form of ``D`` in the covariance
``K_1 (x) K_2 / n`` it has under independence (docs/design/collect.md#fallback).
``pair_statistics`` computes it for every pair of one shape in one stack of small matrices
(batched products and ``pinv``), instead of one pair at a time: the per-pair Python work dominated
the pipeline's fit at 200 attributes (19,900 pairs). The inversion ``T`` is the pair channels' own
(``reidrisk.estimation.frequency``: the closed form of ``M = a I + q 1 1^T`` where both channels
have it, a linear solve otherwise), the one the pair estimators use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk.estimation.frequency import _Channels, _mech_channel, _MechChannel
from reidrisk.mechanisms.base import Mechanism


@dataclass(frozen=True)
class PairStatistics:
    """Statistics of P pairs, aligned with the blocks given to ``pair_statistics``.

    Parameters
    ----------
    stat : numpy.ndarray (P,)
        The independence statistic of each pair.
    df : numpy.ndarray (P,)
        Its degrees of freedom, (f_j - 1)(f_j' - 1).
    departure : list of numpy.ndarray
        The departure from independence D (f_j, f_j') of each pair.
    noise : numpy.ndarray (P,)
        tr(K_1) tr(K_2): the summed variance of D times n.
    """

    stat: np.ndarray
    df: np.ndarray
    departure: list
    noise: np.ndarray


def pair_statistics(blocks: Sequence[np.ndarray], n_pair, mechanisms: Sequence[tuple[Mechanism, Mechanism]],
                    second: Sequence[tuple]) -> PairStatistics:
    """Independence statistics (module doc) of P pairs.

    Pairs of equal shape (and channel form) are stacked and computed together.

    Parameters
    ----------
    blocks : sequence of numpy.ndarray
        P support count blocks ``W_jj'`` (f_j, f_j').
    n_pair : array_like (P,)
        Reports having both attributes.
    mechanisms : sequence of tuple
        P pairs ``(mechanism_j, mechanism_j')``: the mechanisms whose exact support channels
        ``M_j``, ``M_j'`` are inverted.
    second : sequence of tuple
        P pairs ``(A_j, A_j')`` of second-moment matrices.

    Returns
    -------
    PairStatistics
        Statistic, degrees of freedom, departure and noise of every pair.
    """
    P = len(blocks)
    stat, df, noise = np.zeros(P), np.zeros(P, dtype=np.int64), np.zeros(P)
    departure: list = [None] * P
    chans: dict[int, _MechChannel] = {}  # one channel per mechanism, however many pairs it is in

    def channel(mech: Mechanism) -> _MechChannel:
        if id(mech) not in chans:
            chans[id(mech)] = _mech_channel(mech)
        return chans[id(mech)]

    pair_chans = [(channel(a), channel(b)) for a, b in mechanisms]
    groups: dict[tuple[int, int, bool], list[int]] = {}
    for i, W in enumerate(blocks):
        c1, c2 = pair_chans[i]
        f1, f2 = np.shape(W)
        groups.setdefault((int(f1), int(f2), bool(c1.structured and c2.structured)), []).append(i)
    n_pair = np.asarray(n_pair, dtype=np.float64)
    for (f1, f2, structured), idx in groups.items():
        W = np.stack([np.asarray(blocks[i], dtype=np.float64) for i in idx])
        n = n_pair[idx]
        T = _Channels.of_pairs([pair_chans[i][0] for i in idx], [pair_chans[i][1] for i in idx],
                               f1, f2, structured).inverse(W / n[:, None, None])
        A1 = np.stack([second[i][0] for i in idx])
        A2 = np.stack([second[i][1] for i in idx])
        r, c = T.sum(axis=2), T.sum(axis=1)
        L1 = np.eye(f1) - r[:, :, None]  # I - r 1^T
        L2 = np.eye(f2) - c[:, None, :]  # I - 1 c^T
        D = L1 @ T @ L2
        K1 = L1 @ A1 @ np.swapaxes(L1, 1, 2)
        K2 = np.swapaxes(L2, 1, 2) @ A2 @ L2
        K1p = np.linalg.pinv(K1, rcond=1e-12, hermitian=True)
        K2p = np.linalg.pinv(K2, rcond=1e-12, hermitian=True)
        X = K1p @ D @ K2p @ np.swapaxes(D, 1, 2)
        stat[idx] = n * np.trace(X, axis1=1, axis2=2)
        df[idx] = (f1 - 1) * (f2 - 1)
        noise[idx] = np.trace(K1, axis1=1, axis2=2) * np.trace(K2, axis1=1, axis2=2)
        for a, i in enumerate(idx):
            departure[i] = D[a]
    return PairStatistics(stat, df, departure, noise)


__all__ = ["PairStatistics", "pair_statistics"]
