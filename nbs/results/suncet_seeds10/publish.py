"""Publish a sweep of nbs/tutorials/suncet_seeds10.yaml into this folder: copy the collected results.parquet and
summary.csv from the sweep folder and write provenance.json (the commit whose notebook the runs executed, the date,
versions, machine, the sweep file, its runs and their seconds).

    contrastive-nb sweep nbs/tutorials/suncet_seeds10.yaml     # runs/suncet_seeds10/<run>/
    contrastive-nb results runs/suncet_seeds10                 # results.parquet, summary.csv
    PYTHONPATH=. python nbs/results/suncet_seeds10/publish.py runs/suncet_seeds10 COMMIT [NOTE]
"""
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def main(sweep: Path, commit: str, note: str = ""):
    for name in ("results.parquet", "summary.csv"):
        shutil.copy(sweep / name, HERE / name)
    res = pd.read_parquet(HERE / "results.parquet")
    import torch
    import contrastive_nb
    status = json.loads((sweep / "sweep_status.json").read_text())
    prov = {
        "notebook": "nbs/tutorials/suncet_digits.ipynb",
        "sweep": "nbs/tutorials/suncet_seeds10.yaml",
        "commit": commit,
        "date": time.strftime("%Y-%m-%d"),
        "versions": {"contrastive_nb": contrastive_nb.__version__, "torch": torch.__version__,
                     "python": platform.python_version()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(terse=True),
                    "threads_per_run": 1},
        "files": sorted(p.name for p in HERE.iterdir() if p.suffix in (".parquet", ".csv")),
        "runs": {"total": len(status["runs"]), "ok": sum(v == "ok" for v in status["runs"].values()),
                 "seconds": {r: float(s) for r, s in zip(res["run"], res["seconds"])}
                 if {"run", "seconds"} <= set(res.columns) else None},
        "note": note,
    }
    (HERE / "provenance.json").write_text(json.dumps(prov, indent=1, ensure_ascii=False) + "\n")
    print(f"published {len(res)} runs from {sweep} ({commit})")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
