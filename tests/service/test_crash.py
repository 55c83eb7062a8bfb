"""Nothing acknowledged is lost: SIGKILL the server in the middle of a stream of submissions,
restart it on the same database, and find every acknowledged report exactly once (SQLite and
PostgreSQL), with count tables equal to the counts of the stored reports."""

from __future__ import annotations

import collections
import threading

import httpx
import numpy as np
import pytest

from reidrisk.client import SurveyClient
from reidrisk.estimation.pairs import pair_counts
from reidrisk.service.models import collected_reports
from reidrisk.service.process import ServerProcess

from .conftest import SCHEMA, population

pytestmark = pytest.mark.slow


def test_sigkill_mid_stream_loses_no_acknowledged_report(db_url, storage, tmp_path):
    admin = {"Authorization": "Bearer crash-admin-token"}
    server = ServerProcess(database_url=db_url, admin_token="crash-admin-token",
                           log=tmp_path / "server.log").start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            sid = http.post("/surveys", headers=admin, json={
                "name": "crash", "schema": SCHEMA.to_dict(),
                "protocol": {"epsilon": 3.0}}).json()["id"]
            code = http.post(f"/surveys/{sid}/codes", headers=admin,
                             json={"quota": 10**8}).json()[0]["token"]
        local = SurveyClient(server.url, sid, code)
        acked: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()

        def stream(seed: int) -> None:
            rng = np.random.default_rng(seed)
            with httpx.Client(base_url=server.url, timeout=10) as http:
                h = {"Authorization": f"Bearer {code}"}
                while not stop.is_set():
                    rr = local.randomize(population(int(rng.integers(1, 20)),
                                                    int(rng.integers(1 << 30))), rng=rng)
                    reps = local.wire_reports(rr)
                    try:
                        if len(reps) == 1:
                            r = http.post(f"/surveys/{sid}/reports", headers=h, json=reps[0])
                        else:
                            r = http.post(f"/surveys/{sid}/reports/batch", headers=h,
                                          json={"reports": reps})
                    except httpx.HTTPError:
                        return  # the server died: this request is not acknowledged
                    if r.status_code == 201:
                        with lock:
                            acked.extend(x["id"] for x in reps)

        threads = [threading.Thread(target=stream, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        while True:
            with lock:
                if len(acked) >= 800:
                    break
            if not any(t.is_alive() for t in threads):
                pytest.fail(f"the submitters stopped early; see {tmp_path / 'server.log'}")
            threading.Event().wait(0.01)
        server.kill()  # mid-stream: the submitters are still sending
        stop.set()
        for t in threads:
            t.join(30)
        n_acked = len(acked)
    finally:
        server.kill()

    server = ServerProcess(database_url=db_url, admin_token="crash-admin-token").start()
    try:
        ids = collections.Counter(storage.report_ids(sid))
        assert all(ids[i] == 1 for i in acked), "an acknowledged report is missing or doubled"
        assert max(ids.values()) == 1
        assert len(ids) >= n_acked
        survey = storage.survey(sid)
        assert survey.n_reports == len(ids)  # the count tables committed with the reports
        assert np.array_equal(storage.counts(survey).gram,
                              pair_counts(collected_reports(storage, survey).reports).gram)
        with httpx.Client(base_url=server.url, timeout=10) as http:
            r = http.get(f"/surveys/{sid}", headers=admin)
            assert r.json()["n_reports"] == len(ids)
    finally:
        server.stop()
