"""Digests of short digits trajectories: run before and after a restructuring of the engine; equal lines mean
the same weights, optimiser state and history, bit for bit.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/trajectory_digests.py > before.txt   # then after, and diff

Four small `fit` runs on the bundled digits (SGD and LARS; NT-Xent with SuNCEt switched off after one epoch;
supervised L_spread + cross-entropy with label correction, which exercises the `before_terms` event) and one
`fit_rows` run. Each line: the run, then sha256 of the model's state, the optimiser's state and the history
(wall-clock keys left out), 12 hex digits each."""
import hashlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from contrastive_nb.augment import BatchViews
from contrastive_nb.data import ClassStratifiedBatchSampler, labeled_fraction_split, load_digits
from contrastive_nb.models import ContrastiveModel, LinearClassifier, ProjectionHead, SmallConvNet
from contrastive_nb.strata_train import LabelCorrection
from contrastive_nb.train import (
    Checkpointing,
    LabeledData,
    LossTerm,
    Optimization,
    RuntimeOptions,
    fit,
    fit_rows,
)


def _sha(obj) -> str:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return hashlib.sha256(buf.getvalue()).hexdigest()[:12]


def _history(hist) -> list:
    "The history without wall-clock entries (seconds differ from run to run)."
    return [{k: v for k, v in h.items() if "time" not in k and "seconds" not in k} for h in hist]


def _model(classifier=False):
    torch.manual_seed(0)
    enc = SmallConvNet(1, width=8)
    clf = LinearClassifier(enc.feature_dim, 10) if classifier else None
    return ContrastiveModel(enc, ProjectionHead(enc.feature_dim, 32, 16), clf)


def main():
    torch.set_num_threads(1)
    tr = load_digits("train").subset(np.arange(512))
    lab, _ = labeled_fraction_split(tr.targets, 0.2, seed=0)
    labeled = tr.subset(lab)
    runs = {
        "sgd nt_xent+suncet": ([LossTerm("nt_xent"), LossTerm("suncet", temperature=0.1, until_epoch=1)],
                               Optimization(lr=0.3), False, []),
        "lars nt_xent+suncet": ([LossTerm("nt_xent"), LossTerm("suncet", temperature=0.1)],
                                Optimization(optimizer="lars", lr=0.3, warmup_epochs=1), False, []),
        "sgd supcon-in": ([LossTerm("supcon", variant="in", loader="unlabeled")], Optimization(lr=0.1), False, []),
        "sgd spread+ce+correction": ([LossTerm("spread", loader="unlabeled"), LossTerm("ce", loader="unlabeled")],
                                     Optimization(lr=0.1), True, [LabelCorrection(0.1, from_epoch=1)]),
    }
    with tempfile.TemporaryDirectory() as d:
        for name, (terms, optim, clf, hooks) in runs.items():
            model = _model(clf)
            sup = any(t.loader == "labeled" for t in terms)
            hist = fit(
                model, tr, terms, BatchViews("digits"), epochs=2, batch_size=64,
                labeled=LabeledData(labeled, ClassStratifiedBatchSampler(labeled.targets, 10, 2, seed=0))
                if sup else None,
                optim=optim, checkpoints=Checkpointing(Path(d) / name.replace(" ", "_")),
                runtime=RuntimeOptions(device="cpu", progress=False), hooks=hooks,
            )
            ck = sorted((Path(d) / name.replace(" ", "_") / "checkpoints").glob("ckpt-*.pt"))
            opt = torch.load(ck[-1], weights_only=False)["optimizer"]       # the last checkpoint's
            print(name, _sha(model.state_dict()), _sha(opt), _sha(_history(hist)))
    x = torch.randn(200, 12, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()
    torch.manual_seed(0)
    net = torch.nn.Linear(12, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    loss = lambda idx: torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
    hist = fit_rows(net, opt, len(x), 3, 32, np.random.default_rng(0), loss)
    print("fit_rows", _sha(net.state_dict()), _sha(opt.state_dict()), _sha(_history(hist)))


if __name__ == "__main__":
    sys.exit(main())
