"""`contrastive-nb sweep` and `results`: a 3-run sweep of the smoke tutorial at one epoch, killed midway and
restarted; a failing run; a bad parameter. The sweep's mechanics do not depend on the notebook, so the quickest
tutorial runs them (the main job's own sweep file is checked by `load_sweep` in 38_sweeps and its twin in
test_tutorials.py)."""
import json
import os
import signal
import subprocess
import time

import pandas as pd
import yaml

from helpers import ROOT, tool

NB = str(ROOT / "nbs" / "tutorials" / "smoke_digits.ipynb")
TINY = dict(epochs=1, batch_size=256)


def write_sweep(path, grid, name="s", parallel=2, retries=1, seeds=(0, 1), **params):
    path.write_text(yaml.safe_dump({"notebook": NB, "name": name, "parameters": {**TINY, **params}, "grid": grid,
                                    "seeds": list(seeds), "parallel": parallel, "retries": retries, "timeout": 600}))
    return path


def test_sweep_killed_and_restarted_runs_only_what_is_missing(tmp_path, env):
    sweep = write_sweep(tmp_path / "sweep.yaml", {"labeled_fraction": [0.1]}, parallel=1, seeds=[0, 1, 2])
    out = tmp_path / "runs" / "s"
    p = subprocess.Popen([tool("contrastive-nb"), "sweep", str(sweep), "--root", str(tmp_path / "runs")], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 400
    while time.time() < deadline and not list(out.glob("*/status.json")):
        time.sleep(1)
    os.killpg(p.pid, signal.SIGKILL); p.wait()
    done_first = {d.name: (d / "status.json").read_text() for d in out.iterdir() if (d / "status.json").exists()}
    assert 1 <= len(done_first) < 3, done_first
    r = subprocess.run([tool("contrastive-nb"), "sweep", str(sweep), "--root", str(tmp_path / "runs")], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"{len(done_first)} already done, running {3 - len(done_first)}" in r.stdout
    for name, status in done_first.items():                # finished runs were not run again
        assert (out / name / "status.json").read_text() == status
    assert not list(out.glob(".*partial*"))
    r = subprocess.run([tool("contrastive-nb"), "results", str(out)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    res = pd.read_csv(out / "results.csv")
    assert sorted(res["run"]) == [f"labeled_fraction-0.1_seed-{s}" for s in (0, 1, 2)]
    assert (res["status"] == "ok").all() and res["probe_accuracy_trained"].between(0, 1).all()
    assert (res["param/epochs"] == 1).all() and sorted(res["param/seed"]) == [0, 1, 2]
    summary = pd.read_csv(out / "summary.csv", header=[0, 1], index_col=0)
    assert (summary[("probe_accuracy_trained", "count")] == 3).all()


def test_failed_run_is_reported_and_others_finish(tmp_path, env):
    sweep = write_sweep(tmp_path / "sweep.yaml", {"labeled_fraction": [0.1, 2.0]}, name="f", retries=1, seeds=[0])
    r = subprocess.run([tool("contrastive-nb"), "sweep", str(sweep), "--root", str(tmp_path / "runs")], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 1
    st = json.loads((tmp_path / "runs" / "f" / "sweep_status.json").read_text())
    assert st["failed"] == ["labeled_fraction-2.0_seed-0"]
    assert st["runs"]["labeled_fraction-0.1_seed-0"] == "ok"
    bad = tmp_path / "runs" / "f" / "labeled_fraction-2.0_seed-0"
    assert "fraction" in json.loads((bad / "status.json").read_text())["error"]       # the error is reported
    assert (tmp_path / "runs" / "f" / "labeled_fraction-2.0_seed-0.failed-1").exists()  # the first attempt kept
    assert "failed  labeled_fraction-2.0_seed-0" in r.stdout


def test_bad_parameter_refused_before_anything_runs(tmp_path, env):
    sweep = write_sweep(tmp_path / "sweep.yaml", {"labeled_fractions": [0.1]}, name="b")
    r = subprocess.run([tool("contrastive-nb"), "sweep", str(sweep), "--root", str(tmp_path / "runs")], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown parameter(s) ['labeled_fractions']" in r.stderr
    assert not (tmp_path / "runs" / "b").exists()
    sweep = write_sweep(tmp_path / "sweep2.yaml", {"epochs": ["many"]}, name="b")
    r = subprocess.run([tool("contrastive-nb"), "sweep", str(sweep), "--root", str(tmp_path / "runs")], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "parameter `epochs`" in r.stderr
