"""``reidrisk pie``: information-theoretic re-identification risk bounds (paper 002).

* ``pie bound``: the PIE bound alpha (bits) of an LDP, GRR or GLH release at one or more budgets,
  and the Bayes-error lower bound it gives for n users (docs/design/pie.md#bayes-error,
  docs/design/pie.md#bounds-for-ldp-mechanisms).
* ``pie calibrate``: the largest epsilon (for GLH also the best hash range g) whose bound
  guarantees a target identification error for n users and a domain of K values.

Bad input is one line ``Error: ...`` naming the value (exit code 2), never a traceback.
"""

from __future__ import annotations

import json
import math

import click

from reidrisk._options import AliasedChoice, CommaList, flat


@click.group(name="pie")
def group() -> None:
    """Information-theoretic re-identification risk bounds (paper 002).

    How much epsilon can an LDP collection of n users afford so that an adversary's
    identification error stays above a target?
    """


def _positive(ctx, param, value):
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if v is not None and (not math.isfinite(v) or v <= 0):
            raise click.BadParameter(f"{v!r} is not a privacy budget; it must be finite and > 0 "
                                     "(e.g. 1.0)", ctx=ctx, param=param)
    return value


# k-ary randomized response is `grr` in every command (reidrisk.mechanisms' name); `rr`, the name
# these commands used first, is still accepted
_MECHANISMS = AliasedChoice(["grr", "glh", "ldp"], aliases={"rr": "grr"}, case_sensitive=False)


def _library_name(mechanism: str) -> str:
    """The command's mechanism name -> reidrisk.pie.bounds' name (``grr`` is ``rr`` there)."""
    return "rr" if mechanism == "grr" else mechanism


def _users_and_domain(f):
    """The -n/--users and -k/--domain options shared by ``bound`` and ``calibrate``."""
    f = click.option("-k", "--domain", type=click.IntRange(min=2), required=True,
                     help="Domain size |X| (number of possible personal data, e.g. regions).")(f)
    return click.option("-n", "--users", type=click.IntRange(min=2), required=True,
                        help="Number of users n (the prior over users is uniform).")(f)


def _fmt(x: float) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.6g}"


@group.command("bound")
@click.option("-e", "--epsilon", "epsilons", type=CommaList(click.FLOAT), multiple=True,
              required=True, callback=flat(_positive), metavar="EPS",
              help="Budget per release; repeat, or give a comma list, for several.")
@_users_and_domain
@click.option("-m", "--mechanism", type=_MECHANISMS, default="grr", show_default=True,
              help="ldp: any epsilon-LDP mechanism (Prop. 4.1); grr: k-ary randomized response "
                   "(Thm 4.2); glh: general local hashing (Thm 4.4).")
@click.option("-g", "--g", "g", type=click.IntRange(min=2), default=None,
              help="GLH hash range [default: max(2, round(e^eps + 1)), the LDP optimum].")
@click.option("-t", "--releases", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of releases per user, each with the same budget (Thms 4.3, 4.5).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def bound(epsilons, users, domain, mechanism, g, releases, as_json) -> None:
    """The PIE bound alpha (bits) and the adversary's Bayes-error lower bound at each budget.

    alpha bounds the mutual information I(U;Y) between the user and everything released about
    them; the identification error of any adversary is then at least 1 - (alpha + 1) / log2 n
    (Cor. 3.9). GRR and GLH are also epsilon-LDP, so the error bound uses the smaller of their
    own alpha and the LDP alpha (Prop. 4.1).
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.mechanisms.glh import optimal_g
    from reidrisk.pie import bounds

    mechanism = mechanism.lower()
    rows = []
    for eps in epsilons:
        gg = None
        if mechanism == "glh":
            gg = g if g is not None else optimal_g(eps)
        a = float(bounds.alpha(eps, users, domain, _library_name(mechanism), g=gg,
                               releases=releases))
        lam = None
        if mechanism == "grr":
            lam = float(bounds.lambda_rr(eps, domain))
        elif mechanism == "glh":
            lam = float(bounds.lambda_glh(eps, gg))
        rows.append({
            "epsilon": eps, "mechanism": mechanism, "g": gg, "releases": releases,
            "users": users, "domain": domain, "mi_loss": lam, "alpha_bits": a,
            "alpha_ldp_bits": float(bounds.alpha(eps, users, domain, "ldp", releases=releases)),
        })
        best = min(rows[-1]["alpha_bits"], rows[-1]["alpha_ldp_bits"])
        rows[-1].update({
            "certified_alpha_bits": best,
            "bayes_error_bound": float(bounds.bayes_error_bound(best, users)),
        })
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{mechanism.upper()} bound, n = {users} users, |X| = {domain}, "
               f"{releases} release(s) per user; log2 n = {math.log2(users):.4f} bits")
    head = ["epsilon"] + (["g"] if mechanism == "glh" else []) + \
        (["lambda"] if mechanism != "ldp" else []) + ["alpha (bits)", "LDP alpha (bits)",
                                                      "Bayes error >="]
    lines = []
    for r in rows:
        cells = [_fmt(r["epsilon"])]
        if mechanism == "glh":
            cells.append(str(r["g"]))
        if mechanism != "ldp":
            cells.append(_fmt(r["mi_loss"]))
        be = r["bayes_error_bound"]
        cells += [_fmt(r["alpha_bits"]), _fmt(r["alpha_ldp_bits"]),
                  f"{be:.4f}" if be > 0 else f"{be:.4f} (vacuous)"]
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    click.echo("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for cells in lines:
        click.echo("  ".join(c.rjust(w) for c, w in zip(cells, widths)))


@group.command("calibrate")
@click.option("--target-error", type=float, default=0.9, show_default=True,
              help="Identification error the adversary must not get below, in [0, 1).")
@_users_and_domain
@click.option("-m", "--mechanism", type=_MECHANISMS, default="grr", show_default=True,
              help="grr: k-ary randomized response (Thm 4.2), glh (Thm 4.4) or ldp (any "
                   "epsilon-LDP mechanism, Prop. 4.1).")
@click.option("-g", "--g", "g", type=click.IntRange(min=2), default=None,
              help="GLH: a fixed hash range [default: the best g in 2..--g-max].")
@click.option("--g-max", type=click.IntRange(min=2), default=None,
              help="GLH: the largest hash range searched [default: the domain size, at most "
                   "2^31 - 1].")
@click.option("-t", "--releases", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of releases per user, each with the budget printed.")
@click.option("--ldp-bound/--no-ldp-bound", default=True, show_default=True,
              help="Let Prop. 4.1 (valid for every epsilon-LDP mechanism) certify GRR/GLH too "
                   "when it allows a larger budget than their own theorem.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def calibrate_cmd(target_error, users, domain, mechanism, g, g_max, releases, ldp_bound,
                  as_json) -> None:
    """The largest epsilon that guarantees an identification error >= --target-error.

    Inverts the Bayes-error bound 1 - (alpha + 1) / log2 n (Cor. 3.9) with the PIE bound of the
    mechanism. For GLH without --g the hash range with the smallest expected l2 loss at its
    largest budget is chosen.
    """
    # kept off the command line's start: loaded only by this command
    from reidrisk.pie.bounds import calibrate

    if not (math.isfinite(target_error) and 0 <= target_error < 1):
        raise click.BadParameter(f"{target_error!r} is not an error rate in [0, 1) (e.g. 0.9)",
                                 param_hint="'--target-error'")
    mechanism = mechanism.lower()
    if mechanism != "glh" and (g is not None or g_max is not None):
        raise click.BadParameter(f"--g/--g-max apply to --mechanism glh only, not {mechanism!r}",
                                 param_hint="'--g'")
    c = calibrate(target_error, users, domain, _library_name(mechanism), g=g, g_max=g_max, releases=releases,
                  use_ldp_bound=ldp_bound)
    if as_json:
        d = c.to_dict()
        d["epsilon"] = None if math.isinf(c.epsilon) else c.epsilon
        click.echo(json.dumps(d, indent=2))
        return
    click.echo(f"target identification error >= {c.target_error:g}, n = {c.n} users, "
               f"|X| = {c.domain}, {c.releases} release(s) per user, {mechanism.upper()}")
    click.echo(f"  largest alpha allowed: {c.alpha_budget:.6g} bits "
               f"((1 - {c.target_error:g}) log2 n - 1)")
    if math.isinf(c.epsilon):
        click.echo("  epsilon: any budget meets the target (the bound never exceeds the allowance)")
    else:
        click.echo(f"  epsilon: {c.epsilon:.6g}" + (" per release" if c.releases > 1 else ""))
    if c.g is not None:
        click.echo(f"  g: {c.g}")
    if c.mi_loss is not None:
        click.echo(f"  lambda (MI loss): {c.mi_loss:.6g}")
    click.echo(f"  alpha at that epsilon: {c.alpha:.6g} bits; Bayes error >= {c.error_bound:.6f}")
    click.echo(f"  certified by: {_THEOREM[c.certified_by]}")


calibrate_cmd.name = "calibrate"

_THEOREM = {
    "ldp": "Prop. 4.1 (any epsilon-LDP mechanism)",
    "rr": "Thm 4.2/4.3 (randomized response)",
    "glh": "Thm 4.4/4.5 (general local hashing)",
}


# `pie pse` and `pie traces` (PSE from scores, Markov-chain matching of traces) live in their own
# module and are registered here.
from reidrisk.pie.empirical_cli import COMMANDS as _EMPIRICAL_COMMANDS  # noqa: E402

for _command in _EMPIRICAL_COMMANDS:
    group.add_command(_command)
