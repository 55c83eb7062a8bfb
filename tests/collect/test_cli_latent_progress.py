"""``reidrisk collect fit --model latent`` shows the latent class model's progress."""

from click.testing import CliRunner

from reidrisk.cli import cli
from reidrisk.collect.latent_fit import N_FITS
from reidrisk.data.synthetic import make_population


def test_latent_fit_prints_progress_lines_when_piped(tmp_path, monkeypatch):
    """A fit of 66 s printed nothing until it was over. Piped (CliRunner's streams are not
    terminals), the progress is a plain line per update once the interval has passed (0 here):
    each candidate K of each fit's selection, its EM steps, and a closing line."""
    from reidrisk.report import progress

    pop = make_population(1500, [3, 4, 2, 3], dependence=0.6, rng=1)
    pop.schema.decode(pop.codes).to_csv(tmp_path / "data.csv", index=False)
    pop.schema.save(tmp_path / "schema.json")
    runner = CliRunner()
    r = runner.invoke(cli, ["collect", "simulate", str(tmp_path / "data.csv"),
                            str(tmp_path / "reports.csv"), "--schema", str(tmp_path / "schema.json"),
                            "-e", "4", "--seed", "3"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    r = runner.invoke(cli, ["collect", "fit", str(tmp_path / "reports.csv"),
                            str(tmp_path / "model.json"), "--model", "latent", "--no-fallback"],
                      catch_exceptions=False)
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("latent class model:")]
    assert any(f"0/{N_FITS} fits (0%) [choosing K: K = 1 scores" in ln for ln in lines)
    assert any("on all 1,500 records: EM step 1]" in ln for ln in lines)
    assert any(f"1/{N_FITS} fits (20%) [" in ln for ln in lines)
    assert lines[-1].startswith(f"latent class model: {N_FITS}/{N_FITS} fits done in")
    assert "\r" not in r.stderr  # no bar redrawn with carriage returns


def test_fit_help_gives_the_latent_methods_number_of_fits():
    # the help is static text (latent_fit is not imported at the command line's start)
    r = CliRunner().invoke(cli, ["collect", "fit", "--help"], terminal_width=200)
    assert r.exit_code == 0 and f"the average of {N_FITS} fits" in " ".join(r.output.split())
