"""The command line's one vocabulary: former option names and choices keep working, hidden.

docs/guide.md ("The command line") lists the convention: one option name per meaning. An option
that was renamed keeps its former name as a hidden alias, so no script breaks:

* ``renamed_option("--n", "--rows", "rows", type=int)`` decorates a command (below its
  ``@click.command``): the former name is accepted, prints one deprecation line on standard error
  and passes its value under the new name; passing both is a usage error (exit code 2).
* ``AliasedChoice(["grr", "glh"], aliases={"rr": "grr"})`` is a choice that also accepts former
  names of its values (not listed in ``--help``), converted to the new name.

Imports only click and the standard library: every command's ``--help`` loads this module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource


def deprecation_note(old: str, new: str) -> None:
    """Print the one line on standard error for a former name still in use.

    Parameters
    ----------
    old : str
        The former spelling the user typed (``--n``, ``--mechanism rr``).
    new : str
        The spelling to use instead.
    """
    click.echo(f"Warning: {old} is deprecated; use {new}.", err=True)


def renamed_option(old: str, new: str, dest: str, **attrs: Any) -> Callable[[Callable], Callable]:
    """Accept the former option name ``old`` (hidden) for the option ``new`` stored as ``dest``.

    Parameters
    ----------
    old : str
        The former option name, e.g. ``"--n"``; hidden from ``--help``.
    new : str
        The option's name now, e.g. ``"--rows"``, named in the deprecation line and the refusal.
    dest : str
        The command function's parameter both names fill.
    **attrs
        click option attributes of the former name (``type``, ``multiple``): give the new
        option's type so that the value is converted and checked the same way.

    Returns
    -------
    Callable
        A decorator for the command function, placed below ``@click.command``. Passing both names
        raises ``click.UsageError`` (exit code 2).
    """
    hidden_name = f"_renamed_{dest}_{old.lstrip('-').replace('-', '_')}"
    multiple = bool(attrs.get("multiple"))

    def decorator(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden_name)
            if value is None or (multiple and not value):
                return f(*args, **kwargs)
            ctx = click.get_current_context()
            if ctx.get_parameter_source(dest) not in (None, ParameterSource.DEFAULT):
                raise click.UsageError(f"pass {new} only ({old} is its deprecated name)")
            deprecation_note(old, new)
            kwargs[dest] = value
            return f(*args, **kwargs)

        return click.option(old, hidden_name, hidden=True, default=None,
                            help=f"Deprecated name of {new}.", **attrs)(wrapper)

    return decorator


class AliasedChoice(click.Choice):
    """A ``click.Choice`` that also takes former names of its values (hidden from ``--help``).

    Parameters
    ----------
    choices : sequence of str
        The values listed in ``--help``.
    aliases : mapping of str to str
        Former value -> the value it now is (one of ``choices``).
    case_sensitive : bool
        As ``click.Choice``'s; the aliases are then matched in lower case.
    """

    def __init__(self, choices: Sequence[str], aliases: Mapping[str, str],
                 case_sensitive: bool = True) -> None:
        super().__init__(list(choices), case_sensitive=case_sensitive)
        self.aliases = dict(aliases)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Convert a former value to its new one (with the deprecation line), else as a Choice.

        Parameters
        ----------
        value : Any
            The text given on the command line.
        param, ctx : click.Parameter or None, click.Context or None
            As for ``click.ParamType.convert``.

        Returns
        -------
        str
            One of the listed choices.
        """
        key = value.lower() if isinstance(value, str) and not self.case_sensitive else value
        if isinstance(key, str) and key in self.aliases:
            new = self.aliases[key]
            name = param.opts[-1] if param is not None and param.opts else "value"
            deprecation_note(f"{name} {value}", f"{name} {new}")
            return new
        return super().convert(value, param, ctx)


#: ``--json`` of every command that prints a summary: the same facts as one JSON object on standard
#: output, instead of the text
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print the summary as one JSON object on standard output instead "
                                "of text.")


def echo_json(summary: Mapping[str, Any]) -> None:
    """Print a command's summary as one JSON object on standard output.

    Parameters
    ----------
    summary : mapping
        JSON-serializable values; NumPy numbers and arrays are converted with ``tolist``/``item``.
    """
    import json  # standard library; only commands given --json need it

    def plain(value: Any) -> Any:
        if hasattr(value, "tolist"):
            return value.tolist()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"not JSON serializable: {value!r}")

    click.echo(json.dumps(dict(summary), indent=2, default=plain))


def output_option(help_text: str, dest: str = "output", **attrs: Any) -> Callable[[Callable], Callable]:
    """The required ``-o/--output`` of a command whose output was its last positional argument.

    The former positional form keeps working (not shown in the usage line), with the deprecation
    line; giving both is a usage error, and neither one the "Missing option" error.

    Parameters
    ----------
    help_text : str
        The option's help.
    dest : str
        The command function's parameter it fills.
    **attrs
        click attributes of both forms (``type``, ``metavar``).

    Returns
    -------
    Callable
        A decorator placed where the positional argument was (after the other arguments).
    """
    positional = f"_positional_{dest}"
    ptype = attrs.get("type")

    def decorator(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(positional)
            if value is not None:
                if kwargs.get(dest) is not None:
                    raise click.UsageError("pass the output once, as -o/--output (a last "
                                           "positional OUTPUT is its deprecated form)")
                deprecation_note("the positional OUTPUT", "-o/--output OUTPUT")
                kwargs[dest] = value
            if kwargs.get(dest) is None:
                raise click.UsageError("Missing option '-o' / '--output'.")
            return f(*args, **kwargs)

        inner = click.argument(positional, required=False, metavar="", type=ptype)(wrapper)
        return click.option("-o", "--output", dest, default=None, help=help_text + "  [required]",
                            **attrs)(inner)

    return decorator


class CommaList(click.ParamType):
    """A list option's value: one item or a comma list of them (``-e 1,2 -e 4``).

    Used with ``multiple=True`` and ``callback=flat(...)``, which joins the repeated lists into one
    tuple.

    Parameters
    ----------
    item : click.ParamType
        The type of each item (``click.FLOAT``, ``click.STRING``).
    """

    def __init__(self, item: click.ParamType) -> None:
        self.item = item
        self.name = f"{item.name} list"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Split on commas and convert each item.

        Parameters
        ----------
        value : Any
            The text given on the command line (a tuple when already converted).
        param, ctx : click.Parameter or None, click.Context or None
            As for ``click.ParamType.convert``.

        Returns
        -------
        tuple
            The converted items.
        """
        if isinstance(value, tuple):
            return value
        parts = [part.strip() for part in str(value).split(",")]
        if not all(parts):
            self.fail(f"{value!r} has an empty item; separate the items with single commas",
                      param, ctx)
        return tuple(self.item.convert(part, param, ctx) for part in parts)


def flat(callback: Callable | None = None) -> Callable:
    """The callback of a repeated ``CommaList`` option: one tuple of all items, then ``callback``.

    Parameters
    ----------
    callback : callable or None
        The option's own check, called as ``callback(ctx, param, items)``.

    Returns
    -------
    Callable
        A click option callback.
    """
    def joined(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        items = tuple(item for group in value or () for item in group)
        return callback(ctx, param, items) if callback is not None else items

    return joined
