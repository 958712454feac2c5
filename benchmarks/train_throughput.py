"""Images per second of one SimCLR training step: contrastive_nb's engine step vs the same model and loss driven by
lightly's building blocks in a plain loop.

Both sides: ResNet-18 with the CIFAR stem, projection MLP 512-2048-128, NT-Xent (tau 0.5), SGD momentum 0.9, CIFAR-size
(32 px) colour images, batch 512 (two views each), the SimCLR CIFAR augmentations (random resized crop 0.08-1, flip,
colour jitter 0.4/0.4/0.4/0.1 with p 0.8, grayscale p 0.2, normalisation, no blur).

* contrastive_nb: `fit` itself with its default hooks (finite checks, FLOP ledger, progress, signals): the images in
  memory (a `TensorImageDataset`, kept on the device by the engine) -> `BatchViews("cifar")` (batched torch ops on the
  device, per-image parameters) -> the engine's update; the second epoch is timed.
* lightly: `lightly.transforms.SimCLRTransform` on PIL images in DataLoader workers -> model -> `lightly.loss.NTXentLoss`.

Reported: images/s (images = items per step, each seen in 2 views), and where the time goes (augmentation / data
wait vs forward+backward+step). Each device is measured twice, in opposite orders (ours first, lightly first), so a
drift of the machine shows. Not a test: writes the measurements to `--out` (default
`nbs/results/bench_throughput/throughput.json`), from which the README's table is generated.

    python benchmarks/train_throughput.py                 # CPU (and CUDA when present), batch 512
    python benchmarks/train_throughput.py --steps 3 --batch 512
"""
from __future__ import annotations

import argparse, datetime, json, os, platform, time
from pathlib import Path

import numpy as np
import torch


def make_model():
    from contrastive_nb.models import ContrastiveModel, ProjectionHead, build_encoder
    torch.manual_seed(0)
    enc = build_encoder("resnet18")
    return ContrastiveModel(enc, ProjectionHead(enc.feature_dim, 2048, 128))


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def bench_ours(images_u8, batch, steps, dev, amp):
    """`fit` itself, default hooks on (finite checks, FLOP ledger, progress bar, signals): the images in memory as a
    `TensorImageDataset` (kept on the device as uint8 by the engine), `BatchViews("cifar")` on the device; the second
    epoch of `steps` updates is timed (the first warms up: cuDNN's algorithm search, allocator)."""
    from contrastive_nb.augment import BatchViews
    from contrastive_nb.data import TensorImageDataset
    from contrastive_nb.train import Hook, LossTerm, Optimization, RuntimeOptions, fit
    n = batch * steps
    x = torch.as_tensor(images_u8[:n]).permute(0, 3, 1, 2).float().div(255)        # (n, 3, 32, 32) in [0, 1]
    ds = TensorImageDataset(x, np.zeros(n, dtype=np.int64))
    times = {}

    class Clock(Hook):
        def before_epoch(self, run, epoch):
            sync(dev); times[epoch] = time.perf_counter()

        def after_epoch(self, run, record):
            sync(dev); times[record["epoch"] - 1] = time.perf_counter() - times[record["epoch"] - 1]

    fit(
        make_model(),
        ds,
        [LossTerm("nt_xent", temperature=0.5)],
        BatchViews("cifar"),
        epochs=2,
        batch_size=batch,
        optim=Optimization(lr=0.3),
        runtime=RuntimeOptions(device=str(dev), amp=amp, validate=False),
        hooks=[Clock()],
    )
    step = times[1] / steps
    return {"images_per_s": batch / step, "step_s": step, "augment_s": None, "fwd_bwd_s": None}


class _PILDataset(torch.utils.data.Dataset):
    def __init__(self, images_u8, transform):
        from PIL import Image
        self.images = [Image.fromarray(a) for a in images_u8]
        self.transform = transform
    def __len__(self): return len(self.images)
    def __getitem__(self, i): return self.transform(self.images[i]), 0


def bench_lightly(images_u8, batch, steps, dev, amp, workers):
    from lightly.loss import NTXentLoss
    from lightly.transforms import SimCLRTransform
    tf = SimCLRTransform(input_size=32, cj_strength=0.5, min_scale=0.08, gaussian_blur=0.0,
                         normalize={"mean": [0.4914, 0.4822, 0.4465], "std": [0.2470, 0.2435, 0.2616]})
    loader = torch.utils.data.DataLoader(_PILDataset(images_u8, tf), batch_size=batch, shuffle=True, drop_last=True,
                                         num_workers=workers, persistent_workers=workers > 0,
                                         pin_memory=dev.type == "cuda")
    model = make_model().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    crit = NTXentLoss(temperature=0.5)
    t_data = t_fb = 0.0
    it, s = iter(loader), 0
    while s < steps + 1:
        t0 = time.perf_counter()
        try:
            (v1, v2), _ = next(it)
        except StopIteration:
            it = iter(loader); continue
        v1, v2 = v1.to(dev, non_blocking=True), v2.to(dev, non_blocking=True)
        sync(dev); t1 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp and dev.type == "cuda"):
            loss = crit(model(v1)[1], model(v2)[1])
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        sync(dev); t2 = time.perf_counter()
        if s > 0:
            t_data += t1 - t0; t_fb += t2 - t1
        s += 1
    step = (t_data + t_fb) / steps
    return {"images_per_s": batch / step, "step_s": step, "augment_s": t_data / steps, "fwd_bwd_s": t_fb / steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=None,
                    help="timed updates per contender (default: 3 on the CPU, 97 = one CIFAR-10 epoch at batch 512 on CUDA)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="DataLoader workers for lightly's loop")
    ap.add_argument("--devices", nargs="+", default=None)
    ap.add_argument("--no-amp", action="store_true", help="float32 on GPU too (default: bf16 autocast on GPU)")
    ap.add_argument("--orders", nargs="+", default=["ours-first", "lightly-first"], choices=["ours-first", "lightly-first"])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "nbs/results/bench_throughput/throughput.json"),
                    help="where to write the measurements (JSON); '' to skip")
    a = ap.parse_args()
    from contrastive_nb.runs import run_environment, write_provenance
    env = run_environment(Path(__file__).parent)  # taken before the measurement writes anything
    devices = a.devices or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    rng = np.random.default_rng(0)
    steps_of = lambda d: a.steps or (97 if d.startswith("cuda") else 3)
    images = rng.integers(0, 256, (max(max(steps_of(d) for d in devices) * a.batch, 2048), 32, 32, 3),
                          dtype=np.uint8)
    machine = (f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, threads {torch.get_num_threads()}"
               + (f", GPU {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""))
    print(f"machine: {machine}")
    print(f"ResNet-18 (CIFAR stem), batch {a.batch} x 2 views, 32 px, the second of two epochs timed\n")
    print("| device | order | contender | images/s | step (s) | augmentation / data wait (s) | forward+backward+step (s) | ours / lightly |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for d in devices:
        dev = torch.device(d)
        for order in a.orders:
            st = steps_of(d)
            run = {"ours": lambda: bench_ours(images, a.batch, st, dev, not a.no_amp),
                   "lightly": lambda: bench_lightly(images, a.batch, st, dev, not a.no_amp, a.workers)}
            first = ["ours", "lightly"] if order == "ours-first" else ["lightly", "ours"]
            res = {k: run[k]() for k in first}
            for name, r in [("contrastive_nb engine", res["ours"]), ("lightly loop", res["lightly"])]:
                ratio = res["ours"]["images_per_s"] / res["lightly"]["images_per_s"]
                rows.append({"device": d, "order": order, "contender": name, "steps": st, **r,
                             "ours_over_lightly": ratio if name.startswith("contrastive") else None})
                print(f"| {d} | {order} | {name} | {r['images_per_s']:.1f} | {r['step_s']:.3f} | {r['augment_s'] if r['augment_s'] is not None else float('nan'):.3f} | "
                      f"{r['fwd_bwd_s'] or float('nan'):.3f} | {f'{ratio:.2f}x' if name.startswith('contrastive') else ''} |", flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        meta = {"commit": env["commit"], "measured": datetime.date.today().isoformat(), "machine": machine, "batch": a.batch, "steps": a.steps or "per row",
                "workers": a.workers, "amp": not a.no_amp, "rows": rows}
        tmp = Path(a.out).with_suffix(".tmp"); tmp.write_text(json.dumps(meta, indent=1)); os.replace(tmp, a.out)
        write_provenance(a.out, {"script": "benchmarks/train_throughput.py", "arguments": {k: v for k, v in vars(a).items() if k != "out"}}, env)
        print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
