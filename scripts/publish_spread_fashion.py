"""Publish the coarse-to-fine study on Fashion-MNIST (spread_strata.ipynb, transfer section) into
nbs/results/spread_fashion/ (this script lived in that folder, as publish.py, until results folders were kept to
results): the run's results files and a provenance.json in the format of docs/notebooks.py
(notebook, parameters, commit, date, files), with the versions, the machine and the seconds added
(`contrastive_nb.runs.run_environment`; the commit is the one the run recorded, where it did).

    contrastive-nb run nbs/tutorials/spread_strata.ipynb -p dataset fashion_mnist \\
        -p image_size 14 -p n_images 5000 -p sections '["transfer"]' --name spread_fashion
    PYTHONPATH=. python scripts/publish_spread_fashion.py runs/spread_fashion [--commit SHA]
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "nbs" / "results" / "spread_fashion"  # where the study is published
sys.path.insert(0, str(ROOT / "docs"))
from notebooks import stage_results  # noqa: E402

from contrastive_nb.runs import run_environment  # noqa: E402

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--commit", help="the commit the run was made at (default: the one it recorded)")
    a = ap.parse_args()
    run = Path(a.run)
    status = json.loads((run / "status.json").read_text())
    if status["status"] != "ok":
        raise SystemExit(f"{run} did not end ok: nothing published")
    nb = ROOT / "nbs" / "tutorials" / "spread_strata.ipynb"
    tmp, files = stage_results(run, HERE, nb, ROOT)
    prov = json.loads((tmp / "provenance.json").read_text())
    env = {k: status[k] for k in ("commit", "versions", "machine") if k in status} or run_environment(ROOT)
    prov.update(env, seconds=status["seconds"], published_by="scripts/publish_spread_fashion.py")
    if a.commit:
        prov["commit"] = a.commit
    (tmp / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    for f in tmp.iterdir():
        shutil.move(str(f), HERE / f.name)
    tmp.rmdir()
    print("published:", sorted(p.name for p in HERE.iterdir()))
