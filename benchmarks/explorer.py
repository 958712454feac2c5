"""Explorer speed: from an embedding table (default 50k x 128) to a ready figure.

Measures, in one process on the same data:
  * projection time uncached (openTSNE as used by `explore.projection`, UMAP) and cached (read from disk);
  * scikit-learn's t-SNE on the same PCA-50 input with the same perplexity and iteration count (the peer);
  * building the explorer and its figure from a cached projection, and the size of the figure sent to the browser.

    python benchmarks/explorer.py [--n 50000] [--dim 128] [--sklearn-n 50000] [--skip-umap]

Results are printed and written to benchmarks/results/explorer.json.
"""
import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch


def clustered(n, dim, n_classes=50, seed=0):
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, (n * (1 / np.arange(1, n_classes + 1)) / (1 / np.arange(1, n_classes + 1)).sum()).astype(int))
    sizes[0] += n - sizes.sum()
    y = np.repeat(np.arange(n_classes), sizes)
    z = rng.normal(size=(n_classes, dim))[y] * 2.0 + rng.normal(size=(n, dim))
    return z.astype(np.float32), y


def timed(fn):
    t0 = time.perf_counter(); out = fn(); return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--sklearn-n", type=int, default=None, help="points for the scikit-learn comparison (default: --n)")
    ap.add_argument("--skip-umap", action="store_true")
    args = ap.parse_args()
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE as SkTSNE
    from contrastive_nb.evaluate import embedding_table
    from contrastive_nb.explore import Explorer, projection

    z, y = clustered(args.n, args.dim)
    table = embedding_table(z, labels=y)
    cache = Path(tempfile.mkdtemp(prefix="cnb-bench-"))
    res = {"n": args.n, "dim": args.dim, "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
           "machine": platform.processor() or platform.machine()}

    _, res["tsne_uncached_s"] = timed(lambda: projection(z, "tsne", cache_dir=cache))
    _, res["tsne_cached_s"] = timed(lambda: projection(z, "tsne", cache_dir=cache))
    if not args.skip_umap:
        _, res["umap_uncached_s"] = timed(lambda: projection(z, "umap", cache_dir=cache))
        _, res["umap_cached_s"] = timed(lambda: projection(z, "umap", cache_dir=cache))

    ex, res["explorer_build_cached_s"] = timed(lambda: Explorer(table, method="tsne", cache_dir=cache))
    fig, res["figure_build_s"] = timed(ex.figure)
    js, res["figure_json_s"] = timed(fig.to_json)
    res["figure_json_mb"] = len(js) / 1e6
    _, res["widget_build_s"] = timed(lambda: ex.widget)

    # the peer: scikit-learn's Barnes-Hut t-SNE on the same normalised PCA-50 input, same perplexity and iterations
    m = args.sklearn_n or args.n
    zs = z[:m] / np.linalg.norm(z[:m], axis=1, keepdims=True)
    x50 = PCA(50, random_state=0).fit_transform(zs)
    from openTSNE import TSNE as OpenTSNE
    _, res["opentsne_same_input_s"] = timed(lambda: OpenTSNE(n_components=2, perplexity=30, initialization="pca", n_jobs=-1,
                                                             random_state=0).fit(x50))
    _, res["sklearn_tsne_s"] = timed(lambda: SkTSNE(2, perplexity=30, init="pca", max_iter=750, random_state=0,
                                                    n_jobs=-1).fit_transform(x50))
    res["sklearn_n"] = m
    res["sklearn_over_opentsne"] = res["sklearn_tsne_s"] / res["opentsne_same_input_s"]

    out = Path(__file__).parent / "results" / "explorer.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(pd.Series(res).to_string())


if __name__ == "__main__":
    main()
