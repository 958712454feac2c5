"""Forward+backward time and peak memory of contrastive_nb's losses against the peers, on the same inputs.

Peers: lightly's `NTXentLoss`, pytorch-metric-learning's `NTXentLoss` and `SupConLoss`, and a plain dense
PyTorch implementation written the way the papers' reference code computes these losses (full similarity
matrix, masked log-softmax). Values are checked equal before anything is timed. Each (loss, size, contender)
runs in its own subprocess, so peak memory is that contender's alone and a contender that cannot run a size
(out of memory, or over the time limit) is marked so instead of being waited on.

    python benchmarks/losses.py                 # 2N in {512, 2048, 8192}, d = 128, CPU (and CUDA if present)
    python benchmarks/losses.py --sizes 4096 --repeats 5

Not a test: prints a markdown table of ratios (peer time / our time; peer memory / our memory) and writes every
measurement to `--out` (default `nbs/results/bench_losses/losses.json`), from which the README's table is generated.
"""
from __future__ import annotations

import argparse, datetime, json, os, platform, resource, subprocess, sys, time
from pathlib import Path

TEMPERATURE = 0.5


def make_inputs(n2, d, device, seed=0):
    import torch
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n2, d, generator=g).to(device)
    labels = torch.randint(0, 10, (n2,), generator=g).to(device)
    return z, labels


def dense_reference_ntxent(z1, z2, t):
    "NT-Xent the way SimCLR-style reference code writes it: full 2N x 2N logits, mask self, cross-entropy."
    import torch, torch.nn.functional as F
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    logits = z @ z.T / t
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(logits, target)


def dense_reference_supcon(z, y, t):
    "SupCon (L_out) the way the paper's reference code computes it: full logits, log-softmax, mean over positives."
    import torch
    import torch.nn.functional as F
    u = F.normalize(z, dim=1)
    logits = u @ u.T / t
    eye = torch.eye(len(y), dtype=torch.bool, device=z.device)
    logits = logits - logits.max(1, keepdim=True).values.detach()
    pos = (y[:, None] == y[None, :]) & ~eye
    log_prob = logits - torch.log((torch.exp(logits) * (~eye)).sum(1, keepdim=True))
    npos = pos.sum(1)
    keep = npos > 0
    return (-(log_prob * pos).sum(1)[keep] / npos[keep]).mean()


def build(loss, contender, n2):
    "Return f(z, labels) -> scalar loss for one contender."
    import torch
    t = TEMPERATURE
    if loss == "nt_xent":
        n = n2 // 2
        if contender == "contrastive_nb":
            from contrastive_nb.losses import nt_xent
            return lambda z, y: nt_xent(z[:n], z[n:], t)
        if contender == "dense reference":
            return lambda z, y: dense_reference_ntxent(z[:n], z[n:], t)
        if contender == "lightly":
            from lightly.loss import NTXentLoss
            f = NTXentLoss(temperature=t)
            return lambda z, y: f(z[:n], z[n:])
        if contender == "pml":
            from pytorch_metric_learning.losses import NTXentLoss
            f = NTXentLoss(temperature=t)
            ids = torch.arange(n)
            return lambda z, y: f(z, torch.cat([ids, ids]).to(z.device))
    if loss == "supcon":
        if contender == "contrastive_nb":
            from contrastive_nb.losses import supcon
            return lambda z, y: supcon(z, y, t, "out")
        if contender == "dense reference":
            return lambda z, y: dense_reference_supcon(z, y, t)
        if contender == "pml":
            from pytorch_metric_learning.losses import SupConLoss
            f = SupConLoss(temperature=t)
            return lambda z, y: f(z, y)
    raise KeyError((loss, contender))


CONTENDERS = {"nt_xent": ["contrastive_nb", "lightly", "pml", "dense reference"],
              "supcon": ["contrastive_nb", "pml", "dense reference"]}


def worker(loss, contender, n2, d, device, repeats):
    "Runs in a subprocess: value, median fwd+bwd seconds, peak memory (bytes above the inputs)."
    import torch
    torch.manual_seed(0)
    z0, y = make_inputs(n2, d, device)
    f = build(loss, contender, n2)

    def step():
        z = z0.detach().clone().requires_grad_(True)
        out = f(z, y)
        out.backward()
        if device == "cuda": torch.cuda.synchronize()
        return out.item(), z.grad

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    value, grad = step()                      # warm-up, and the value/gradient for the equality check
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
    times.sort()
    return {"value": value, "seconds": times[len(times) // 2], "peak_bytes": peak,
            "grad_head": grad.flatten()[:64].double().cpu().tolist()}


def run_one(loss, contender, n2, d, device, repeats, timeout):
    cmd = [sys.executable, __file__, "--worker", loss, contender, str(n2), str(d), device, str(repeats)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"over {timeout}s"}
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["failed"])[-1]
        return {"status": "out of memory" if "memory" in err.lower() or p.returncode in (-9, 137) else f"failed: {err[:80]}"}
    return {"status": "ok", **json.loads(p.stdout.strip().splitlines()[-1])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 2048, 8192], help="2N values")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a contender is marked as not finishing")
    ap.add_argument("--devices", nargs="+", default=None)
    ap.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "nbs/results/bench_losses/losses.json"),
                    help="where to write the measurements (JSON); '' to skip")
    a = ap.parse_args()
    from contrastive_nb.runs import run_environment, write_provenance
    env = run_environment(Path(__file__).parent)  # taken before the measurement writes anything
    if a.worker:
        loss, contender, n2, d, device, repeats = a.worker
        print(json.dumps(worker(loss, contender, int(n2), int(d), device, int(repeats))))
        return
    import torch
    devices = a.devices or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
               f"threads {torch.get_num_threads()}" + (f", GPU {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""))
    print(f"machine: {machine}")
    rows = []
    print(f"d = {a.dim}, temperature = {TEMPERATURE}, float32, median of {a.repeats} forward+backward passes\n")
    print("| device | loss | 2N | contender | value | time (s) | peak mem (MiB) | time ratio peer/ours | memory ratio peer/ours |")
    print("|---|---|---|---|---|---|---|---|---|")
    for device in devices:
        for loss, contenders in CONTENDERS.items():
            for n2 in a.sizes:
                res = {c: run_one(loss, c, n2, a.dim, device, a.repeats, a.timeout) for c in contenders}
                ours = res["contrastive_nb"]
                rows += [{"device": device, "loss": loss, "n2": n2, "contender": c, **{k: v for k, v in r.items() if k != "grad_head"},
                          "matches_ours": None if c == "contrastive_nb" or r["status"] != "ok" or ours["status"] != "ok" else
                          bool(abs(r["value"] - ours["value"]) <= 1e-3 * max(1, abs(ours["value"])) and
                               max(abs(x - y) for x, y in zip(r["grad_head"], ours["grad_head"])) <= 1e-4)} for c, r in res.items()]
                for c in contenders:
                    r = res[c]
                    if r["status"] != "ok":
                        print(f"| {device} | {loss} | {n2} | {c} | – | {r['status']} | – | – | – |"); continue
                    if ours["status"] == "ok" and c != "contrastive_nb":
                        dv = abs(r["value"] - ours["value"]); dg = max(abs(x - y) for x, y in zip(r["grad_head"], ours["grad_head"]))
                        if dv > 1e-3 * max(1, abs(ours["value"])) or dg > 1e-4:
                            print(f"| {device} | {loss} | {n2} | {c} | {r['value']:.5f} | VALUE MISMATCH (|Δ|={dv:.2e}, grad {dg:.2e}) | | | |"); continue
                    tr = f"{r['seconds'] / ours['seconds']:.2f}x" if ours["status"] == "ok" and c != "contrastive_nb" else ""
                    mr = f"{r['peak_bytes'] / max(ours['peak_bytes'], 1):.2f}x" if ours["status"] == "ok" and c != "contrastive_nb" else ""
                    print(f"| {device} | {loss} | {n2} | {c} | {r['value']:.5f} | {r['seconds']:.4f} | "
                          f"{r['peak_bytes'] / 2**20:.0f} | {tr} | {mr} |", flush=True)

    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        meta = {"measured": datetime.date.today().isoformat(), "machine": machine, "dim": a.dim,
                "temperature": TEMPERATURE, "repeats": a.repeats, "dtype": "float32", "rows": rows}
        tmp = Path(a.out).with_suffix(".tmp"); tmp.write_text(json.dumps(meta, indent=1)); os.replace(tmp, a.out)
        write_provenance(a.out, {"script": "benchmarks/losses.py", "arguments": {k: v for k, v in vars(a).items() if k != "out"}}, env)
        print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
