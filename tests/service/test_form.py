"""The browser form: its JavaScript randomizer follows the Python channel (seeded goodness-of-fit
tests run with node), and the form works end to end in headless Chromium without the raw answer
ever leaving the page."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chisquare

from reidrisk.collect import Protocol
from reidrisk.schema import Attribute, Schema
from reidrisk.service.wire import SurveySpec

from .conftest import admin_headers, issue, missing

STATIC = Path(__file__).resolve().parents[2] / "src" / "reidrisk" / "service" / "static"
NODE = shutil.which("node") or shutil.which("nodejs")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# a seeded source of uint32 words for node (xorshift128; the browser uses Web Crypto instead)
NODE_SCRIPT = """
const R = require(process.argv[1]);
const args = JSON.parse(process.argv[2]);
let s = [args.seed >>> 0, 362436069, 521288629, 88675123];
function words() {
  let t = s[0] ^ (s[0] << 11); s[0] = s[1]; s[1] = s[2]; s[2] = s[3];
  s[3] = (s[3] ^ (s[3] >>> 19) ^ (t ^ (t >>> 8))) >>> 0; return s[3];
}
for (let i = 0; i < 50; i++) words();
const out = [];
for (let i = 0; i < args.n; i++) out.push(R.randomizeRecord(args.config, args.codes, words));
process.stdout.write(JSON.stringify(out));
"""


def run_node(config: dict, codes: dict, n: int, seed: int) -> list[dict]:
    if NODE is None:
        missing("node is not installed", ci="the JavaScript randomizer's tests must run",
                local="install it (Debian: apt-get install nodejs) to run them")
    proc = subprocess.run([NODE, "-e", NODE_SCRIPT, str(STATIC / "randomizer.js"),
                           json.dumps({"config": config, "codes": codes, "n": n, "seed": seed})],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def spec_of(sizes, epsilon, k=None, mechanism="subset") -> SurveySpec:
    schema = Schema(tuple(Attribute(f"a{j}", tuple(f"c{i}" for i in range(f)))
                          for j, f in enumerate(sizes)))
    return SurveySpec.build(schema.to_dict(), {"epsilon": epsilon, "k": k,
                                               "mechanism": mechanism})


@pytest.mark.parametrize("mechanism, size, epsilon", [("subset", 6, 1.0), ("grr", 4, 1.5),
                                                      ("subset", 5, 0.5)])
def test_javascript_reports_follow_the_python_channel(mechanism, size, epsilon):
    spec = spec_of([size], epsilon, mechanism=mechanism)
    mech = spec.mechanisms[0]
    x, n = 1, 10_000
    reports = run_node(spec.to_dict(), {"a0": x}, n, seed=7)
    rr = spec.decode([[r["values"]["a0"]] for r in reports])  # the server accepts every one
    h = getattr(mech, "h", 1)
    outputs = [tuple(c) for c in combinations(range(size), h)]
    index = {o: i for i, o in enumerate(outputs)}
    rows = np.asarray(rr.reports[0]).reshape(n, -1)
    observed = np.bincount([index[tuple(sorted(r))] for r in rows.tolist()],
                           minlength=len(outputs))
    # the exact channel of the Python mechanism: P(S | x) for every output S
    enum = mech.enumerate_outputs()
    probs = np.exp(mech.log_prob(enum)[:, x])
    expected = np.zeros(len(outputs))
    for o, p in zip(np.asarray(enum).reshape(len(enum), -1).tolist(), probs):
        expected[index[tuple(sorted(o))]] = p
    assert expected.sum() == pytest.approx(1.0)
    # goodness of fit at level 1e-3 with a fixed seed; the same counts must reject the channel of
    # another input (x = 0), so the test can fail
    assert chisquare(observed, n * expected).pvalue > 1e-3
    wrong = np.exp(mech.log_prob(enum)[:, 0])
    wrong_expected = np.zeros(len(outputs))
    for o, p in zip(np.asarray(enum).reshape(len(enum), -1).tolist(), wrong):
        wrong_expected[index[tuple(sorted(o))]] = p
    assert chisquare(observed, n * wrong_expected).pvalue < 1e-3


def test_javascript_samples_k_present_attributes_and_keeps_skips_missing():
    spec = spec_of([3, 3, 3, 3], 2.0, k=2)  # attributes sampled among the present ones
    reports = run_node(spec.to_dict(), {"a0": 0, "a1": None, "a2": 2, "a3": 1}, 6000, seed=3)
    seen = np.array([[name in r["values"] for name in spec.schema.names] for r in reports])
    assert not seen[:, 1].any()  # the skipped question is never sent
    assert (seen.sum(axis=1) == 2).all()  # k = 2 of the 3 present, each pair equally likely
    pairs = np.bincount(seen[:, 0] * 1 + seen[:, 2] * 2 + seen[:, 3] * 4, minlength=8)[[3, 5, 6]]
    assert chisquare(pairs).pvalue > 1e-3
    spec.protocol.check_reports(spec.decode([[r["values"].get(a) for a in spec.schema.names]
                                             for r in reports]))
    assert len({r["id"] for r in reports}) == len(reports)
    assert Protocol(2.0, 2).among == spec.protocol.among == "present"


@pytest.mark.slow
def test_the_form_in_headless_chromium_sends_only_the_randomized_report(storage):
    if CHROMIUM is None:
        missing("chromium is not installed", ci="the browser form test must run (.ci/run "
                "installs it)", local="install it (Debian: apt-get install chromium) to run it")
    import uvicorn
    from fastapi.responses import HTMLResponse, Response
    from fastapi.testclient import TestClient

    from reidrisk.service.app import create_app
    from reidrisk.service.process import free_port

    from .conftest import ADMIN

    app = create_app(storage, admin_token=ADMIN, code_rate=0)
    bodies: list[bytes] = []

    @app.middleware("http")
    async def record(request, call_next):  # what the browser actually sent
        if request.method == "POST" and "/reports" in request.url.path:
            bodies.append(await request.body())
        return await call_next(request)

    schema = Schema((Attribute("region", ("north", "east", "south", "west", "centre")),
                     Attribute("smoker", ("never", "former", "current"))))
    client = TestClient(app)
    sid = client.post("/surveys", headers=admin_headers(), json={
        "name": "Form test", "schema": schema.to_dict(),
        "protocol": {"epsilon": 1.0, "mechanism": "subset"}}).json()["id"]
    code = issue(client, sid)[0]["token"]

    # a page that fills the form as a person would: answer "south", skip "smoker", send. Its
    # script is a file of the same origin: the service's content security policy (on every
    # response) allows no inline script, and its frame policy lets only its own pages frame it
    @app.get("/harness", response_class=HTMLResponse)
    def harness():
        return f"""<!doctype html><html><body><iframe id="f" src="/surveys/{sid}/form"></iframe>
<pre id="result">waiting</pre><script src="/harness.js"></script></body></html>"""

    @app.get("/harness.js")
    def harness_js():
        return Response(f"""const f = document.getElementById("f");
function step() {{
  const d = f.contentDocument;
  if (!d || !d.getElementById("survey") || !d.getElementById("survey").dataset.ready)
    return setTimeout(step, 50);
  d.querySelector("select[name='region']").value = "2";
  d.getElementById("code").value = "{code}";
  d.getElementById("send").click();
  (function wait() {{
    const s = d.getElementById("status").textContent;
    if (!s) return setTimeout(wait, 50);
    document.getElementById("result").textContent = "STATUS:" + s;
  }})();
}}
if (f.contentDocument && f.contentDocument.readyState === "complete") step();
else f.addEventListener("load", step);""", media_type="text/javascript")

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--virtual-time-budget=15000", "--dump-dom", f"http://127.0.0.1:{port}/harness"],
            capture_output=True, text=True, timeout=120)
    finally:
        server.should_exit = True
        thread.join(10)
    assert "STATUS:Your randomized answers were received" in proc.stdout, proc.stdout[-2000:]
    assert len(bodies) == 1
    sent = json.loads(bodies[0])
    assert set(sent) == {"id", "values"} and set(sent["values"]) == {"region"}  # skip = missing
    text = bodies[0].decode()
    assert not any(label in text for label in ("south", "north", "east", "west", "centre"))
    cells = sent["values"]["region"].split("|")
    assert len(cells) == 2  # a subset report (h = 2 of 5 at epsilon 0.5 per attribute)
    assert client.get(f"/surveys/{sid}", headers=admin_headers()).json()["n_reports"] == 1


# form.js in node with a minimal page and fetch: the survey's config, then one press of "send",
# then a second press after "received"
NODE_FORM = """
const fs = require("fs"), vm = require("vm");
const els = {};
function el(id) {
  return els[id] || (els[id] = {id, attrs: {}, children: [], disabled: id === "send",
    textContent: "", className: "", value: id === "code" ? "sc_x" : "", listeners: {},
    setAttribute(k, v) { this.attrs[k] = v; }, getAttribute(k) { return this.attrs[k]; },
    appendChild(c) { this.children.push(c); },
    addEventListener(t, f) { this.listeners[t] = f; }});
}
el("survey").attrs["data-survey"] = "s1";
const posts = [];
const config = JSON.parse(process.argv[2]);
function answer(status, body) {
  return Promise.resolve({ok: status < 300, status, json: () => Promise.resolve(body)});
}
const ctx = {
  document: {getElementById: (id) => { const e = el(id); if (id.startsWith("q-")) e.value = "1";
                                       return e; },
             createElement: () => el("x" + Math.random()),
             querySelector: (sel) => {  // a browser refuses a selector with a stray quote
               if ((sel.match(/'/g) || []).length % 2) throw new Error("not a valid selector");
               return {value: "1"};
             }},
  fetch: (url, opts) => {
    if (!opts) return answer(200, config);
    posts.push(opts.body);
    return answer(201, {accepted: 1, duplicates: 0, n_reports: 1});
  },
  ReidriskRandomizer: {randomizeRecord: (cfg, codes) => ({id: "r" + posts.length,
                                                         values: codes})},
  setTimeout, Promise, console, String, Number, Error,
};
vm.runInNewContext(fs.readFileSync(process.argv[1], "utf8"), ctx);
const press = () => el("form").listeners.submit({preventDefault() {}});
setTimeout(() => {
  const ready = !el("send").disabled;
  press(); press();  // a double click
  setTimeout(() => {
    const after = {disabled: el("send").disabled, status: el("status").textContent};
    press();  // once received, a further press sends nothing
    setTimeout(() => process.stdout.write(JSON.stringify({ready, after, posts})), 20);
  }, 20);
}, 20);
"""


@pytest.mark.parametrize("name", ["a0", "smoker's status"])
def test_the_form_sends_one_report_and_its_button_stays_off_once_received(name):
    if NODE is None:
        missing("node is not installed", ci="the form's script tests must run",
                local="install it (Debian: apt-get install nodejs) to run them")
    schema = Schema((Attribute(name, ("c0", "c1", "c2")),))
    spec = SurveySpec.build(schema.to_dict(), {"epsilon": 2.0})
    proc = subprocess.run([NODE, "-e", NODE_FORM, str(STATIC / "form.js"),
                           json.dumps({"name": "s", **spec.to_dict()})],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ready"]  # the button is on once the questions are built
    assert out["after"] == {"disabled": True,
                            "status": "Your randomized answers were received. Thank you."}
    assert len(out["posts"]) == 1  # one report, its answer read by the question's position
    assert json.loads(out["posts"][0])["values"] == {name: 1}


def test_the_form_says_how_often_a_sent_answer_gives_the_true_one_away(client):
    import math

    from .conftest import SCHEMA, new_survey

    for epsilon, k in ((4.0, None), (4.0, 2), (0.5, None)):
        sid = new_survey(client, epsilon=epsilon, k=k)["id"]
        page = " ".join(client.get(f"/surveys/{sid}/form").text.split())
        per = epsilon / (k or len(SCHEMA))  # each reported attribute's budget
        worst = max(math.exp(per) / (math.exp(per) + a.size - 1) for a in SCHEMA)
        assert f"up to {math.ceil(worst * 1000) / 10:.1f} % of the time" in page, page
        assert "never receives" not in page and "sees which questions you skipped" in page
    # the guide's setting (epsilon 4, two attributes a person): a yes/no answer goes out as
    # given 88.1 % of the time (e^2 / (e^2 + 1))
    sid = new_survey(client, epsilon=4.0, k=2)["id"]
    assert "up to 88.1 %" in " ".join(client.get(f"/surveys/{sid}/form").text.split())
