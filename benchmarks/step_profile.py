"""What one `fit` update asks of the device: the aten ops it dispatches, and how many of them force the host to wait
for the device (a sync), counted with a `TorchDispatchMode` over whole epochs of `fit` with its default hooks.

Model: ResNet-18 with the CIFAR stem and the projection MLP 512-2048-128; data: CIFAR-shaped uint8 images
(32 px, 3 channels) in memory; views: `BatchViews("cifar")`. Two methods: SimCLR (NT-Xent) and SimCLR + SuNCEt
(NT-Xent on the unlabeled batch, SuNCEt on a class-stratified labeled batch of 10 classes x 2). Each at batch 16
and 512. Every op of every update is counted (data, views, forward, losses, backward, optimiser, hooks: finite
checks, FLOP ledger, progress, signals), and also the epoch's end (its record, the checks run there), divided by
the updates of the epoch.

Sync-forcing ops are the ones that need a value on the host: `aten._local_scalar_dense` (`.item()`, `bool()`,
`int()`, `float()` of a tensor), `aten.nonzero` (boolean masks), `aten.masked_select`, `aten.unique*`,
`aten.repeat_interleave` without a size, `aten.equal`, `aten.is_nonzero`, `aten._assert_async`, and copies from
the device to the host. On the CPU a `.tolist()` / `.numpy()` reads memory without dispatching an op: those are
caught by wrapping the Tensor methods while the counted epoch runs (integer tensors are left out there: the
sampler's ids and the colour-jitter order are drawn on the host by design, and a CUDA run shows they cost no sync). On CUDA the script also runs the same epoch
under `torch.cuda.set_sync_debug_mode("warn")` and counts the warnings: the device's own word.

Also measured: images/s of `fit` itself (hooks on, one epoch after a warm-up epoch) on this machine.

    python benchmarks/step_profile.py                       # CPU (and CUDA when present)
    python benchmarks/step_profile.py --batches 16 --updates 3 --out /tmp/p.json

Writes JSON to `--out` (default `nbs/results/bench_step/step_profile.json`), from which the README's table is made.
"""
from __future__ import annotations

import argparse, collections, contextlib, datetime, json, os, platform, time, warnings
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

SYNC_OPS = {
    "_local_scalar_dense", "nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
    "unique_consecutive", "equal", "is_nonzero", "_assert_async", "nonzero_static",
}


def _is_sync(func, args, kwargs) -> bool:
    name = func.__name__.split(".")[0]
    if name in SYNC_OPS:
        return True
    if name == "repeat_interleave" and kwargs.get("output_size") is None and len(args) == 1:
        return True
    if name in ("_to_copy", "copy_"):
        src = args[1] if name == "copy_" else args[0]
        dst_dev = kwargs.get("device") if name == "_to_copy" else args[0].device
        return (isinstance(src, torch.Tensor) and src.device.type != "cpu" and dst_dev is not None
                and torch.device(dst_dev).type == "cpu")
    if name == "index" and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] or []):
        return True
    return False


class OpCounter(TorchDispatchMode):
    "Counts dispatched aten ops, and the sync-forcing ones by name."

    def __init__(self):
        super().__init__()
        self.ops, self.syncs, self.where = 0, collections.Counter(), collections.Counter()
        self.loader_ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops += 1
        if _is_sync(func, args, kwargs):
            if _in_data_loader():      # the host-side pipeline of a file dataset: no device involved
                self.loader_ops += 1
            else:
                self.syncs[func.__name__] += 1
                self.where[_caller()] += 1
        return func(*args, **kwargs)


def _in_data_loader() -> bool:
    import traceback
    return any("torch/utils/data" in fr.filename for fr in traceback.extract_stack())


def _caller() -> str:
    "The innermost frame of the project (or the benchmark) that led to an op."
    import traceback
    for fr in reversed(traceback.extract_stack()[:-3]):
        if "contrastive_nb" in fr.filename or "kornia" in fr.filename:
            return f"{Path(fr.filename).name}:{fr.lineno} {fr.name}"
    return "other"


@contextlib.contextmanager
def host_reads(counter: collections.Counter):
    "Count `.tolist()` / `.numpy()` / `.cpu()` / `bool()` calls on tensors (no op is dispatched on the CPU)."
    saved = {}
    for name in ("tolist", "numpy"):      # bool()/int()/float()/.item() dispatch an op: counted there
        orig = getattr(torch.Tensor, name)
        saved[name] = orig

        def wrap(self, *a, _orig=orig, _name=name, **k):
            # a read of a host tensor is no sync: on CUDA only device tensors count; on the CPU,
            # where every tensor is a host tensor, integer ones (sampler ids, the colour-jitter
            # order, drawn on the host by design) are left out and float/bool ones counted
            device_like = self.is_cuda or (not torch.cuda.is_available()
                                           and (self.is_floating_point() or self.dtype == torch.bool))
            if self.numel() and device_like and not _in_data_loader():
                counter[_name] += 1
                counter["at " + _caller()] += 1
            return _orig(self, *a, **k)
        setattr(torch.Tensor, name, wrap)
    try:
        yield
    finally:
        for name, orig in saved.items():
            setattr(torch.Tensor, name, orig)


def make_model():
    from contrastive_nb.models import ContrastiveModel, ProjectionHead, build_encoder
    torch.manual_seed(0)
    enc = build_encoder("resnet18")
    return ContrastiveModel(enc, ProjectionHead(enc.feature_dim, 2048, 128))


def make_data(n: int, seed: int = 0):
    from contrastive_nb.data import TensorImageDataset
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.arange(n) % 10
    return TensorImageDataset(x.float() / 255, y)


def setup(method: str, batch: int, updates: int):
    "The arguments of `fit` for one method: (dataset, terms, views, labeled, sampler)."
    from contrastive_nb.augment import BatchViews
    from contrastive_nb.data import ClassStratifiedBatchSampler
    from contrastive_nb.train import LossTerm
    ds = make_data(batch * updates)
    terms = [LossTerm("nt_xent", temperature=0.5)]
    labeled = sampler = None
    if method == "simclr+suncet":
        labeled = make_data(200, seed=1)
        sampler = ClassStratifiedBatchSampler(labeled.targets, 10, 2, seed=0)
        terms.append(LossTerm("suncet", temperature=0.1))
    return ds, terms, BatchViews("cifar"), labeled, sampler


class _Counted:
    "A hook that counts the ops of the second epoch only (the first warms up caches and lazy state)."

    def __new__(cls, counter, reads):
        from contrastive_nb.train import Hook

        class Counted(Hook):
            def __init__(self):
                self.mode, self.reads, self.t0 = counter, reads, None

            def before_epoch(self, run, epoch):
                if epoch == 1:
                    self.stack = contextlib.ExitStack()
                    self.stack.enter_context(self.mode)
                    self.stack.enter_context(host_reads(self.reads))
                    self.t0 = time.perf_counter()

            def after_fit(self, run):
                if self.t0 is not None:
                    self.stack.close()
                    self.seconds = time.perf_counter() - self.t0
                    self.t0 = None
        return Counted()


def profile(method: str, batch: int, updates: int, device: str) -> dict:
    from contrastive_nb.train import LabeledData, RuntimeOptions, fit
    ds, terms, views, labeled, sampler = setup(method, batch, updates)
    counter, reads = OpCounter(), collections.Counter()
    hook = _Counted(counter, reads)
    model = make_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(
            model,
            ds,
            terms,
            views.to(device),
            epochs=2,
            batch_size=batch,
            labeled=LabeledData(labeled, sampler),
            runtime=RuntimeOptions(device=device, validate=False, progress=True),
            hooks=[hook],
        )
    n = updates
    host = sum(v for k, v in reads.items() if not k.startswith("at "))
    return {
        "method": method, "batch": batch, "updates": n, "device": device,
        "ops_per_update": counter.ops / n,
        "sync_ops_per_update": (sum(counter.syncs.values()) + host) / n,
        "sync_ops_by_name": dict(counter.syncs), "host_reads_by_name": {k: v for k, v in reads.items()
                                                                     if not k.startswith("at ")},
        "sync_sites": dict(counter.where.most_common(12)),
        "host_read_sites": {k[3:]: v for k, v in reads.most_common() if k.startswith("at ")},
    }


def throughput(batch: int, updates: int, device: str) -> dict:
    "Images/s of `fit` (default hooks, progress bar on) over its second epoch."
    from contrastive_nb.train import Hook, RuntimeOptions, fit
    ds, terms, views, _, _ = setup("simclr", batch, updates)
    times = {}

    class Clock(Hook):
        def before_epoch(self, run, epoch):
            if run.device.type == "cuda":
                torch.cuda.synchronize()
            times[epoch] = time.perf_counter()

        def after_epoch(self, run, record):
            if run.device.type == "cuda":
                torch.cuda.synchronize()
            times[record["epoch"] - 1] = time.perf_counter() - times[record["epoch"] - 1]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(
            make_model(),
            ds,
            terms,
            views.to(device),
            epochs=2,
            batch_size=batch,
            runtime=RuntimeOptions(device=device, validate=False),
            hooks=[Clock()],
        )
    return {"batch": batch, "updates": updates, "device": device,
            "images_per_s": batch * updates / times[1], "epoch_s": times[1]}


def cuda_sync_warnings(method: str, batch: int, updates: int) -> dict:
    "The same epoch on CUDA under torch's sync debug mode: each synchronising call warns once."
    from contrastive_nb.train import Hook, LabeledData, RuntimeOptions, fit
    ds, terms, views, labeled, sampler = setup(method, batch, updates)
    caught = []

    class Debug(Hook):
        def before_epoch(self, run, epoch):
            if epoch == 1:
                torch.cuda.set_sync_debug_mode("warn")

        def after_fit(self, run):
            torch.cuda.set_sync_debug_mode(0)

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fit(
            make_model(),
            ds,
            terms,
            views.to("cuda"),
            epochs=2,
            batch_size=batch,
            labeled=LabeledData(labeled, sampler),
            runtime=RuntimeOptions(device="cuda", validate=False),
            hooks=[Debug()],
        )
        caught = [x for x in w if "synchroniz" in str(x.message).lower()]
    sites = collections.Counter(f"{Path(x.filename).name}:{x.lineno}" for x in caught)
    return {"method": method, "batch": batch, "updates": updates,
            "sync_warnings_per_update": len(caught) / updates, "sites": dict(sites.most_common(20)),
            "examples": sorted(set(str(x.message)[:160] for x in caught))[:5]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[16, 512])
    ap.add_argument("--updates", type=int, default=8, help="updates in the counted epoch")
    ap.add_argument("--methods", nargs="+", default=["simclr", "simclr+suncet"])
    ap.add_argument("--devices", nargs="+", default=None, help="default: cpu, and cuda when present")
    ap.add_argument("--throughput-batch", type=int, default=64)
    ap.add_argument("--throughput-updates", type=int, default=8)
    ap.add_argument("--out", default="nbs/results/bench_step/step_profile.json")
    a = ap.parse_args(argv)
    from contrastive_nb.runs import run_environment, write_provenance
    env = run_environment(Path(__file__).parent)  # taken before the measurement writes anything
    devices = a.devices or (["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    rows, speed, debug = [], [], []
    for dev in devices:
        for method in a.methods:
            for b in a.batches:
                r = profile(method, b, a.updates, dev)
                rows.append(r)
                print(f"{dev:5s} {method:14s} B={b:4d}: {r['ops_per_update']:8.0f} ops/update, "
                      f"{r['sync_ops_per_update']:6.2f} sync-forcing/update", flush=True)
        speed.append(throughput(a.throughput_batch, a.throughput_updates, dev))
        print(f"{dev:5s} fit: {speed[-1]['images_per_s']:.0f} images/s at batch {a.throughput_batch}", flush=True)
        if dev == "cuda":
            for method in a.methods:
                debug.append(cuda_sync_warnings(method, max(a.batches), a.updates))
                print(f"cuda  {method}: {debug[-1]['sync_warnings_per_update']:.2f} sync warnings/update")
    by = {(r["device"], r["method"], r["batch"]): r["ops_per_update"] for r in rows}
    ratios = {f"{d}/{m}": by[(d, m, max(a.batches))] / by[(d, m, min(a.batches))]
              for d in devices for m in a.methods}
    out = {
        "what": "aten ops and sync-forcing ops per fit update (default hooks), images/s of fit",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "torch": torch.__version__,
                    "cpu_count": os.cpu_count(), "threads": torch.get_num_threads(),
                    "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None},
        "profile": rows, "ops_ratio_max_over_min_batch": ratios, "throughput": speed,
        "cuda_sync_debug": debug,
    }
    out["commit"] = env["commit"]  # $CNB_COMMIT where set (a copy of the tree without its git history)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    write_provenance(a.out, {"script": "benchmarks/step_profile.py", "arguments": {k: v for k, v in vars(a).items() if k != "out"},
                             "gpu": out["machine"]["gpu"]}, env)
    print(json.dumps({"ratios": ratios}, indent=1))


if __name__ == "__main__":
    main()
