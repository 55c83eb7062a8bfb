"""The command line: help, version, the demo job, schema inference, and clean errors for bad input."""

from __future__ import annotations

import json
import sys
import types

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from reidrisk import __version__
from reidrisk import cli as cli_module
from reidrisk.cli import cli
from reidrisk.schema import Attribute, Schema, SchemaError

SECTIONS = ("Overview", "Data", "Estimated distributions", "Error against budget", "Numbers",
            "Collection: contingency tables", "Population uniqueness", "Run parameters")
PNGS = ("distributions.png", "error_js.png", "error_tv.png", "collect_histograms.png", "collect_js.png",
        "uniqueness.png")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def small(tmp_path):
    """A small CSV with a missing value and its schema file."""
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame({
        "colour": rng.choice(["red", "green", "blue"], n),
        "size": rng.choice(["S", "M", "L", "XL"], n),
        "flag": rng.choice(["yes", "no"], n),
    })
    frame.loc[::7, "size"] = ""
    data = tmp_path / "small.csv"
    frame.to_csv(data, index=False)
    schema = Schema((Attribute("colour", ("red", "green", "blue")),
                     Attribute("size", ("S", "M", "L", "XL")),
                     Attribute("flag", ("yes", "no"))))
    schema_path = tmp_path / "schema.json"
    schema.save(schema_path)
    return data, schema_path, schema


def _assert_clean_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("Error")]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---- help and version ------------------------------------------------------------------------

def test_root_help_lists_every_command(runner):
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in ("demo", "schema", "collect", "uniqueness", "linkage", "pie", "--version", "--debug"):
        assert name in result.output


def test_version(runner):
    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def _all_commands(group: click.Group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the lazily registered commands too
        cmd = group.get_command(ctx, name)
        yield prefix + (name,)
        if isinstance(cmd, click.Group):
            yield from _all_commands(cmd, prefix + (name,))


# run in a fresh interpreter: --help and --version, then every group's and command's --help, each
# followed by the heavy libraries it loaded (none expected: the command line starts at once)
_STARTUP_PROBE = """
import json, sys
import click
HEAVY = ("numpy", "pandas", "scipy", "matplotlib")
from reidrisk.cli import cli
def run(args):
    try:
        cli.main(args=args, prog_name="reidrisk", standalone_mode=False)
    except SystemExit:
        pass
    return [m for m in HEAVY if m in sys.modules]
out = {"--help": run(["--help"]), "--version": run(["--version"])}
def walk(group, path):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        out[" ".join([*path, name, "--help"])] = run([*path, name, "--help"])
        if isinstance(command, click.Group):
            walk(command, [*path, name])
walk(cli, [])
print(json.dumps(out))
"""


def test_help_and_version_load_no_heavy_library():
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _STARTUP_PROBE], capture_output=True, text=True,
                          check=True)
    loaded = json.loads(proc.stdout.splitlines()[-1])
    for command in ("--help", "--version", "collect fit --help", "serve --help", "assess --help",
                    "pie traces --help", "uniqueness score --help", "linkage evaluate --help",
                    "demo --help", "schema infer --help"):
        assert command in loaded, f"the probe did not reach `reidrisk {command}`"
    # the first command to load a library names it (one process: later ones find it loaded)
    heavy = {command: libs for command, libs in loaded.items() if libs}
    assert not heavy, f"these commands load heavy libraries at start-up: {heavy}"


def test_root_help_lists_lazy_commands_with_their_own_first_line():
    """The one-line help `reidrisk --help` shows without importing a command is the one the
    command shows once loaded."""
    root = cli_module.ReidriskGroup("root")
    cli_module.register_capabilities(root)
    root.add_lazy_command("serve", cli_module.SERVE[2], cli_module._load_serve)
    names = list(root.lazy_commands)
    listed = {name: click.Command(name, help=text).get_short_help_str(200)
              for name, (text, _) in root.lazy_commands.items()}
    ctx = click.Context(root)
    for name in names:
        own = root.get_command(ctx, name).get_short_help_str(200)
        assert listed[name] == own, (
            f"`reidrisk --help` lists {name!r} as {listed[name]!r} but its own help begins "
            f"{own!r}: make reidrisk.cli.CAPABILITIES (or SERVE) agree with it")


# ---- one vocabulary (docs/guide.md, "The command line") -------------------------------------
_VOCAB_PATHS = list(_all_commands(cli))
# former spellings: accepted as hidden aliases, never listed in --help
_FORMER = {"--n": "-n/--rows", "--out": "-o/--output", "--k": "-k/--domain or a named option"}


def _options(path):
    ctx = click.Context(cli)
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, name)
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


@pytest.mark.parametrize("path", _VOCAB_PATHS, ids=" ".join)
def test_every_command_speaks_one_vocabulary(path):
    for option in _options(path):
        names = set(option.opts) | set(option.secondary_opts)
        for old, new in _FORMER.items():
            assert old not in names, f"`reidrisk {' '.join(path)}` lists {old}; use {new}"
        if "-k" in names:
            assert "--domain" in names, f"-k means a domain size only: {option.opts}"
        if "-n" in names:
            assert names & {"--rows", "--users"}, f"-n is a count of rows (or PIE's users): {option.opts}"
        if "-N" in names or "--population" in names:
            assert {"-N", "--population"} <= names, option.opts
        if "-o" in names or "--output" in names:
            assert {"-o", "--output"} <= names, option.opts


@pytest.mark.parametrize("path", _VOCAB_PATHS, ids=" ".join)
def test_every_seed_states_its_default(path):
    for option in _options(path):
        if option.name == "seed":
            assert option.show_default or "default:" in (option.help or ""), (
                f"`reidrisk {' '.join(path)} --seed` does not say what it does when omitted")


# commands that print no summary of their own: a service, and schema infer (it prints JSON already)
_NO_SUMMARY = {("schema", "infer"), ("serve",)}


@pytest.mark.parametrize("path", [p for p in _VOCAB_PATHS if p not in _NO_SUMMARY], ids=" ".join)
def test_every_command_that_prints_a_summary_has_json(path):
    ctx = click.Context(cli)
    command: click.Command = cli
    for name in path:
        command = command.get_command(ctx, name)  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        return
    assert "--json" in {o for option in _options(path) for o in option.opts}, (
        f"`reidrisk {' '.join(path)}` prints a summary but has no --json")


def test_demo_json_is_the_text_summary_as_numbers(runner, tmp_path):
    args = ["demo", "--sample", "300", "--no-progress"]
    text = runner.invoke(cli, [*args, "-o", str(tmp_path / "t")])
    data = runner.invoke(cli, [*args, "-o", str(tmp_path / "j"), "--json"])
    assert text.exit_code == data.exit_code == 0, text.output + data.output
    summary = json.loads(data.stdout)
    assert summary["report"] == str(tmp_path / "j" / "index.html")
    assert summary["people"] == 300 and summary["seed"] == 0
    assert f"k = {summary['assess']['k_anonymity']}," in text.stdout
    assert f"{summary['release']['rows_suppressed']:,} rows deleted" in text.stdout
    assert f"at epsilon {summary['collection']['epsilon']:.3g} " in text.stdout


def _parse(path, args):
    """The parameters `reidrisk PATH ARGS` would run with (parsed, not run)."""
    ctx = click.Context(cli)
    command: click.Command = cli
    for name in path:
        command = command.get_command(ctx, name)  # type: ignore[attr-defined]
    return command.make_context(" ".join(path), list(args)).params


@pytest.mark.parametrize("path, args, name, want", [
    (("demo",), ["-e", "1,2", "-e", "4"], "epsilons", (1.0, 2.0, 4.0)),
    (("demo",), ["-m", "grr,oue", "-m", "subset"], "mechanisms", ("grr", "oue", "subset")),
    (("schema", "infer"), ["d.csv", "-c", "a,b", "-c", "c"], "columns", ("a", "b", "c")),
    (("pie", "bound"), ["-e", "0.5,3", "-n", "10", "-k", "4"], "epsilons", (0.5, 3.0)),
    (("uniqueness", "score"), ["-N", "5", "--db", "x", "--records", "y", "-T", "1,5", "-T", "9"],
     "thresholds", (1.0, 5.0, 9.0)),
    (("linkage", "evaluate"), ["--original", "x.csv", "--release", "y.csv", "--qi", "a,b", "--qi", "c",
                               "--sa", "d"], "qi", ["a", "b", "c"]),
    (("collect", "table"), ["m.json", "-o", "t.csv", "-c", "A1,A2", "-c", "A3"], "columns",
     ("A1,A2", "A3")),  # split by the command itself
])
def test_every_list_option_repeats_and_takes_comma_lists(path, args, name, want):
    assert _parse(path, args)[name] == want


def test_a_comma_list_item_is_checked_like_a_single_value():
    with pytest.raises(click.BadParameter, match="not a privacy budget"):
        _parse(("demo",), ["-e", "1,-2"])
    with pytest.raises(click.BadParameter, match="empty item"):
        _parse(("demo",), ["-e", "1,,2"])


@pytest.mark.parametrize("args, new", [
    (["collect", "plan", "--n", "30000"], "--rows"),
    (["collect", "table", "--n", "5"], "--rows"),
    (["collect", "synth", "--n", "5"], "--rows"),
])
def test_former_count_spelling_still_parses(args, new):
    """The former name is hidden but still accepted; here it is parsed, then the command stops at
    the missing inputs (not at an unknown option)."""
    result = CliRunner().invoke(cli, args)
    assert "No such option" not in result.output, result.output


def test_former_and_new_spelling_together_is_refused(small):
    _, schema_path, _ = small
    result = CliRunner().invoke(cli, ["collect", "plan", "--schema", str(schema_path), "-e", "5",
                                      "--n", "100", "--rows", "200"])
    _assert_clean_error(result, "--rows", "--n")


def test_former_count_spelling_warns_and_works(small):
    _, schema_path, _ = small
    old = CliRunner().invoke(cli, ["collect", "plan", "--schema", str(schema_path), "-e", "5",
                                   "--n", "3000"])
    new = CliRunner().invoke(cli, ["collect", "plan", "--schema", str(schema_path), "-e", "5",
                                   "--rows", "3000"])
    assert old.exit_code == new.exit_code == 0, old.output
    assert "Warning: --n is deprecated; use --rows." in old.stderr
    assert old.stdout == new.stdout


@pytest.mark.parametrize("path", list(_all_commands(cli)), ids=" ".join)
def test_every_command_has_help(runner, path):
    result = runner.invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output and "--help" in result.output


def test_demo_help_documents_the_options(runner):
    result = runner.invoke(cli, ["demo", "--help"])
    for option in ("--data", "--schema", "--output", "--epsilon", "--mechanism", "--rows", "--missing-rate",
                   "--seed", "--no-progress"):
        assert option in result.output


# ---- the demo ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_demo_small_writes_the_report(runner, tmp_path):
    out = tmp_path / "report"
    result = runner.invoke(cli, ["demo", "--n", "2000", "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in SECTIONS:
        assert f"<h2>{title}</h2>" in page
    for png in PNGS:
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
        assert f'src="{png}"' in page
    assert "single attributes" in result.output and "pairs of attributes" in result.output
    assert str(out / "index.html") in result.output


@pytest.mark.slow
def test_demo_on_a_file_with_its_schema(runner, small, tmp_path, fast_collect_section):
    data, schema_path, _ = small
    out = tmp_path / "rep"
    result = runner.invoke(cli, ["demo", "--data", str(data), "--schema", str(schema_path), "--output",
                                 str(out), "-m", "grr", "-e", "1", "-e", "8", "--seed", "5"])
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert "small.csv" in page and "colour" in page
    summary = [ln for ln in result.output.splitlines() if ln.startswith("grr")]
    assert len(summary) == 2  # one row in the marginal block, one in the pair block
    assert all(len(ln.split()) == 3 for ln in summary)  # mechanism + two budgets


@pytest.mark.slow
def test_demo_infers_the_schema_when_omitted(runner, small, tmp_path, fast_collect_section):
    data, _, _ = small
    result = runner.invoke(cli, ["demo", "--data", str(data), "--output", str(tmp_path / "r"),
                                 "-m", "grr", "-e", "4"])
    assert result.exit_code == 0, result.output
    assert "Inferred a schema of 3 attributes" in result.output


# ---- bad input: one clean line, exit code 2 -------------------------------------------------------

def test_missing_data_file(runner, tmp_path):
    missing = tmp_path / "nope.csv"
    result = runner.invoke(cli, ["demo", "--data", str(missing), "--output", str(tmp_path / "r")])
    _assert_clean_error(result, "nope.csv", "does not exist")
    assert not (tmp_path / "r").exists()


def test_missing_schema_file(runner, small, tmp_path):
    data, _, _ = small
    result = runner.invoke(cli, ["demo", "--data", str(data), "--schema", str(tmp_path / "s.json")])
    _assert_clean_error(result, "s.json", "does not exist")


def test_schema_column_absent_from_the_data(runner, small, tmp_path):
    data, _, schema = small
    other = Schema((*schema.attributes, Attribute("height", ("short", "tall"))))
    other.save(tmp_path / "other.json")
    result = runner.invoke(cli, ["demo", "--data", str(data), "--schema", str(tmp_path / "other.json"),
                                 "--output", str(tmp_path / "r")])
    _assert_clean_error(result, "height")


def test_unknown_category_in_the_data(runner, small, tmp_path):
    data, schema_path, _ = small
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    frame.loc[5, "colour"] = "purple"
    frame.to_csv(data, index=False)
    result = runner.invoke(cli, ["demo", "--data", str(data), "--schema", str(schema_path),
                                 "--output", str(tmp_path / "r")])
    _assert_clean_error(result, "colour", "purple")


@pytest.mark.parametrize("eps", ["0", "-1", "inf", "nan"])
def test_epsilon_must_be_positive_and_finite(runner, eps, tmp_path):
    result = runner.invoke(cli, ["demo", "--epsilon", eps, "--output", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "--epsilon" in result.output and "finite and > 0" in result.output
    assert not (tmp_path / "r").exists()


def test_empty_data_file(runner, tmp_path):
    data = tmp_path / "empty.csv"
    data.write_text("")
    result = runner.invoke(cli, ["demo", "--data", str(data), "--output", str(tmp_path / "r")])
    _assert_clean_error(result, "empty.csv", "empty")


def test_header_only_data_file(runner, small, tmp_path):
    _, schema_path, _ = small
    data = tmp_path / "header.csv"
    data.write_text("colour,size,flag\n")
    result = runner.invoke(cli, ["demo", "--data", str(data), "--schema", str(schema_path)])
    _assert_clean_error(result, "no rows")


def test_unknown_mechanism(runner, tmp_path):
    result = runner.invoke(cli, ["demo", "-m", "laplace", "--output", str(tmp_path / "r")])
    _assert_clean_error(result, "laplace", "grr")


def test_schema_without_data_is_a_usage_error(runner, small):
    _, schema_path, _ = small
    result = runner.invoke(cli, ["demo", "--schema", str(schema_path)])
    assert result.exit_code == 2
    assert "--schema needs --data" in result.output


def test_debug_shows_the_original_exception(runner, small, tmp_path):
    data, schema_path, _ = small
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    frame.loc[0, "flag"] = "maybe"
    frame.to_csv(data, index=False)
    args = ["demo", "--data", str(data), "--schema", str(schema_path), "--output", str(tmp_path / "r")]
    result = runner.invoke(cli, ["--debug", *args])
    assert isinstance(result.exception, SchemaError)
    assert result.exit_code == 1


def test_a_closed_output_pipe_is_not_reported_as_an_error(runner):
    # `reidrisk uniqueness score ... | head` closes the pipe while the CSV is written
    group = cli_module.ReidriskGroup("root")

    @group.command("write")
    def write() -> None:
        raise BrokenPipeError(32, "Broken pipe")

    result = runner.invoke(group, ["write"])
    assert result.exit_code == 1
    assert "Error" not in result.output and "Broken pipe" not in result.output


# ---- schema infer -----------------------------------------------------------------------------

def test_schema_infer_writes_a_loadable_schema(runner, small, tmp_path):
    data, _, _ = small
    target = tmp_path / "inferred.json"
    result = runner.invoke(cli, ["schema", "infer", str(data), "-o", str(target)])
    assert result.exit_code == 0, result.output
    schema = Schema.load(target)
    assert schema.names == ["colour", "size", "flag"]
    assert set(schema["size"].categories) == {"S", "M", "L", "XL"}  # "" is missing, not a category
    # and the inferred schema encodes the file it came from
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    assert (schema.encode(frame)[:, 1] == -1).sum() == (frame["size"] == "").sum()


def test_schema_infer_prints_json_without_output(runner, small):
    data, _, _ = small
    result = runner.invoke(cli, ["schema", "infer", str(data), "-c", "flag"])
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert [a["name"] for a in doc["attributes"]] == ["flag"]


def test_schema_infer_missing_file(runner, tmp_path):
    result = runner.invoke(cli, ["schema", "infer", str(tmp_path / "none.csv")])
    _assert_clean_error(result, "none.csv")


def test_schema_infer_too_many_categories(runner, tmp_path):
    data = tmp_path / "ids.csv"
    pd.DataFrame({"id": [f"x{i}" for i in range(100)]}).to_csv(data, index=False)
    result = runner.invoke(cli, ["schema", "infer", str(data), "--max-categories", "10"])
    _assert_clean_error(result, "'id'", "max_categories")


# ---- capability registration ------------------------------------------------------------------

def test_capability_cli_module_is_registered(monkeypatch):
    @click.group()
    def group():
        """Fake capability."""

    @group.command()
    def hello():
        click.echo("hi")

    fake = types.ModuleType("reidrisk.collect.cli")
    fake.group = group
    monkeypatch.setitem(sys.modules, "reidrisk.collect.cli", fake)
    root = click.Group("root")
    cli_module.register_capabilities(root)
    assert root.commands["collect"] is group
    assert set(root.commands) == set(cli_module.CAPABILITIES)
    result = CliRunner().invoke(root, ["collect", "hello"])
    assert result.output == "hi\n"


def test_missing_capability_gets_an_empty_group(monkeypatch):
    monkeypatch.setattr(cli_module, "CAPABILITIES", {"nosuchcapability": "Nothing here."})
    root = click.Group("root")
    cli_module.register_capabilities(root)
    placeholder = root.commands["nosuchcapability"]
    assert isinstance(placeholder, click.Group) and not placeholder.commands
    assert "No commands yet" in CliRunner().invoke(root, ["nosuchcapability", "--help"]).output


def test_capabilities_load_on_first_use(monkeypatch):
    loaded = []
    monkeypatch.setattr(cli_module, "CAPABILITIES", {"nosuchcapability": "Nothing here."})
    monkeypatch.setattr(cli_module, "load_capability",
                        lambda name, text: loaded.append(name) or cli_module._placeholder(name, text))
    root = cli_module.ReidriskGroup("root")
    cli_module.register_capabilities(root)
    assert not root.commands and not loaded
    listing = CliRunner().invoke(root, ["--help"]).output
    assert "nosuchcapability  Nothing here." in listing and not loaded
    assert "No commands yet" in CliRunner().invoke(root, ["nosuchcapability", "--help"]).output
    assert loaded == ["nosuchcapability"]
    assert "nosuchcapability" in root.commands


def test_assess_has_a_placeholder_until_its_cli_exists():
    result = CliRunner().invoke(cli, ["assess", "--help"])
    assert result.exit_code == 0, result.output
    assert "disclosure-risk check of a data holder's own table" in " ".join(result.output.split())


def test_broken_lazy_capability_is_not_hidden_when_used(monkeypatch):
    def fail(name):
        raise ModuleNotFoundError("No module named 'somedependency'", name="somedependency")

    root = cli_module.ReidriskGroup("root")
    cli_module.register_capabilities(root)  # nothing imported yet
    monkeypatch.setattr(cli_module.importlib, "import_module", fail)
    result = CliRunner().invoke(root, ["pie", "--help"])
    assert isinstance(result.exception, ModuleNotFoundError)
    assert "somedependency" in str(result.exception)


def test_broken_capability_module_is_not_hidden(monkeypatch):
    def fail(name):
        raise ModuleNotFoundError("No module named 'somedependency'", name="somedependency")

    monkeypatch.setattr(cli_module.importlib, "import_module", fail)
    with pytest.raises(ModuleNotFoundError, match="somedependency"):
        cli_module.register_capabilities(click.Group("root"))


def test_main_entry_point(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_module.main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize("content, fragment", [
    (b"a,b\n1,2\n3,4,5\n", "not a well-formed CSV"),
    (b"\x00\x01\xff\xfe binary \xc3\x28", "not a UTF-8 text table"),
])
def test_ragged_and_binary_csv_name_the_file(runner, tmp_path, content, fragment):
    path = tmp_path / "input.csv"
    path.write_bytes(content)
    for args in (["schema", "infer", str(path)], ["demo", "--data", str(path), "--output", str(tmp_path / "r")]):
        _assert_clean_error(runner.invoke(cli, args), "input.csv", fragment)


def test_write_error_names_the_users_file(runner, small, tmp_path, monkeypatch):
    import errno

    data, _, _ = small

    def full_disk(self, target, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    target = tmp_path / "scores.csv"
    result = runner.invoke(cli, ["uniqueness", "score", "-N", "4000", "--db", str(data), "--records",
                                 str(data), "-o", str(target)])
    _assert_clean_error(result, "No space left on device", str(target))
    assert ".tmp" not in result.output


def test_demo_help_states_the_defaults_the_run_uses(runner):
    from reidrisk.demo import DEFAULT_EPSILONS, DEFAULT_MISSING_RATE, DEFAULT_N

    text = " ".join(runner.invoke(cli, ["demo", "--help"]).output.split())
    assert f"[default: {' '.join(f'{e:g}' for e in DEFAULT_EPSILONS)}]" in text
    assert f"[default: {DEFAULT_N}]" in text
    assert f"[default: {DEFAULT_MISSING_RATE:g} for the synthetic population" in text


def test_demo_help_states_the_main_jobs_defaults(runner):
    from reidrisk.story import DEFAULT_SAMPLE, DEFAULT_TARGET_ERROR

    text = " ".join(runner.invoke(cli, ["demo", "--help"]).output.split())
    assert f"[default: {DEFAULT_SAMPLE}]" in text
    assert f"[default: {DEFAULT_TARGET_ERROR:g}]" in text
    assert "--sweep" in text


@pytest.mark.parametrize("args, message", [
    (["--sweep", "--sample", "500"], "--sample and --target-error belong to the main job"),
    (["-n", "500", "--target-error", "0.5"], "--sample and --target-error belong to the main job"),
    (["--sample", "10"], "10 is not in the range x>=200"),
    (["--target-error", "1"], "--target-error"),
])
def test_demo_refuses_options_of_the_other_mode_before_any_work(runner, tmp_path, args, message):
    result = runner.invoke(cli, ["demo", *args, "--output", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_demo_by_default_tells_the_main_job_on_the_adult_extract(runner, tmp_path):
    out = tmp_path / "report"
    result = runner.invoke(cli, ["demo", "--sample", "400", "--output", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text(encoding="utf-8")
    for title in ("1. Assess the table", "2. Release it 5-anonymous, and attack",
                  "3. Collect it under LDP instead", "4. The risk that remains"):
        assert f"<h2>{title}</h2>" in page
    assert "10,000 people of the UCI Adult extract" in page
    for step in ("1. assess", "2. 5-anonymous release", "3. LDP collection", "4. linking"):
        assert step in result.output
    assert str(out / "index.html") in result.output


def test_demo_output_folder_is_checked_before_the_work(runner, tmp_path, monkeypatch):
    from reidrisk import demo as demo_module

    def no_run(*args, **kwargs):
        raise AssertionError("the demo ran before its output folder was checked")

    monkeypatch.setattr(demo_module, "run_demo", no_run)
    (tmp_path / "afile").write_text("x")
    result = runner.invoke(cli, ["demo", "--output", str(tmp_path / "afile" / "report")])
    _assert_clean_error(result, "afile", "is a file")


@pytest.mark.slow
def test_demo_progress_lines_when_stderr_is_not_a_terminal(runner, small, tmp_path, monkeypatch,
                                                          fast_collect_section):
    from reidrisk.report import progress

    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)  # a line after every step
    data, schema_path, _ = small
    result = runner.invoke(cli, ["demo", "--data", str(data), "--schema", str(schema_path), "--output",
                                 str(tmp_path / "rep"), "-m", "grr", "-e", "1", "-e", "8"])
    assert result.exit_code == 0, result.output
    assert "collect + estimate: 1/2 runs (50%) [grr eps=1]" in result.stderr
    assert "collect + estimate: 2/2 runs done in" in result.stderr
    assert "\r" not in result.stderr
