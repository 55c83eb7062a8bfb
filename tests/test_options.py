"""reidrisk._options: a former option name or choice keeps working, hidden, with one note."""

from __future__ import annotations

import click
from click.testing import CliRunner

from reidrisk._options import AliasedChoice, renamed_option


@click.command()
@click.option("-n", "--rows", "n", type=int, default=7, show_default=True)
@renamed_option("--n", "--rows", "n", type=int)
@click.option("-m", type=AliasedChoice(["grr", "glh"], aliases={"rr": "grr"}), default="grr")
def probe(n, m):
    click.echo(f"n={n} m={m}")


def test_former_name_is_hidden_and_forwarded():
    runner = CliRunner()
    assert "--n " not in runner.invoke(probe, ["--help"]).output
    result = runner.invoke(probe, ["--n", "3"])
    assert result.exit_code == 0 and result.stdout == "n=3 m=grr\n"
    assert result.stderr == "Warning: --n is deprecated; use --rows.\n"
    assert runner.invoke(probe, []).stdout == "n=7 m=grr\n"


def test_former_and_new_name_together_are_refused():
    result = CliRunner().invoke(probe, ["--n", "3", "--rows", "4"])
    assert result.exit_code == 2 and "pass --rows only (--n is its deprecated name)" in result.output


def test_aliased_choice_converts_and_hides_the_former_value():
    runner = CliRunner()
    result = runner.invoke(probe, ["-m", "rr"])
    assert result.exit_code == 0 and result.stdout == "n=7 m=grr\n"
    assert "deprecated; use -m grr" in result.stderr
    assert "[grr|glh]" in runner.invoke(probe, ["--help"]).output
    assert runner.invoke(probe, ["-m", "xx"]).exit_code == 2


def test_comma_list_joins_repeated_lists_and_checks_each_item():
    from reidrisk._options import CommaList, flat

    seen = []

    @click.command()
    @click.option("-e", type=CommaList(click.FLOAT), multiple=True,
                  callback=flat(lambda ctx, param, v: seen.append(v) or v))
    def cmd(e):
        click.echo(repr(e))

    runner = CliRunner()
    assert runner.invoke(cmd, ["-e", "1,2", "-e", "4"]).stdout == "(1.0, 2.0, 4.0)\n"
    assert seen == [(1.0, 2.0, 4.0)]
    assert runner.invoke(cmd, []).stdout == "()\n"
    bad = runner.invoke(cmd, ["-e", "1,x"])
    assert bad.exit_code == 2 and "'x' is not a valid float" in bad.output
