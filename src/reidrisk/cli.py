"""The ``reidrisk`` command: the main job (``demo``), schema tools, and one group per capability.

Capability packages add their commands without touching this file: if ``reidrisk.<capability>.cli``
exists and defines a click group named ``group``, it is registered as ``reidrisk <capability>``;
otherwise an empty placeholder group stands in its place.

The command starts at once: a capability's module (and ``reidrisk serve``'s) is imported only when
that command runs or its help is shown, and ``reidrisk --help`` lists them from ``CAPABILITIES``
without importing any. Every command imports NumPy, pandas and its capability's modules inside its
function, so no ``--help`` loads them (tests/test_cli.py; the start-up times are in
docs/results/cli_startup.md).

Errors a user can fix are translated here, once, for every subcommand (``user_errors()``): any
``ReidriskError`` (bad schema, budget, column, model file...; see ``reidrisk.errors``), a missing or
unreadable file (``OSError``) and a file pandas cannot parse are shown as one line ``Error: ...``
with exit code 2. Capability commands raise these errors and let them through. ``--debug`` (or
``REIDRISK_DEBUG=1``) shows the full traceback instead.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import click

from reidrisk import __version__
from reidrisk._options import CommaList, echo_json, flat, json_option, renamed_option
from reidrisk.errors import ReidriskError

#: capability -> its one-line help, shown by ``reidrisk --help`` without importing the capability
#: (the first sentence of the group's own help, which ``reidrisk <capability> --help`` shows)
CAPABILITIES: dict[str, str] = {
    "assess": "The disclosure-risk check of a data holder's own table: who is at risk of "
              "re-identification, how much, why, and what lowers it.",
    "collect": "Collect data under local differential privacy with missing values (paper 004).",
    "uniqueness": "Population uniqueness of records from sampled databases, raw or randomized with "
                  "LDP (paper 000).",
    "linkage": "Anonymization, linkage attacks and their scores (paper 001).",
    "pie": "Information-theoretic re-identification risk bounds (paper 002).",
}

#: ``reidrisk serve``, also loaded on first use: (module, attribute, one-line help)
SERVE = ("reidrisk.service.cli", "serve",
         "Run the collection service: surveys, submission codes, randomized reports, and "
         "researcher queries answered by the model of `reidrisk collect fit` (OpenAPI docs at "
         "/docs).")

EXIT_USER_ERROR = 2


class UserError(click.ClickException):
    """A problem with the user's input, shown as ``Error: <message>`` with exit code 2."""

    exit_code = EXIT_USER_ERROR


# the exceptions shown as one line: the package's own errors, then a file that cannot be read or
# parsed (UnicodeDecodeError and pandas' parse errors, ``user_errors``, are ValueErrors raised by
# the readers)
USER_ERRORS: tuple[type[BaseException], ...] = (ReidriskError, OSError, UnicodeDecodeError)


def user_errors() -> tuple[type[BaseException], ...]:
    """``USER_ERRORS`` and, once pandas is loaded, its parse errors (``EmptyDataError``,
    ``ParserError``): a command that never imported pandas cannot raise them, and the command line
    does not load pandas to name them.

    Returns
    -------
    tuple of exception types
        The errors shown as one line ``Error: ...``.
    """
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return USER_ERRORS
    return (*USER_ERRORS, pandas.errors.EmptyDataError, pandas.errors.ParserError)


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


class ReidriskGroup(click.Group):
    """The root group, the one place where user errors become a one-line message, and where
    commands are registered to load on first use.

    Any ``user_errors()`` error raised by a subcommand is shown as ``Error: ...`` with exit code 2.
    A command added with ``add_lazy_command`` is imported only when it is run or its help is asked
    for; the root's ``--help`` lists it with the one-line help given at registration.

    Parameters
    ----------
    name : str, optional
        The group's name.
    commands : dict or sequence of click.Command, optional
        Its first subcommands.
    **attrs
        The other options of ``click.Group`` (help, context settings, ...).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: name -> (one-line help, loader) of the commands not imported yet
        self.lazy_commands: dict[str, tuple[str, Callable[[], click.Command]]] = {}

    def add_lazy_command(self, name: str, short_help: str,
                         load: Callable[[], click.Command]) -> None:
        """Register ``name``: ``load()`` returns its click command, called on first use only.

        Parameters
        ----------
        name : str
            The subcommand's name.
        short_help : str
            The one-line help ``reidrisk --help`` shows for it (nothing is imported for that).
        load : callable
            No arguments; imports the command's module and returns the command.
        """
        self.commands.pop(name, None)
        self.lazy_commands[name] = (short_help, load)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The eager and the lazily loaded subcommands' names, sorted.

        Parameters
        ----------
        ctx : click.Context
            The group's context.

        Returns
        -------
        list of str
            Every subcommand's name; none is imported for this.
        """
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand ``cmd_name``, imported now if it was registered lazily.

        Parameters
        ----------
        ctx : click.Context
            The group's context.
        cmd_name : str
            The subcommand's name.

        Returns
        -------
        click.Command or None
            The command; None for an unknown name.
        """
        if cmd_name in self.lazy_commands:
            _, load = self.lazy_commands[cmd_name]
            self.commands[cmd_name] = load()
            del self.lazy_commands[cmd_name]
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of the help, each one's one-line help, without loading the lazy
        ones (same layout as click's).

        Parameters
        ----------
        ctx : click.Context
            The group's context.
        formatter : click.HelpFormatter
            Where the section is written.
        """
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:  # shortened as click shortens a loaded command's help
                command = click.Command(name, help=self.lazy_commands[name][0])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        """Run the subcommand; a ``user_errors()`` error becomes a ``UserError`` unless ``--debug``.

        Parameters
        ----------
        ctx : click.Context
            The root group's context (its ``debug`` parameter decides).

        Returns
        -------
        object
            What the subcommand returns.

        Raises
        ------
        UserError
            In place of any ``user_errors()`` error, with its message on one line.
        """
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # the reader of standard output went away (`reidrisk ... | head`): not the user's
            # error; click's own handling ends quietly with status 1
            raise
        except Exception as exc:
            if not isinstance(exc, user_errors()) or ctx.params.get("debug"):
                raise
            raise UserError(_message(exc)) from exc


@click.group(cls=ReidriskGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="reidrisk")
@click.option("--debug", is_flag=True, envvar="REIDRISK_DEBUG",
              help="Show full tracebacks instead of one-line error messages.")
def cli(debug: bool) -> None:
    """Re-identification risk, and collection of sensitive data under local differential privacy
    (LDP) when people skip questions.

    Start with `reidrisk demo`: it assesses a real table, releases it, collects it under LDP
    instead and measures the risk left, and writes an HTML report.
    """


# ---- demo ------------------------------------------------------------------------------------
# the defaults shown in `demo --help`: those of reidrisk.demo, which the run uses, written here so
# that the help does not import the demo (NumPy, pandas); tests/test_cli.py checks they agree
_DEFAULT_EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0)
_DEFAULT_MISSING_RATE = 0.3
_DEFAULT_N = 20_000


def _check_epsilons(ctx: click.Context, param: click.Parameter, value: tuple[float, ...]):
    for eps in value:
        if not math.isfinite(eps) or eps <= 0:
            raise click.BadParameter(
                f"{eps!r} is not a privacy budget; each --epsilon must be finite and > 0 (e.g. 1.0)",
                ctx=ctx, param=param,
            )
    return value


_DEFAULT_SAMPLE = 3_000
_DEFAULT_TARGET_ERROR = 0.5


@cli.command()
@click.option("--sweep", is_flag=True,
              help="Run the mechanism x budget sweep instead of the main job (implied by any of "
                   "--data, --schema, --epsilon, --mechanism, --rows, --missing-rate).")
@click.option("--sample", type=click.IntRange(min=200), default=None,
              help=f"Main job: people in the data holder's table, a sample of the shipped Adult "
                   f"extract's 10,000. [default: {_DEFAULT_SAMPLE}]")
@click.option("--target-error", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              default=None,
              help="Main job: the identification error the LDP budget must guarantee. "
                   f"[default: {_DEFAULT_TARGET_ERROR:g}]")
@click.option("--data", "data", type=click.Path(dir_okay=False, path_type=Path),
              help="Sweep: CSV or Parquet file of records (default: a built-in synthetic population).")
@click.option("--schema", "schema", type=click.Path(dir_okay=False, path_type=Path),
              help="Sweep: schema JSON for --data (see `reidrisk schema infer`); inferred when omitted.")
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reidrisk-report"), show_default=True, help="Folder the report is written to.")
@renamed_option("--out", "--output", "out", type=click.Path(file_okay=False, path_type=Path))
@click.option("-e", "--epsilon", "epsilons", type=CommaList(click.FLOAT), multiple=True,
              callback=flat(_check_epsilons), metavar="EPS",
              help="Sweep: whole-record budget; repeat, or give a comma list, for a sweep. [default: "
                   f"{' '.join(f'{e:g}' for e in _DEFAULT_EPSILONS)}]")
@click.option("-m", "--mechanism", "mechanisms", type=CommaList(click.STRING), multiple=True,
              callback=flat(), metavar="NAME",
              help="Sweep: mechanism to compare; repeat, or give a comma list, for several. "
                   "[default: every registered one]")
@click.option("-n", "--rows", "n", type=click.IntRange(min=2), default=None,
              help=f"Sweep: number of records (synthetic: size of the population [default: {_DEFAULT_N}]; "
                   "--data: a random sample of this many rows [default: all]).")
@click.option("--missing-rate", type=click.FloatRange(0.0, 1.0, max_open=True), default=None,
              help="Sweep: values removed completely at random before collection "
                   f"[default: {_DEFAULT_MISSING_RATE:g} for the synthetic population, 0 for --data].")
@renamed_option("--n", "--rows", "n", type=click.IntRange(min=2))
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every random draw.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress on standard error: a bar on a terminal, a plain line every few "
                   "seconds otherwise.")
@json_option
def demo(sweep, sample, target_error, data, schema, out, epsilons, mechanisms, n, missing_rate,
         seed, progress, as_json) -> None:
    """Run the main job on a real table and write an HTML report.

    On a sample of the UCI Adult extract shipped with reidrisk: assess the table's
    re-identification risk, release it k-anonymous and attack the release, collect the same
    attributes under LDP instead at the budget PIE certifies, and measure the risk that remains.
    With --sweep: every mechanism randomizes synthetic records at every budget and the report
    compares the estimated distributions with the truth.
    """

    # the demo's work (NumPy, pandas, every capability) loads only when it runs (start-up time)
    from reidrisk.data.io import check_output_path

    sweep = sweep or any(v not in (None, ()) for v in (data, schema, n, missing_rate)) \
        or bool(epsilons or mechanisms)
    if not sweep:
        check_output_path(out, kind="folder")  # before the work, not after it
        _run_story(out, sample, target_error, seed, progress, as_json)
        return
    if sample is not None or target_error is not None:
        raise click.UsageError("--sample and --target-error belong to the main job, not --sweep")
    # the sweep's modules (NumPy, pandas): kept off the command line's start
    from reidrisk.demo import DEFAULT_EPSILONS, run_demo

    if schema is not None and data is None:
        raise click.UsageError("--schema needs --data (the schema describes that file)")

    check_output_path(out, kind="folder")  # before the work, not after it
    result = run_demo(
        data=data,
        schema=schema,
        out=out,
        epsilons=epsilons or DEFAULT_EPSILONS,
        mechanisms=mechanisms or None,
        n=n,
        missing_rate=missing_rate,
        seed=seed,
        progress=progress,
        log=lambda msg: click.echo(msg, err=True),
    )
    if as_json:
        echo_json({"report": result.report, "seconds": result.seconds,
                   "measurements": result.table().to_dict(orient="records")})
        return
    click.echo(result.summary())
    click.echo(f"\nReport: {result.report}  ({result.seconds:.1f} s)")


def _story_json(story, page: Path, seconds: float) -> dict:
    """The main job's headline numbers (those of ``story_summary``) for ``demo --json``."""
    a, r, c, left = story.assessment, story.release, story.collection, story.remaining
    return {
        "report": page, "seconds": seconds, "people": story.n, "population": story.population,
        "seed": story.seed,
        "assess": {"k_anonymity": a.k_anonymity,
                   "records_at_risk": a.attackers["journalist"].records_at_risk,
                   "expected_reidentifications": a.expected_reidentifications,
                   "unique_in_population": int(story.truly_unique.sum())},
        "release": {"k": r.k_target, "rows_suppressed": r.rows_suppressed,
                    "attack_rates": {name: rate[0] for name, rate in r.attack_rates.items()}},
        "collection": {"epsilon": c.epsilon, "target_error": story.target_error,
                       "marginal_tv": c.marginal_tv, "uniform_tv": c.uniform_tv},
        "remaining": {"link_rate": left.link_rate,
                      "predicted_unique": float(left.p_unique.sum()),
                      "unique": int(left.truly_unique.sum())},
    }


def _run_story(out: Path, sample: int | None, target_error: float | None, seed: int,
               progress: bool, as_json: bool = False) -> None:
    """The main job (``reidrisk.story``) written to ``out``, its summary on standard output."""
    import time

    t0 = time.perf_counter()  # the imports below are part of the run's time
    loading = "0/4 loading the capabilities"
    click.echo(loading, err=True)
    # the report library and the capabilities: kept off the command line's start
    from reidrisk.report.progress import Stage

    with Stage(loading, enabled=progress):
        # the capabilities (NumPy, pandas, SciPy): kept off the command line's start
        from reidrisk.story import DEFAULT_SAMPLE, DEFAULT_TARGET_ERROR, run_story
        from reidrisk.story_report import story_summary, write_story

    story = run_story(sample=sample or DEFAULT_SAMPLE,
                      target_error=DEFAULT_TARGET_ERROR if target_error is None else target_error,
                      seed=seed, progress=progress, log=lambda msg: click.echo(msg, err=True))
    page = write_story(story, out)
    if as_json:
        echo_json(_story_json(story, page, time.perf_counter() - t0))
        return
    click.echo(story_summary(story))
    click.echo(f"\nReport: {page}  ({time.perf_counter() - t0:.1f} s)")


# ---- schema ----------------------------------------------------------------------------------

@cli.group()
def schema() -> None:
    """Create and inspect schemas (attributes, categories, bins)."""


@schema.command("infer")
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the schema JSON here (default: print it).")
@click.option("--numeric-bins", type=click.IntRange(min=2), default=8, show_default=True,
              help="Quantile bins for numeric columns with more distinct values than this.")
@click.option("--max-categories", type=click.IntRange(min=2), default=64, show_default=True,
              help="Refuse categorical columns with more distinct values than this.")
@click.option("-c", "--column", "columns", type=CommaList(click.STRING), multiple=True,
              callback=flat(), metavar="NAME",
              help="Only these columns (repeatable, each a comma list; default: all).")
def schema_infer(data, output, numeric_bins, max_categories, columns) -> None:
    """Infer a schema from DATA (CSV or Parquet): categorical columns keep their values, numeric
    columns are binned at quantiles. Review the result before collecting data with it."""
    # pandas loads only when the command runs (start-up time)
    from reidrisk.data.io import read_table
    from reidrisk.schema import Schema, SchemaError

    frame = read_table(data, columns=list(columns) or None)
    if len(frame) == 0:
        raise SchemaError(f"{str(data)!r} has a header but no rows; nothing to infer a schema from")
    inferred = Schema.infer(frame, numeric_bins=numeric_bins, max_categories=max_categories)
    if output is None:
        click.echo(json.dumps(inferred.to_dict(), indent=2))
        return
    inferred.save(output)
    sizes = ", ".join(f"{a.name} ({a.size})" for a in inferred)
    click.echo(f"Wrote {output}: {len(inferred)} attributes: {sizes}", err=True)


# ---- capability groups -----------------------------------------------------------------------

def _placeholder(name: str, help_text: str) -> click.Group:
    @click.group(name=name, help=f"{help_text}\n\nNo commands yet.")
    def group() -> None:
        pass

    return group


def load_capability(name: str, help_text: str) -> click.Command:
    """Import ``reidrisk.<name>.cli`` and return its click command ``group``.

    Parameters
    ----------
    name : str
        The capability (a package of ``reidrisk``).
    help_text : str
        Its help when the group has none; a capability without a ``cli`` module gets an empty
        placeholder group with this help.

    Returns
    -------
    click.Command
        The capability's group, or the placeholder.

    Raises
    ------
    ModuleNotFoundError
        An import error *inside* an existing ``cli`` module is not hidden.
    TypeError
        When the capability's ``cli`` module has no click command named ``group``.
    """
    module_name = f"reidrisk.{name}.cli"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name not in (module_name, f"reidrisk.{name}"):
            raise
        return _placeholder(name, help_text)
    group = getattr(module, "group", None)
    if not isinstance(group, click.Command):
        raise TypeError(f"{module_name} must define a click group named 'group'")
    if not group.help:
        group.help = help_text
    return group


def register_capabilities(root: click.Group = cli) -> None:
    """Register ``reidrisk.<capability>.cli:group`` for every capability that provides one.

    On the ``reidrisk`` command (a ``ReidriskGroup``) each capability is imported only when it is
    run or its help is asked for; on another click group they are imported now.

    Parameters
    ----------
    root : click.Group
        The group the capabilities are added to (default: the ``reidrisk`` command).

    Raises
    ------
    TypeError
        When a capability's ``cli`` module has no click command named ``group`` (on a lazy group,
        when it is first used).
    """
    for name, help_text in CAPABILITIES.items():
        if isinstance(root, ReidriskGroup):
            root.add_lazy_command(name, help_text, functools.partial(load_capability, name, help_text))
        else:
            root.add_command(load_capability(name, help_text), name)


register_capabilities()


def _load_serve() -> click.Command:
    """``reidrisk serve``: the collection service (``reidrisk.service.cli``), a top-level command
    (its module imports only click; the web stack loads when the command runs)."""
    module, attribute, _ = SERVE
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


cli.add_lazy_command("serve", SERVE[2], _load_serve)


def main(argv: list[str] | None = None) -> None:
    """Console entry point (``reidrisk``); exits the process with the command's status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``reidrisk``; ``None`` (default): ``sys.argv[1:]``.
    """
    cli.main(args=argv, prog_name="reidrisk")


if __name__ == "__main__":  # pragma: no cover
    main()
