"""reidrisk.service.auth: the per-code token bucket and the bearer/admin checks."""

from reidrisk.service.auth import RateLimiter, bearer, is_admin


def test_token_bucket_by_hand():
    # rate 1 per second, burst 2: two requests at t = 0 empty the bucket; the third waits 1 s;
    # at t = 0.5 half a token has come back (wait 0.5 s more), at t = 1.0 a whole one
    lim = RateLimiter(1.0, burst=2)
    assert lim.allow("a", now=0.0) == (True, 0.0)
    assert lim.allow("a", now=0.0) == (True, 0.0)
    assert lim.allow("a", now=0.0) == (False, 1.0)
    assert lim.allow("a", now=0.5) == (False, 0.5)
    assert lim.allow("a", now=1.0) == (True, 0.0)
    assert lim.allow("b", now=1.0) == (True, 0.0)  # every key has its own bucket


def test_zero_rate_is_unlimited_and_default_burst_is_twice_the_rate():
    assert all(RateLimiter(0).allow("a", now=0.0)[0] for _ in range(100))
    assert RateLimiter(3.0).burst == 6.0 and RateLimiter(0.2).burst == 1.0


def test_bearer_header():
    assert bearer("Bearer abc ") == "abc"
    assert bearer("bearer abc") == "abc"
    for bad in (None, "", "Basic abc", "Bearer ", "Bearer"):
        assert bearer(bad) is None


def test_is_admin_needs_a_configured_token():
    assert is_admin("s3cret", "s3cret")
    assert not is_admin("s3cret", "other")
    assert not is_admin("s3cret", None) and not is_admin(None, "s3cret") and not is_admin("", "")
