"""The guide's service walkthrough runs as written: start a server, create a survey, open the form,
submit, query a table.

The ``sh`` blocks of the guide's section "Running a collection service" are joined in document
order into one bash script and run in a temporary folder (the server's data directory is created
there). The only change is the port: the guide's ``8000`` becomes a free loopback port, so the
test never meets another server. The test then checks what the walkthrough produced: the form
address it printed serves the form, the reports were stored, and the table, synthetic records and
model it saved are the service's answers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from reidrisk.service.process import free_port

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
SECTION = "## Running a collection service"


def walkthrough_blocks(text: str) -> list[str]:
    """The ``sh`` blocks of the guide's service section, in order."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else None]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


def test_the_guide_has_a_complete_walkthrough():
    script = "\n".join(walkthrough_blocks(GUIDE.read_text()))
    steps = ["reidrisk serve", "/surveys\"", "/codes", "/tokens", "/form", "SurveyClient",
             "/table?attributes=", "kill %1"]
    missing = [s for s in steps if s not in script]
    assert not missing, f"the walkthrough lacks {missing}"
    assert "URL=http://localhost:8000" in script and "--port 8000 &" in script


@pytest.mark.slow
def test_the_guide_walkthrough_runs_against_a_real_server(tmp_path):
    for tool in ("curl", "jq"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed; the walkthrough uses it (apt-get install {tool})")
    port = free_port()
    blocks = walkthrough_blocks(GUIDE.read_text())
    # the test's own checks between the blocks: keep the form page the printed address serves
    blocks = [b + ('curl -sf "$URL/surveys/$SURVEY/form" > form.html\n' if "/form" in b else "")
              for b in blocks]
    # on a failing step, stop the server the script started (it holds the output pipes)
    script = "trap 'kill $(jobs -p) 2> /dev/null' EXIT\n" + "\n".join(blocks)
    script = script.replace("--port 8000", f"--port {port}").replace(":8000", f":{port}")
    # `python` and `reidrisk` are this environment's
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
           "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("REIDRISK_DATABASE_URL", None)
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=240)
    finally:  # the server the script started, if the script failed before stopping it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, f"the walkthrough failed:\n{out[-3000:]}\n{err[-3000:]}"

    # 3. the form address it printed serves the form (the in-browser submission itself is run in
    # headless Chromium by test_form.py)
    m = re.search(r"open (http://\S+/surveys/(\w+)/form) in a browser, with the code sc_\S+", out)
    assert m, out[-2000:]
    page = (tmp_path / "form.html").read_text()
    assert f'data-survey="{m.group(2)}"' in page and "/static/randomizer.js" in page
    assert (tmp_path / "survey-data" / "reidrisk.sqlite3").is_file()
    # 4./5. what the walkthrough stored and saved
    assert "1000 reports stored, 0 duplicates" in out, out[-2000:]
    table = json.loads((tmp_path / "table.json").read_text())
    assert table["attributes"] == ["age", "region", "smoker"] and table["n_reports"] == 1000
    assert len(table["table"]) == 3 and len(table["table"][0]) == 4
    synthetic = json.loads((tmp_path / "synthetic.json").read_text())
    assert len(synthetic["records"]) == 1000
    model = json.loads((tmp_path / "model.json").read_text())
    assert model["format"].startswith("reidrisk")
    # the server was stopped by the walkthrough's last line
    with pytest.raises(httpx.TransportError):
        httpx.get(m.group(1), timeout=2)
