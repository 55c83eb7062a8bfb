"""Latent class model: a mixture of K products of categorical distributions (Manrique-Vallier &
Reiter, JASA 2012, eq. 1), fitted by MAP-EM on raw records or through each attribute's LDP channel.

Design: docs/design/core.md#latent-class-model.

A world model beside ``reidrisk.copula``: log p(x) of records, c-way tables, sampling, versioned
JSON files.
"""

from reidrisk.latent.model import (
    K_GRID,
    LATENT_FORMAT,
    LATENT_VERSION,
    LatentClassModel,
    LatentError,
    LatentFit,
)

__all__ = ["K_GRID", "LATENT_FORMAT", "LATENT_VERSION", "LatentClassModel", "LatentError", "LatentFit"]
