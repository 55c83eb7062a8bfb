"""Pair estimates of many pairs in batches, on this machine or over a cluster's workers.

``estimate_pairs`` iterates the EM of every pair with equal table shapes as one stack; each pair
stops on its own rule and reads only its own (f_j, f_j') counts, so its table does not depend on
the other pairs of the stack. ``estimate_pairs_batched`` therefore splits the pairs into
consecutive batches of ``reidrisk.batches.BATCH_PAIRS`` and maps one batch function
(``estimate_pair_batch``: ``estimate_pairs`` of the batch) over them with
``reidrisk.batches.map_pairs``: in this process, or, inside a ``pair_map`` block with more than
``DISTRIBUTE_PAIRS`` pairs, on the workers of a cluster (the counts and the marginals are sent to
each worker once). The merged result equals ``estimate_pairs`` of all the pairs at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reidrisk.batches import map_pairs, split
from reidrisk.estimation.pairs import (
    PairCounts,
    PairEstimates,
    _checked_vectors,
    estimate_pairs,
)


def estimate_pair_batch(shared: tuple, pairs: list) -> PairEstimates:
    """``estimate_pairs`` of one batch of pairs (the unit of work of ``estimate_pairs_batched``).

    Parameters
    ----------
    shared : tuple
        ``(layout, estimator, options)``: the first two arguments of ``estimate_pairs`` and its
        keyword arguments (``layout``: the reports, or any object with their ``schema`` and
        ``mechanisms`` when the counts are among the options).
    pairs : list of (int, int)
        The batch's pairs, j < j'.

    Returns
    -------
    PairEstimates
        The estimates of the batch's pairs.
    """
    layout, estimator, options = shared
    return estimate_pairs(layout, estimator, pairs, **options)


def estimate_pairs_batched(layout, estimator: str, pairs: Iterable, *, counts: PairCounts,
                           marginals: Sequence, **options) -> PairEstimates:
    """``estimate_pairs(layout, estimator, pairs, counts=counts, marginals=marginals,
    **options)`` computed in batches of pairs (module doc), with the same result.

    Parameters
    ----------
    layout : RecordReports or object
        The reports, or any object with their ``schema`` and ``mechanisms`` (only those are read,
        as the counts are given); sent to every worker, so it should be small.
    estimator : {"em", "inversion", "norm_sub"}
        As in ``estimate_pairs``.
    pairs : iterable of (j, j')
        The pairs to estimate (each once, in either order).
    counts : PairCounts
        The Gram counts of the reports (``pair_counts`` or a sum of partitions' counts).
    marginals : sequence of FrequencyEstimate
        The marginal estimates the EM starts from, one per attribute (computed once here, not in
        every batch).
    **options
        The other keyword arguments of ``estimate_pairs`` (``stop``, ``max_iter``, ``shrink``...).

    Returns
    -------
    PairEstimates
        The estimates of every pair, as ``estimate_pairs`` gives them.

    Raises
    ------
    EstimationError
        As ``estimate_pairs``; marginals not one per attribute of its domain size are refused
        before any batch is sent.
    """
    plist = sorted({(min(int(j), int(k)), max(int(j), int(k))) for j, k in pairs})
    # checked here, before the batches go out, as estimate_pairs checks them
    _checked_vectors([getattr(m, "probs", None) for m in marginals], layout.mechanisms,
                     [a.name for a in layout.schema], "marginal estimates")
    shared = (layout, estimator, {**options, "counts": counts, "marginals": tuple(marginals)})
    if not plist:
        return estimate_pair_batch(shared, [])
    parts = map_pairs(estimate_pair_batch, shared, [plist[b] for b in split(len(plist))],
                      len(plist))
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    merged: dict = {k: {} for k in ("tables", "n_present", "iterations", "converged", "shrink")}
    for part in parts:
        for k, d in merged.items():
            d.update(getattr(part, k))
    return PairEstimates(merged["tables"], merged["n_present"], first.estimator,
                         merged["iterations"], merged["converged"], first.marginals, first.names,
                         merged["shrink"])


__all__ = ["estimate_pair_batch", "estimate_pairs_batched"]
