"""Publish the Fashion-MNIST SuNCEt sweep (nbs/tutorials/suncet_fashion.yaml) into this folder: copy
the collected results.parquet and summary.csv from the sweep folder, write provenance.json (commit,
date, versions, machine, the sweep file, its runs and their seconds) and draw
accuracy_vs_compute.png from results.parquet alone.

    contrastive-nb sweep nbs/tutorials/suncet_fashion.yaml     # runs/suncet_fashion/<run>/
    contrastive-nb results runs/suncet_fashion                 # results.parquet, summary.csv
    PYTHONPATH=. python nbs/results/suncet_fashion/publish.py runs/suncet_fashion [COMMIT]
    PYTHONPATH=. python nbs/results/suncet_fashion/publish.py --figure-only   # redraw only
"""
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from contrastive_nb.protocol import long_table  # noqa: E402

HERE = Path(__file__).resolve().parent
ARMS = ["simclr_own_batch", "simclr_matched_batch", "simclr+suncet", "supervised_only",
        "random_init"]


def per_arm(results: pd.DataFrame) -> pd.DataFrame:
    "Per labeled fraction and arm: seeds, mean and sd of test accuracy and pre-training FLOPs."
    long = long_table(results[results["status"] == "ok"], "results")
    g = long.groupby(["labeled_fraction", "arm"], sort=False)
    t = g.agg(n=("seed", "nunique"), test_mean=("test_top1", "mean"),
              test_sd=("test_top1", "std"), probe_mean=("test_probe_top1", "mean"),
              probe_sd=("test_probe_top1", "std"),
              pretrain_tflops=("pretrain_flops", lambda s: s.mean() / 1e12),
              pretrain_tflops_sd=("pretrain_flops", lambda s: s.std() / 1e12)).reset_index()
    t["arm"] = pd.Categorical(t["arm"], ARMS)
    return t.sort_values(["labeled_fraction", "arm"]).reset_index(drop=True)


def figure(results: pd.DataFrame, path: Path):
    "Test accuracy of each arm against its pre-training FLOPs, one panel per labeled fraction."
    t = per_arm(results)
    fracs = sorted(t["labeled_fraction"].unique())
    fig, axes = plt.subplots(1, len(fracs), figsize=(5.2 * len(fracs), 3.9), squeeze=False)
    for ax, f in zip(axes[0], fracs):
        for i, r in enumerate(t[t.labeled_fraction == f].itertuples()):
            ax.errorbar(r.pretrain_tflops, r.test_mean, yerr=r.test_sd, xerr=r.pretrain_tflops_sd,
                        fmt="os^Dv"[i % 5], ms=6, capsize=3, label=f"{r.arm} (n={r.n})")
        ax.set_title(f"Fashion-MNIST, {f:.0%} labels")
        ax.set_xlabel("pre-training TFLOPs (measured; 0: none)")
        ax.set_ylabel("final-model test accuracy (mean ± sd)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def versions() -> dict:
    import numpy
    import torch
    import torchvision

    import contrastive_nb

    return {"python": platform.python_version(), "torch": torch.__version__,
            "torchvision": torchvision.__version__, "numpy": numpy.__version__,
            "pandas": pd.__version__, "contrastive_nb": contrastive_nb.__version__}


def machine() -> dict:
    info = Path("/proc/cpuinfo")
    names = [x.split(":", 1)[1].strip() for x in info.read_text().splitlines()
             if x.startswith("model name")] if info.exists() else []
    return {"system": platform.system(), "arch": platform.machine(),
            "cpu": names[0] if names else platform.processor(), "cpu_count": os.cpu_count(),
            "device": "cpu", "torch_threads_per_run": 1}


def publish(sweep: Path, commit: str | None = None):
    res = pd.read_parquet(sweep / "results.parquet")
    for name in ("results.parquet", "summary.csv"):
        shutil.copyfile(sweep / name, HERE / name)
    ok = res[res["status"] == "ok"]
    secs = ok["seconds"] if "seconds" in ok else pd.Series(dtype=float)
    commit = commit or subprocess.run(["git", "describe", "--always", "--dirty"],
                                      capture_output=True, text=True,
                                      cwd=HERE).stdout.strip() or None
    prov = {"sweep_file": "nbs/tutorials/suncet_fashion.yaml",
            "notebook": "nbs/tutorials/suncet_digits.ipynb", "commit": commit,
            "date": time.strftime("%Y-%m-%d"), "versions": versions(), "machine": machine(),
            "runs": int(len(res)), "runs_ok": int(len(ok)),
            "seconds_per_run": ({"mean": float(secs.mean()), "max": float(secs.max())}
                                if len(secs) else None),
            "files": ["results.parquet", "summary.csv", "accuracy_vs_compute.png"],
            "figure": "accuracy_vs_compute.png drawn from results.parquet by publish.py"}
    (HERE / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    figure(res, HERE / "accuracy_vs_compute.png")


if __name__ == "__main__":
    if sys.argv[1:] == ["--figure-only"]:
        figure(pd.read_parquet(HERE / "results.parquet"), HERE / "accuracy_vs_compute.png")
    else:  # publish.py SWEEP_DIR [COMMIT the runs were made at]
        publish(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
    print(per_arm(pd.read_parquet(HERE / "results.parquet")).to_string())
