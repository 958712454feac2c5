"""Results report runs as they ended: a run's status comes from its status.json and its group from its
parameters.json, whatever its notebook wrote into metrics.json; a kill while the tables are written never leaves an
old table beside new ones."""
import json
import subprocess
import sys
import warnings

import pandas as pd

from scenario import env


def _run(root, name, params, status, metrics):
    d = root / name
    d.mkdir(parents=True)
    (d / "parameters.json").write_text(json.dumps({"notebook": "nb.ipynb", "parameters": params}))
    if status is not None:
        (d / "status.json").write_text(json.dumps({"status": status}))
    (d / "metrics.json").write_text(json.dumps(metrics))


def _sweep(root):
    _run(root, "lr-0.1_seed-0", {"lr": 0.1, "seed": 0}, "ok", {"acc": 0.8})
    _run(root, "lr-0.1_seed-1", {"lr": 0.1, "seed": 1}, "failed", {"acc": 0.1, "status": "ok"})
    _run(root, "lr-0.1_seed-2", {"lr": 0.1, "seed": 2}, "ok", {"acc": 0.9, "param": {"lr": 0.5}})
    _run(root, "lr-0.1_seed-3", {"lr": 0.1, "seed": 3}, None, {"acc": 0.0})
    _run(root, "lr-0.5_seed-0", {"lr": 0.5, "seed": 0}, "ok", {"acc": 0.3})


def test_a_failed_run_written_ok_by_its_notebook_stays_failed_and_a_metric_cannot_regroup_a_run(tmp_path):
    from contrastive_nb.runs import sweep_results
    _sweep(tmp_path)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        paths = sweep_results(tmp_path)
    res = pd.read_csv(paths["results.csv"]).set_index("run")
    assert res["status"].to_dict() == {"lr-0.1_seed-0": "ok", "lr-0.1_seed-1": "failed", "lr-0.1_seed-2": "ok",
                                       "lr-0.1_seed-3": "unknown", "lr-0.5_seed-0": "ok"}
    assert res["param/lr"].tolist() == [0.1, 0.1, 0.1, 0.1, 0.5]
    summary = pd.read_csv(paths["summary.csv"], header=[0, 1], index_col=0)
    assert summary[("acc", "count")].to_dict() == {0.1: 2, 0.5: 1}          # the failed and the unknown run left out
    assert abs(summary.loc[0.1, ("acc", "mean")] - 0.85) < 1e-12
    assert sum("would overwrite the run's own column" in str(x.message) for x in w) == 2


KILL_AT_SUMMARY = """
import os, signal, sys
import contrastive_nb.core as core
from contrastive_nb.runs import sweep_results
write = core.atomic_write_text
def killing(path, text, *a, **k):
    if str(path).endswith("summary.csv"):
        os.kill(os.getpid(), signal.SIGKILL)            # killed after results.csv/.parquet, before summary.csv
    return write(path, text, *a, **k)
core.atomic_write_text = killing
sweep_results(sys.argv[1])
"""


def test_killed_while_writing_the_tables_leaves_no_stale_summary_beside_new_results(tmp_path):
    from contrastive_nb.runs import sweep_results
    _sweep(tmp_path)
    sweep_results(tmp_path)
    old_summary = (tmp_path / "summary.csv").read_text()
    (tmp_path / "lr-0.5_seed-0" / "metrics.json").write_text(json.dumps({"acc": 0.7}))      # the results change
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", KILL_AT_SUMMARY, str(tmp_path)], capture_output=True,
                       text=True, timeout=240, env=env())
    assert p.returncode == -9, p.stderr[-2000:]
    res = pd.read_csv(tmp_path / "results.csv").set_index("run")
    assert res.loc["lr-0.5_seed-0", "acc"] == 0.7                               # the new table is in place
    assert not (tmp_path / "summary.csv").exists(), "the old summary.csv survived beside the new results"
    assert old_summary                                                          # (there was one before)
    sweep_results(tmp_path)
    summary = pd.read_csv(tmp_path / "summary.csv", header=[0, 1], index_col=0)
    assert summary.loc[0.5, ("acc", "mean")] == 0.7
