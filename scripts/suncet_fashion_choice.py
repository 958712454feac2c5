"""How big should Fashion-MNIST be in the SuNCEt tutorial on a CPU? For each image side and
training-subset size: the validation accuracy of a linear probe (10% labels, C chosen on validation)
on raw pixels, on the random-init encoder's features, and on the features of a SimCLR run (the
tutorial's encoder, augmentation, learning rate and 30 epochs), with the seconds it took on ONE CPU
thread. The headroom is the SimCLR run's best validation probe minus the random init's (the room the
tutorial's arms share). Validation only: the test set is never read here. Measured options are
cached in choice_rows.jsonl (a rerun only measures what is missing).

    PYTHONPATH=. python scripts/suncet_fashion_choice.py   # writes nbs/results/suncet_fashion/choice.json

This script lived in nbs/results/suncet_fashion/ as choice.py (where choice.json's provenance names it)
until results folders were kept to results; moved with its paths changed and its `fit` call written in
`fit`'s config objects (`Optimization`, `Checkpointing`, `RuntimeOptions`: the same settings). Its
published choice.json was not re-measured.
"""
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from contrastive_nb.augment import BatchViews
from contrastive_nb.core import seed_everything
from contrastive_nb.data import as_tensor_dataset, fashion_mnist, labeled_fraction_split
from contrastive_nb.evaluate import compute_embeddings
from contrastive_nb.models import ContrastiveModel, ProjectionHead, SmallConvNet
from contrastive_nb.protocol import select_probe
from contrastive_nb.train import (
    Checkpointing,
    LossTerm,
    Optimization,
    RuntimeOptions,
    SelectOnValidation,
    fit,
)

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "nbs" / "results" / "suncet_fashion"  # where choice.json is published

SIDES = [14, 28]  # image side in pixels (28: as published; 14: a 2x antialiased downsample)
N_TRAIN = [2000, 5000, 10000]  # training-subset sizes (train + validation, drawn per class)
EPOCHS = 30  # the SimCLR run, as long as the tutorial's
LABELED, VAL, SEED, WIDTH, BATCH = 0.1, 0.2, 0, 16, 256
BUDGET_S = 600  # a tutorial run on one CPU thread
# the tutorial pre-trains 3 arms for 30 epochs (two at batch 128) and fine-tunes 4 encoders (about
# 6,000 updates of 64 images): about 5 such 30-epoch SimCLR runs
RUNS_PER_TUTORIAL = 5


def measure(imgs, side: int, n: int) -> dict:
    "Probe accuracies and SimCLR's seconds for `n` training images at `side` pixels."
    keep, _ = labeled_fraction_split(imgs.targets, n / len(imgs), seed=SEED + 2)
    sub = imgs.subset(np.sort(keep))
    val_rel, tr_rel = labeled_fraction_split(sub.targets, VAL, seed=SEED + 1)
    train, val = sub.subset(np.sort(tr_rel)), sub.subset(np.sort(val_rel))
    lab = train.subset(np.sort(labeled_fraction_split(train.targets, LABELED, seed=SEED)[0]))
    flat = lambda d: d.images.flatten(1).numpy()
    raw = select_probe(flat(lab), lab.targets, flat(val), val.targets)["val_top1"]

    def val_probe(m):
        h = [compute_embeddings(m.encoder, d.images, device="cpu").numpy() for d in (lab, val)]
        return {"val_top1": select_probe(h[0], lab.targets, h[1], val.targets)["val_top1"]}

    seed_everything(SEED)
    enc = SmallConvNet(1, width=WIDTH)
    m = ContrastiveModel(enc, ProjectionHead(enc.feature_dim, 512, 128))
    sel = SelectOnValidation(val_probe, "val_top1")
    t0 = time.time()
    fit(m, train, terms=[LossTerm("nt_xent", temperature=0.5)],
        views=BatchViews("digits", size=side), epochs=EPOCHS, batch_size=BATCH,
        optim=Optimization(lr=0.5, warmup_epochs=2), hooks=[sel],
        checkpoints=Checkpointing(run_dir=Path(tempfile.mkdtemp()) / "run"),
        runtime=RuntimeOptions(device="cpu", progress=False), seed=SEED)
    secs = time.time() - t0
    row = dict(side=side, n_train=n, n_fit=len(train), n_labeled=len(lab), n_val=len(val),
               raw_pixels_val=raw, random_init_val=sel.initial["val_top1"], simclr_val=sel.best,
               simclr_best_epoch=sel.best_epoch, simclr_epochs=EPOCHS,
               simclr_seconds=round(secs, 1))
    row["headroom"] = row["simclr_val"] - row["random_init_val"]
    row["measured"] = True
    row["est_tutorial_seconds"] = round(secs / EPOCHS * 30 * RUNS_PER_TUTORIAL)
    return row


def main(out: Path):
    torch.set_num_threads(1)
    threadpool_limits(1)
    full = fashion_mnist("train")
    cache = out.with_name(out.stem + "_rows.jsonl")  # one line per measured option
    done = [json.loads(x) for x in cache.read_text().splitlines()] if cache.exists() else []
    rows = []
    for side in SIDES:
        imgs = as_tensor_dataset(full, size=side)
        for n in N_TRAIN:
            old = [r for r in done if (r["side"], r["n_train"]) == (side, n)]
            if old:
                rows.append(old[0])
                continue
            # the cost grows with the images: an option whose smaller sibling at this size already
            # needs more than twice the budget once scaled is not measured (its estimate is kept)
            prev = [r for r in rows if r["side"] == side and r["n_train"] < n]
            est = prev[-1]["est_tutorial_seconds"] * n / prev[-1]["n_train"] if prev else 0
            if est > 2 * BUDGET_S:
                rows.append(dict(side=side, n_train=n, measured=False,
                                 est_tutorial_seconds=round(est)))
            else:
                rows.append(measure(imgs, side, n))
                with open(cache, "a") as f:
                    f.write(json.dumps(rows[-1]) + "\n")
            print(rows[-1], flush=True)
    for r in rows:
        r["affordable"] = r["est_tutorial_seconds"] <= BUDGET_S
    measured = [r for r in rows if r["measured"]]
    best = max([r for r in measured if r["affordable"]] or measured, key=lambda r: r["headroom"])
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    machine = f"{platform.machine()}, {platform.processor() or ''}".strip(", ")
    result = {
        "what": "validation accuracy of a linear probe (10% labels) on Fashion-MNIST subsets: raw"
                " pixels, random-init encoder, a 30-epoch SimCLR run; headroom = SimCLR - random"
                " init; seconds on one thread of a 2-core machine shared with other jobs",
        "threads": 1, "budget_seconds": BUDGET_S, "rows": rows,
        "chosen": {"side": best["side"], "n_train": best["n_train"], "headroom": best["headroom"]},
        "provenance": {"commit": commit, "date": time.strftime("%Y-%m-%d"),
                       "python": platform.python_version(), "torch": torch.__version__,
                       "machine": machine, "script": "scripts/suncet_fashion_choice.py"},
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print("chosen:", best)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "choice.json")
