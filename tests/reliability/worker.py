"""One tiny training run for the reliability scenarios, in its own process (plain `python` or under torchrun).

It trains a linear encoder on the bundled digits with NT-Xent on the main loader and SuNCEt on a labeled loader
(class-stratified batches that cycle several times per epoch), and can inject one fault: SIGKILL after an update,
a slowed checkpoint write, a crash on one rank, a signal to itself, a non-finite loss or gradient. When the run
ends it writes `out/result-rank<r>.json`: how it ended, and (on success) random draws taken right after `fit`.
"""
import argparse
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from contrastive_nb.core import atomic_write_text
from contrastive_nb.data import ClassStratifiedBatchSampler, labeled_fraction_split, load_digits
from contrastive_nb.models import ContrastiveModel
from contrastive_nb.checkpoint import CheckpointError, NonFiniteError, Preempted
from contrastive_nb.train import (Checkpointing, LabeledData, LossTerm, OnStep, Optimization, RuntimeOptions, fit,
                                  init_distributed)


class TinyEncoder(torch.nn.Module):
    def __init__(self, activation="relu", dropout=0.0):
        super().__init__()
        act = torch.nn.ReLU() if activation == "relu" else torch.nn.Tanh()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), act, torch.nn.Dropout(dropout))
        self.feature_dim = 32
    def forward(self, x): return self.net(x)


class Scale:
    "A dataset transform with a setting."
    def __init__(self, factor): self.factor = factor
    def __call__(self, x): return x * self.factor


class Views:
    "Noise and a random flip, drawn from torch's global RNG (so RNG restore is exercised); NaN/Inf when armed."
    poison = None
    def __init__(self, noise=0.05): self.noise = noise
    def __call__(self, x):
        x = x + self.noise * torch.randn_like(x)
        flip = torch.rand(x.shape[0], 1, 1, 1) < 0.5
        x = torch.where(flip, x.flip(-1), x)
        return x * self.poison if self.poison is not None else x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64, help="per rank")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--subset", type=int, help="train on the first N items only (a changed dataset)")
    ap.add_argument("--checkpoint-every", type=int)
    ap.add_argument("--kill-at", type=int, help="SIGKILL this process after this update (and its checkpoint)")
    ap.add_argument("--slow-save", choices=["checkpoint", "latest"], help="stall inside this file's write ...")
    ap.add_argument("--slow-save-at", type=int, help="... of the checkpoint of this update; touch out/saving first")
    ap.add_argument("--crash-at", type=int, help="exit(1) on rank --crash-rank after this update, once (marker file)")
    ap.add_argument("--crash-rank", type=int, default=1)
    ap.add_argument("--raise-signal-at", type=int, help="send --raise-signal to this process after this update ...")
    ap.add_argument("--raise-signal-rank", type=int, default=0, help="... on this rank only")
    ap.add_argument("--raise-signal", default="SIGTERM")
    ap.add_argument("--nan", choices=["loss", "inf-loss", "grad"], help="inject NaN views, an Inf loss or NaN gradients ...")
    ap.add_argument("--nan-at", type=int, help="... into this update")
    ap.add_argument("--activation", default="relu", choices=["relu", "tanh"], help="the encoder's activation")
    ap.add_argument("--dropout", type=float, default=0.0, help="the encoder's dropout rate")
    ap.add_argument("--views-noise", type=float, default=0.05, help="the views' noise level")
    ap.add_argument("--scale", type=float, help="a dataset transform multiplying every image by this")
    ap.add_argument("--cut-sidecar-at", type=int, help="SIGKILL this process just before the sidecar of this update's checkpoint")
    ap.add_argument("--progress-file", action="store_true", help="write out/progress-rank<r> after every update")
    a = ap.parse_args()

    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        init_distributed("gloo")
    rank = dist.get_rank() if world > 1 else 0
    torch.set_num_threads(1)

    tr = load_digits("train", transform=Scale(a.scale) if a.scale is not None else None)
    if a.subset:
        tr = tr.subset(np.arange(a.subset))
    lab, _ = labeled_fraction_split(tr.targets, 0.1, seed=0)
    labeled = tr.subset(lab)
    sampler = ClassStratifiedBatchSampler(labeled.targets, 5, 2, seed=0)
    torch.manual_seed(0)
    enc = TinyEncoder(a.activation, a.dropout)
    model = ContrastiveModel(enc, torch.nn.Linear(32, 16))
    views = Views(a.views_noise)
    armed = {"grad": False, "inf-loss": False}
    model.head.weight.register_hook(lambda g: g * float("nan") if armed["grad"] else g)
    plain_call = LossTerm.__call__
    def call_with_inf(self, *args, **kwargs):          # an Inf in the loss value itself (not through the inputs)
        v = plain_call(self, *args, **kwargs)
        return v + float("inf") if armed["inf-loss"] and self.name == "nt_xent" else v
    LossTerm.__call__ = call_with_inf

    if a.slow_save:                        # stall in the real atomic write: after the data is written, before rename
        real_fsync = os.fsync
        def slow_fsync(fd):
            name = os.readlink(f"/proc/self/fd/{fd}")
            target = (f"ckpt-{a.slow_save_at:09d}.pt" if a.slow_save == "checkpoint" else "latest.json")
            state_ok = a.slow_save == "checkpoint" or Path(a.run_dir, "checkpoints", f"ckpt-{a.slow_save_at:09d}.json").exists()
            if f".{target}." in name and state_ok:
                (out / "saving").write_text(name)
                time.sleep(120)
            return real_fsync(fd)
        os.fsync = slow_fsync

    if a.cut_sidecar_at is not None:       # the checkpoint's .pt is in place; its sidecar is never written
        import contrastive_nb.checkpoint as engine      # the checkpointer's module writes the sidecars
        real_write = engine.atomic_write_json
        def cut(path, obj, *args, **kwargs):
            if Path(path).name == f"ckpt-{a.cut_sidecar_at:09d}.json":
                os.kill(os.getpid(), signal.SIGKILL)
            return real_write(path, obj, *args, **kwargs)
        engine.atomic_write_json = cut

    def on_step(update):
        if a.progress_file:
            atomic_write_text(out / f"progress-rank{rank}", str(update))   # a reader never sees a half-written file
        if a.nan_at is not None and update + 1 == a.nan_at:          # poison the next update
            if a.nan == "loss": views.poison = float("nan")      # NaN views: a NaN loss
            else: armed[a.nan] = True
        if a.kill_at == update:
            os.kill(os.getpid(), signal.SIGKILL)
        if a.crash_at == update and rank == a.crash_rank:
            marker = Path(a.run_dir) / f"crashed-rank{rank}"
            if not marker.exists():
                marker.write_text("1")
                os._exit(1)
        if a.raise_signal_at == update and rank == a.raise_signal_rank:
            os.kill(os.getpid(), getattr(signal, a.raise_signal))

    result = {"rank": rank}
    try:
        fit(
            model,
            tr,
            [LossTerm("nt_xent", temperature=0.5), LossTerm("suncet", temperature=0.1)],
            views,
            epochs=a.epochs,
            batch_size=a.batch_size,
            labeled=LabeledData(labeled, sampler),
            optim=Optimization(lr=a.lr),
            checkpoints=Checkpointing(a.run_dir, every=a.checkpoint_every),
            runtime=RuntimeOptions(device="cpu", num_workers=a.workers, progress=False),
            hooks=[OnStep(on_step)],
            seed=a.seed,
        )
        result.update(status="done", draws={"torch": torch.rand(4).tolist(), "numpy": np.random.rand(4).tolist(),
                                            "python": [random.random() for _ in range(4)]})
        code = 0
    except Preempted as e:
        result.update(status="preempted", update=e.update, signal=e.signal_name, message=str(e))
        code = 0
    except NonFiniteError as e:
        result.update(status="nonfinite", update=e.update, term=e.term, message=str(e),
                      batch_ids={k: v.tolist() for k, v in e.batch_ids.items()})
        code = 3
    except CheckpointError as e:
        result.update(status="checkpoint_error", message=str(e))
        code = 4
    (out / f"result-rank{rank}.json").write_text(json.dumps(result))
    if world > 1 and code == 0:
        dist.destroy_process_group()
    sys.exit(code)


if __name__ == "__main__":
    main()
