"""Who may do what: the admin token, submission codes, researcher tokens, and rate limits.

* The **admin token** (``reidrisk serve --admin-token`` or ``REIDRISK_ADMIN_TOKEN``) creates and
  changes surveys and issues and revokes credentials. It is compared in constant time and never
  stored.
* A **submission code** (one per person or institution, as a health authority issues them) is
  needed to send reports to its survey. Codes are revocable and rate-limited per code.
* A **researcher token** reads a survey's counts, distributions, tables, synthetic records and
  model; it cannot write.

Codes and tokens are random 256-bit strings shown once when issued; the database keeps only their
SHA-256 (``reidrisk.service.storage.hash_token``). All are sent as ``Authorization: Bearer ...``.
"""

from __future__ import annotations

import hmac
import threading
import time


class RateLimiter:
    """A token bucket per key: ``rate`` requests per second on average, bursts up to ``burst``.

    ``rate <= 0`` disables the limit. Buckets live in the server process (one process per
    database: ``reidrisk serve`` runs one worker).

    Parameters
    ----------
    rate : float
        Requests per second each key may make on average; ``<= 0``: no limit.
    burst : float, optional
        Bucket size, the most requests a rested key may make at once; ``None`` (default):
        ``max(1, 2 * rate)``.
    """

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else max(1.0, 2 * rate))
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str, now: float | None = None) -> tuple[bool, float]:
        """Take one request from ``key``'s bucket if it has one.

        Parameters
        ----------
        key : str
            Whose bucket (e.g. a submission code's id); a new key starts with a full bucket.
        now : float, optional
            The time in seconds (``time.monotonic()`` when ``None``, the default; tests pass it).

        Returns
        -------
        allowed : bool
            Whether the request may proceed (a token was taken).
        retry_after : float
            Seconds until the next request would be allowed; 0 when allowed.
        """
        if self.rate <= 0:
            return True, 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            level, last = self._buckets.get(key, (self.burst, now))
            level = min(self.burst, level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return True, 0.0
            self._buckets[key] = (level, now)
            return False, (1.0 - level) / self.rate


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header.

    Parameters
    ----------
    header : str or None
        The ``Authorization`` header's value (the scheme is matched case-insensitively).

    Returns
    -------
    str or None
        The token, stripped; None when the header is absent, not Bearer, or has no token.
    """
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_admin(token: str | None, admin_token: str | None) -> bool:
    """Whether ``token`` is the admin token, compared in constant time.

    Parameters
    ----------
    token : str or None
        The request's bearer token.
    admin_token : str or None
        The server's admin token; ``None`` or empty: no one is admin.

    Returns
    -------
    bool
        True only when both are non-empty and equal.
    """
    if not token or not admin_token:
        return False
    return hmac.compare_digest(token.encode(), admin_token.encode())
