"""Checks that need a CUDA device, run where one is present (the CPU suite cannot): bitwise resume on CUDA with and
without `RuntimeOptions(deterministic=True)`, a resumed run's CUDA RNG state, and `compile=True` training.

Each check trains a small conv net with SimCLR + SuNCEt on CIFAR-shaped random images for 2 epochs, once straight
through and once stopped after epoch 1 and resumed in a new `fit` call, and compares every weight and optimiser
buffer bit for bit. Writes JSON to `--out` (default `nbs/results/bench_step/cuda_checks.json`).

    python benchmarks/cuda_checks.py
"""
from __future__ import annotations

import argparse, dataclasses, datetime, json, tempfile, warnings
from pathlib import Path

import torch


def _run(run_dir, stop_after_epoch, runtime, seed=0):
    from contrastive_nb.augment import BatchViews
    from contrastive_nb.data import ClassStratifiedBatchSampler, TensorImageDataset
    from contrastive_nb.models import ContrastiveModel, ProjectionHead, SmallConvNet
    from contrastive_nb.checkpoint import load_checkpoint
    from contrastive_nb.train import Checkpointing, LabeledData, LossTerm, fit
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (1024, 3, 32, 32), generator=g).float() / 255
    y = torch.arange(1024) % 10
    ds, lab = TensorImageDataset(x, y), TensorImageDataset(x[:200], y[:200])
    torch.manual_seed(seed)
    enc = SmallConvNet(in_channels=3)
    model = ContrastiveModel(enc, ProjectionHead(enc.feature_dim, 128, 64))
    terms = [LossTerm("nt_xent"), LossTerm("suncet", until_epoch=2)]
    runtime = dataclasses.replace(runtime, device="cuda", progress=False, validate=False)
    kw = dict(epochs=2, batch_size=128, runtime=runtime)
    sampler = lambda: ClassStratifiedBatchSampler(lab.targets, 10, 4, seed=0)
    fit(model, ds, terms, BatchViews("cifar"), labeled=LabeledData(lab, sampler()),
        checkpoints=Checkpointing(run_dir, stop_after_epoch=stop_after_epoch), **kw)
    if stop_after_epoch is not None:
        torch.manual_seed(123)          # a different process state: the checkpoint must restore it
        enc = SmallConvNet(in_channels=3)
        model = ContrastiveModel(enc, ProjectionHead(enc.feature_dim, 128, 64))
        fit(model, ds, terms, BatchViews("cifar"), labeled=LabeledData(lab, sampler()),
            checkpoints=Checkpointing(run_dir), **kw)
    return load_checkpoint(Path(run_dir) / "checkpoints")


def _same(a, b) -> bool:
    ok = all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    return ok and all(torch.equal(sa[i][k], sb[i][k]) for i in sa for k in sa[i]) and a["step_log"]["loss"] == b["step_log"]["loss"]


def main(argv=None):
    from contrastive_nb.train import RuntimeOptions
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="nbs/results/bench_step/cuda_checks.json")
    a = ap.parse_args(argv)
    from contrastive_nb.runs import run_environment, write_provenance
    env = run_environment(Path(__file__).parent)  # taken before the measurement writes anything
    warnings.simplefilter("ignore")
    out = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "commit": env["commit"], "checks": {}}
    for name, rt in {"default (TF32, cudnn.benchmark, channels-last)": RuntimeOptions(),
                     "deterministic=True": RuntimeOptions(deterministic=True),
                     "compile=True": RuntimeOptions(compile=True)}.items():
        with tempfile.TemporaryDirectory() as d:
            straight = _run(f"{d}/a", None, rt)
            resumed = _run(f"{d}/b", 1, rt)
            again = _run(f"{d}/c", None, rt)
            finite = all(torch.isfinite(v).all() for v in straight["model"].values())
            out["checks"][name] = {"resumed_equals_straight": _same(straight, resumed),
                                   "rerun_equals_run": _same(straight, again), "finite": bool(finite),
                                   "final_loss": straight["step_log"]["loss"][-1]}
            print(name, out["checks"][name], flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    write_provenance(a.out, {"script": "benchmarks/cuda_checks.py", "arguments": {k: v for k, v in vars(a).items() if k != "out"}, "gpu": out["gpu"]}, env)


if __name__ == "__main__":
    main()
