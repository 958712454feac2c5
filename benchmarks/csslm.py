"""CSS-LM's retrieval and loss terms: time against the peers, on the same inputs.

Retrieval (top-k and bottom-k by f_T = f_D + f_C, §3.3) over a corpus of M rows: `csslm.RepresentationStore` with
its torch backend (matmul + topk) against faiss's exact `IndexFlatIP` (the peer library; the store's "faiss"
backend, index rebuilt after every update as training does) — answers are checked equal first. Loss: `losses.css_loss`
(vectorised) against the literal per-anchor loops of `contrastive_nb.reference.ref_css` (float64, as the paper
writes Eqs. 2-3; the paper's own code is not installable here), values checked equal first; and `losses.class_loss`
with its labeled sums over the batch against over all N labeled rows (`anchors=`, checked against `ref_class` first).

    python benchmarks/csslm.py                       # M in {10k, 100k, 400k}, 2h = 768, 32 queries, k = 16

Not a test: prints markdown tables with ratios (peer time / our time).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def best_of(f, repeats):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return min(ts)


def retrieval(sizes, h, nq, k, repeats):
    from contrastive_nb.csslm import RepresentationStore, _has_faiss
    if not _has_faiss():
        print("faiss is not installed (pip install faiss-cpu): retrieval has no peer to compare with")
        return
    rows = []
    for m in sizes:
        g = torch.Generator().manual_seed(0)
        d, c = torch.randn(m, h, generator=g), torch.randn(m, h, generator=g)
        qd, qc = torch.randn(nq, h, generator=g), torch.randn(nq, h, generator=g)
        ours, peer = RepresentationStore(d, c, backend="torch"), RepresentationStore(d, c, backend="faiss")
        a, b = ours.search(qd, qc, k), peer.search(qd, qc, k)
        agree = float((a == b).float().mean())
        step = lambda s: (s.update(torch.arange(64), qd[:1].repeat(64, 1), qc[:1].repeat(64, 1)),   # one training step:
                          s.search(qd, qc, k), s.search(qd, qc, k, largest=False))                   # refresh, top, bottom
        t_ours, t_peer = best_of(lambda: step(ours), repeats), best_of(lambda: step(peer), repeats)
        rows.append((m, t_ours * 1e3, t_peer * 1e3, t_peer / t_ours, agree))
    print(f"\n### Retrieval step (update 64 rows, top-{k} and bottom-{k} for {nq} queries), 2h = {2 * h}, "
          f"{torch.get_num_threads()} threads\n")
    print("| corpus rows M | torch ms | faiss IndexFlatIP ms | faiss / torch | same top-k |")
    print("|---|---|---|---|---|")
    for m, to, tp, r, ag in rows:
        print(f"| {m:,} | {to:.1f} | {tp:.1f} | {r:.2f} | {ag:.3f} |")


def loss(n, p, q, h, repeats):
    from contrastive_nb.losses import css_loss
    from contrastive_nb.reference import ref_css
    g = torch.Generator().manual_seed(0)
    m = n * (p + q)
    x, xo = torch.randn(n, h, generator=g), torch.randn(m, h, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    perm = torch.randperm(m, generator=g).view(n, p + q)
    P, Q = perm[:, :p], perm[:, p:]
    ours = lambda: css_loss(x, y, xo, P, Q, 0.3)
    peer = lambda: ref_css(x, y, xo, P.tolist(), Q.tolist(), 0.3)
    assert abs(float(ours()) - float(peer())) < 1e-4
    t_ours, t_peer = best_of(ours, repeats), best_of(peer, max(1, repeats // 3))
    print(f"\n### L_CSS forward, N = {n} anchors, |P(i)| = {p}, |N(i)| = {q}, h = {h}\n")
    print("| css_loss ms | literal loops (ref_css) ms | loops / css_loss |")
    print("|---|---|---|")
    print(f"| {t_ours * 1e3:.2f} | {t_peer * 1e3:.0f} | {t_peer / t_ours:.0f} |")


def class_sums(n_all, b, p, h, repeats):
    "L_C of one batch: sums over the batch (the batch reading) against sums over all N labeled rows (a memory)."
    from contrastive_nb.losses import class_loss
    from contrastive_nb.reference import ref_class
    g = torch.Generator().manual_seed(0)
    m = n_all * p
    c, co = torch.randn(n_all, h, generator=g), torch.randn(m, h, generator=g)
    y = torch.randint(0, 4, (n_all,), generator=g)
    P = torch.randperm(m, generator=g).view(n_all, p)
    at = torch.arange(b)
    batch = lambda: class_loss(c[:b], y[:b], co, P[:b], 0.3)
    all_n = lambda: class_loss(c, y, co, P, 0.3, anchors=at)
    peer = lambda: ref_class(c, y, co, P.tolist(), 0.3, anchors=at.tolist())
    assert abs(float(all_n()) - float(peer())) < 1e-4
    t_b, t_all, t_peer = best_of(batch, repeats), best_of(all_n, repeats), best_of(peer, 1)
    print(f"\n### L_C forward, a batch of {b} anchors, N = {n_all} labeled rows in memory, |P_C(i)| = {p}, h = {h}\n")
    print("| batch reading ms | all-N reading ms | all-N / batch | literal loops (ref_class, all N) ms | loops / all-N |")
    print("|---|---|---|---|---|")
    print(f"| {t_b * 1e3:.2f} | {t_all * 1e3:.2f} | {t_all / t_b:.1f} | {t_peer * 1e3:.0f} | {t_peer / t_all:.0f} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 400_000])
    ap.add_argument("--width", type=int, default=384, help="width of d and of c (2h is searched for f_T)")
    ap.add_argument("--queries", type=int, default=32)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    retrieval(a.sizes, a.width, a.queries, a.k, a.repeats)
    loss(8, 16, 16, 768, a.repeats)
    class_sums(64, 8, 16, 384, a.repeats)
