"""Per-pair work in batches, mapped on this machine or over a cluster's workers.

The fits that follow the counts work pair by pair: a pair's EM reads its own (f_j, f_j') table
(``reidrisk.estimation.pairs``), a pair's copula correlation its own table and the two marginals
(``reidrisk.copula.pairs``). With g attributes there are g (g - 1) / 2 pairs (19,900 for g = 200),
each independent of the others, so the pairs are split into consecutive batches of at most
``BATCH_PAIRS`` and one batch function is mapped over them. There is one code path: on one machine
the map is Python's ``map`` in this process; with a cluster it is the mapper installed by
``pair_map`` (``reidrisk.collect.dask_counts.dask_pair_map`` sends the batches to Dask workers as
futures). Each batch's result does not depend on which other pairs share its batch (every step of
a pair reads only that pair's cells), so the batched fit equals the fit of all pairs in one batch,
wherever the batches run.

Mapping over a cluster pays a round trip (the shared inputs are sent once, each batch's inputs and
results travel), so it is used only when there are more than ``DISTRIBUTE_PAIRS`` pairs; fewer
pairs are mapped here even when a cluster mapper is installed. A mapper is a callable
``mapper(fn, shared, batches) -> list`` returning ``[fn(shared, b) for b in batches]`` in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

BATCH_PAIRS = 2_000
"""Pairs in one batch. Large enough that a batch's vectorized work (thousands of cells per array
operation) amortizes the per-call overhead of NumPy, small enough that 19,900 pairs (g = 200)
make 10 batches to share among workers."""

DISTRIBUTE_PAIRS = 2 * BATCH_PAIRS
"""An installed cluster mapper is used for more than this many pairs, i.e. more than two full
batches, so that at least two workers each get a full batch. With fewer pairs the client fits
them itself, and neither the counts (8 F^2 bytes) nor the batches travel; the per-pair fits of 200 attributes (19,900 pairs,
10 batches) are measured both ways in docs/results/scale.md."""

Mapper = Callable[[Callable, Any, Sequence], list]

_MAPPER: ContextVar[Mapper | None] = ContextVar("reidrisk_pair_mapper", default=None)


def local_map(fn: Callable, shared: Any, batches: Sequence) -> list:
    """``[fn(shared, b) for b in batches]`` in this process: the single-machine mapper.

    Parameters
    ----------
    fn : callable
        The batch function, ``fn(shared, batch)``.
    shared : object
        The inputs every batch reads (passed as they are).
    batches : sequence
        One item per batch.

    Returns
    -------
    list
        ``fn(shared, b)`` of every batch, in order.
    """
    return [fn(shared, b) for b in batches]


@contextlib.contextmanager
def pair_map(mapper: Mapper | None) -> Iterator[None]:
    """Within the block, per-pair batches of more than ``DISTRIBUTE_PAIRS`` pairs are mapped by
    ``mapper`` (None: in this process, as outside any block).

    Parameters
    ----------
    mapper : callable or None
        ``mapper(fn, shared, batches) -> [fn(shared, b) for b in batches]``, in order.

    Yields
    ------
    None
        Nothing; the mapper applies within the block.
    """
    token = _MAPPER.set(mapper)
    try:
        yield
    finally:
        _MAPPER.reset(token)


def split(n_items: int, size: int | None = None) -> list[slice]:
    """Consecutive slices of at most ``size`` items covering ``range(n_items)`` (none for 0).

    Parameters
    ----------
    n_items : int
        Number of items.
    size : int, optional
        Largest batch (default ``BATCH_PAIRS``).

    Returns
    -------
    list of slice
        The batches' index ranges, in order.
    """
    size = BATCH_PAIRS if size is None else size
    if int(size) < 1:
        raise ValueError(f"a batch holds at least one pair, got size {size}")
    return [slice(s, min(s + int(size), int(n_items))) for s in range(0, int(n_items), int(size))]


def map_pairs(fn: Callable, shared: Any, batches: Sequence, n_pairs: int) -> list:
    """``fn(shared, b)`` for every batch, in order: by the mapper of the enclosing ``pair_map``
    block when there is one and ``n_pairs`` exceeds ``DISTRIBUTE_PAIRS``, else by ``local_map``.

    Parameters
    ----------
    fn : callable
        A module-level function (it may be sent to another process), ``fn(shared, batch)``.
    shared : object
        What every batch reads (sent once to each worker by a cluster mapper).
    batches : sequence
        The batches' own inputs.
    n_pairs : int
        The number of pairs over all batches.

    Returns
    -------
    list
        ``fn(shared, b)`` of every batch, in order.
    """
    mapper = _MAPPER.get()
    if mapper is None or int(n_pairs) <= DISTRIBUTE_PAIRS or len(batches) < 2:
        return local_map(fn, shared, batches)
    out = list(mapper(fn, shared, batches))
    if len(out) != len(batches):
        raise RuntimeError(f"the pair mapper returned {len(out)} results for {len(batches)} "
                           "batches")
    return out


__all__ = ["BATCH_PAIRS", "DISTRIBUTE_PAIRS", "Mapper", "local_map", "map_pairs", "pair_map",
           "split"]
