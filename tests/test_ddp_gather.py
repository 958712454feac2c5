"""`gather_with_grad` across 2 CPU processes (gloo): forward equals the global batch, and gradients reach each
rank's own rows so that DDP's averaging gives the single-process gradient on the global batch."""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastive_nb.losses import gather_with_grad, nt_xent, suncet


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, z1, z2, y, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        n = z1.shape[0] // world
        sl = slice(rank * n, (rank + 1) * n)
        a = z1[sl].clone().requires_grad_(True); b = z2[sl].clone().requires_grad_(True)
        # the size-checked gather and the engine's (sizes known equal: no size collectives) agree
        g1, g2 = gather_with_grad(a), gather_with_grad(b, equal_sizes=True)
        yy = gather_with_grad(y[sl].float()).long()
        loss = nt_xent(g1, g2, 0.5) + suncet(torch.cat([g1, g2]), torch.cat([yy, yy]), 0.1)
        loss.backward()
        # DDP averages parameter gradients over ranks: emulate on the embedding gradients
        out[rank] = {"loss": loss.item(), "ga": (a.grad / world).clone(), "gb": (b.grad / world).clone(),
                     "g1": g1.detach().clone()}
    finally:
        dist.destroy_process_group()


def test_gather_with_grad_matches_single_process():
    torch.manual_seed(0)
    world, N = 2, 8
    z1, z2, y = torch.randn(N, 5), torch.randn(N, 5), torch.arange(N) % 3
    out = mp.Manager().dict()
    mp.spawn(_worker, args=(world, _free_port(), z1, z2, y, out), nprocs=world, join=True)
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    ref = nt_xent(a, b, 0.5) + suncet(torch.cat([a, b]), torch.cat([y, y]), 0.1)
    ref.backward()
    n = N // world
    for r in range(world):
        assert torch.allclose(out[r]["g1"], z1)
        assert abs(out[r]["loss"] - ref.item()) < 1e-5
        assert torch.allclose(out[r]["ga"], a.grad[r * n:(r + 1) * n], atol=1e-6)
        assert torch.allclose(out[r]["gb"], b.grad[r * n:(r + 1) * n], atol=1e-6)


# --- the engine under DDP: one `fit` epoch on 2 ranks equals one process on the global batch -------------------

class _LinearEncoder(torch.nn.Module):
    "No batch norm (gloo has no SyncBatchNorm), so per-rank and global forward passes agree exactly."
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 16))
        self.feature_dim = 16
    def forward(self, x): return self.net(x)


def _make_model():
    from contrastive_nb.models import ContrastiveModel
    torch.manual_seed(0)
    return ContrastiveModel(_LinearEncoder(), torch.nn.Linear(16, 8))


def _identity(x):
    return x * 1.0


def _fit_digits(model, batch_size, hooks=None):
    "One epoch of NT-Xent on the digits (lr 0.1, CPU): the same run on one process and on two ranks."
    from contrastive_nb.data import load_digits
    from contrastive_nb.train import LossTerm, Optimization, RuntimeOptions, fit
    return fit(model, load_digits("train"), [LossTerm("nt_xent", temperature=0.5)], _identity, epochs=1,
               batch_size=batch_size, optim=Optimization(lr=0.1),
               runtime=RuntimeOptions(device="cpu", progress=False), hooks=hooks)


def _fit_worker(rank, world, port, out):
    from contrastive_nb.train import Evaluation
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        m = _make_model()
        calls = []
        # the evaluation runs on rank 0 only and its numbers reach every rank
        h = _fit_digits(m, 64, [Evaluation(lambda model: calls.append(rank) or {"score": 0.25 + dist.get_rank()})])
        out[rank] = {k: v.clone() for k, v in m.state_dict().items()}
        out[f"eval{rank}"] = (calls, h[-1]["score"])
    finally:
        dist.destroy_process_group()


def test_fit_ddp_equals_single_process_on_global_batch():
    out = mp.Manager().dict()
    mp.spawn(_fit_worker, args=(2, _free_port(), out), nprocs=2, join=True)
    ref = _make_model()
    _fit_digits(ref, 128)           # the global batch: 2 ranks × 64
    assert out["eval0"] == ([0], 0.25) and out["eval1"] == ([], 0.25)       # computed once, on rank 0, shared
    for r in range(2):
        for k, v in ref.state_dict().items():
            assert torch.allclose(out[r][k], v, atol=1e-5), (r, k, (out[r][k] - v).abs().max())
    assert not torch.equal(ref.state_dict()["head.weight"], _make_model().state_dict()["head.weight"])   # it trained
