"""Explorer speed, in two parts; each writes its figures into nbs/results/explorer/benchmark.json (the README's table
is generated from that file).

projection: from an embedding table (default 20,000 x 128, 50 clustered classes) to a laid-out figure, in one process:
  * t-SNE (openTSNE, as `explore.projection` runs it) and UMAP, uncached and cached;
  * the peer: scikit-learn's Barnes-Hut t-SNE on the same PCA-50 input, same perplexity and iterations;
  * building the explorer and its figure from the cached projection.

browser: the explorer at 100,000 points (all drawn, projection cached) in JupyterLab + headless Chromium (software
WebGL), driven with real mouse events through the harness of tests/test_explorer_browser.py:
  * page: notebook run -> plot drawn; a colour change -> redrawn;
  * hover -> the kernel's item panel updated (timed in the page, from the mouse event to the panel's change);
  * box selection -> plotly's selection event, and -> the kernel's counts panel updated (from mouse-up);
  * the same hovers and selections through the peer: plotly's own FigureWidget with an ipywidgets panel filled by
    its on_hover / on_selection callbacks (the stack the explorer used before), counting the selections that never
    reached the kernel;
  * the kernel-side handlers alone (hover, selection of 1k / 10k / 50k rows, a redraw), in this process.

    python benchmarks/explorer.py --part projection [--n 20000] [--sklearn-n N] [--skip-umap]
    python benchmarks/explorer.py --part browser [--browser-n 100000]
"""
import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "nbs" / "results" / "explorer" / "benchmark.json"


def clustered(n, dim, n_classes=50, seed=0):
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, (n * (1 / np.arange(1, n_classes + 1)) / (1 / np.arange(1, n_classes + 1)).sum()).astype(int))
    sizes[0] += n - sizes.sum()
    y = np.repeat(np.arange(n_classes), sizes)
    z = rng.normal(size=(n_classes, dim))[y] * 2.0 + rng.normal(size=(n, dim))
    return z.astype(np.float32), y


def timed(fn):
    t0 = time.perf_counter(); out = fn(); return out, time.perf_counter() - t0


def machine():
    import torch
    return {"date": dt.date.today().isoformat(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "machine": platform.processor() or platform.machine(), "load_average_1min": round(os.getloadavg()[0], 2)}


def save(part, res):
    from contrastive_nb.core import atomic_write_json
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    old[part] = res
    atomic_write_json(OUT, old)
    print(json.dumps(res, indent=1))


# --- part 1: projections -----------------------------------------------------------------------------------------

def projection_part(args):
    from openTSNE import TSNE as OpenTSNE
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE as SkTSNE
    from contrastive_nb.evaluate import embedding_table
    from contrastive_nb.explore import Explorer, projection
    z, y = clustered(args.n, args.dim)
    table = embedding_table(z, labels=y)
    cache = Path(tempfile.mkdtemp(prefix="cnb-bench-"))
    res = {"n": args.n, "dim": args.dim, **machine()}
    _, res["tsne_uncached_s"] = timed(lambda: projection(z, "tsne", cache_dir=cache))
    _, res["tsne_cached_s"] = timed(lambda: projection(z, "tsne", cache_dir=cache))
    if not args.skip_umap:
        _, res["umap_uncached_s"] = timed(lambda: projection(z, "umap", cache_dir=cache))
        _, res["umap_cached_s"] = timed(lambda: projection(z, "umap", cache_dir=cache))
    ex, res["explorer_build_cached_s"] = timed(lambda: Explorer(table, method="tsne", cache_dir=cache))
    fig, res["figure_build_s"] = timed(ex.figure)
    js, res["figure_json_s"] = timed(fig.to_json)
    res["figure_json_mb"] = len(js) / 1e6
    # the peer: scikit-learn's Barnes-Hut t-SNE on the same normalised PCA-50 input, same perplexity and iterations
    m = args.sklearn_n or args.n
    zs = z[:m] / np.linalg.norm(z[:m], axis=1, keepdims=True)
    x50 = PCA(50, random_state=0).fit_transform(zs)
    _, res["opentsne_same_input_s"] = timed(lambda: OpenTSNE(n_components=2, perplexity=30, initialization="pca", n_jobs=-1,
                                                             random_state=0).fit(x50))
    _, res["sklearn_tsne_s"] = timed(lambda: SkTSNE(2, perplexity=30, init="pca", max_iter=750, random_state=0,
                                                    n_jobs=-1).fit_transform(x50))
    res["sklearn_n"] = m
    res["sklearn_over_opentsne"] = res["sklearn_tsne_s"] / res["opentsne_same_input_s"]
    save("projection", res)


# --- part 2: the page at 100k points -------------------------------------------------------------------------------

def kernel_handlers(n, cache):
    "The explorer's handlers alone, in this process: what the kernel spends per event at n points."
    from contrastive_nb.evaluate import embedding_table
    from contrastive_nb.explore import Explorer, ScatterBinding, counts_html, item_html, projection
    z, y = clustered(n, 32)
    table = embedding_table(z, labels=y, text=[f"item {i}" for i in range(n)])
    projection(z, "pca", cache_dir=cache)
    _, cached = timed(lambda: projection(z, "pca", cache_dir=cache))
    ex, build = timed(lambda: Explorer(table, text="text", method="pca", cache_dir=cache))
    binding, first = timed(lambda: ScatterBinding(ex))
    rng = np.random.default_rng(0)
    hover = [timed(lambda r=int(r): (ex.hover(r), item_html(ex, r)))[1] for r in rng.integers(0, n, 30)]
    sel = {}
    for k in [k for k in (1_000, 10_000, 50_000) if k < n]:
        rows = rng.choice(n, k, replace=False).astype("<i4").tobytes()
        sel[k] = statistics.median(timed(lambda: (binding.handle("select", {}, np.frombuffer(rows, "<i4").astype(np.int64)),
                                                   counts_html(ex)))[1] for _ in range(5))
    _, recolour = timed(lambda: ex.color_by("id"))
    return {"projection_cached_read_s": cached, "explorer_build_s": build, "first_figure_s": first,
            "figure_json_mb": len(binding.view.figure) / 1e6, "hover_labels_json_mb": len(binding.view.texts) / 1e6,
            "hover_handler_median_s": statistics.median(hover),
            **{f"selection_handler_{k}_rows_s": v for k, v in sel.items()}, "recolour_handler_s": recolour}


NOTEBOOK = """\
import numpy as np, ipywidgets as W, plotly.graph_objects as go
from contrastive_nb.evaluate import embedding_table
from contrastive_nb.explore import Explorer, projection
import sys; sys.path.insert(0, {bench!r}); from explorer import clustered
z, y = clustered({n}, 32)
table = embedding_table(z, labels=y, text=[f"item {{i}}" for i in range({n})])
ex = Explorer(table, text="text", method="pca", cache_dir={cache!r}, title="{n:,} points")
import time
def arrived(what, **info):          # when each selection reaches the kernel (wall clock, as the page's Date.now())
    if what == "selection":
        with open("arrivals.txt", "a") as f: f.write(f"{{time.time()}} {{len(ex.selected)}}\\n")
ex.subscribe(arrived)
ex.show()"""

PEER = """\
xy = ex.xy
fw = go.FigureWidget(data=[go.Scattergl(x=xy[:, 0], y=xy[:, 1], customdata=np.arange(len(xy)), mode="markers",
                                        marker=dict(size=6, color=y, colorscale="Viridis"))],
                     layout=dict(width=700, height=520, dragmode="select", hovermode="closest",
                                 margin=dict(l=10, r=10, t=10, b=10), xaxis=dict(visible=False), yaxis=dict(visible=False)))
item, counts = W.HTML("<i>hover</i>"), W.HTML("")
item.add_class("peer-hover"); counts.add_class("peer-counts")
def on_hover(trace, points, state):
    if points.point_inds: item.value = f"<div>item {points.point_inds[0]}.</div>"
def on_selection(trace, points, selector):
    counts.value = f"<div class='peer-total'>{len(points.point_inds)} selected</div>"
fw.data[0].on_hover(on_hover); fw.data[0].on_selection(on_selection)
box = W.HBox([fw, W.VBox([item, counts])]); box.add_class("peer")
box"""

TIMING_JS = """([scatterSel, panelSel]) => {
  const panel = document.querySelector(panelSel), gd = document.querySelector(scatterSel + ' .js-plotly-plot');
  window.__cnbT = {move: 0, up: 0, upEpoch: 0, panel: 0, selected: 0, count: -1};
  if (!window.__cnbListening) {
    document.addEventListener('mousemove', () => { window.__cnbT.move = performance.now(); }, true);
    document.addEventListener('mouseup', () => { window.__cnbT.up = performance.now(); window.__cnbT.upEpoch = Date.now(); }, true);
    window.__cnbListening = true;
  }
  if (!gd.__cnbTimed) {
    gd.on('plotly_selected', (ev) => { window.__cnbT.selected = performance.now();
      window.__cnbT.count = ev && ev.points ? ev.points.filter((p) => p.data.meta === undefined || p.data.meta === 'points').length : 0; });
    gd.__cnbTimed = true;
  }
  if (window.__cnbObserver) window.__cnbObserver.disconnect();
  window.__cnbObserver = new MutationObserver(() => { window.__cnbT.panel = performance.now(); });
  window.__cnbObserver.observe(panel, {childList: true, subtree: true, characterData: true});
}"""


def browser_part(args):
    sys.path.insert(0, str(ROOT / "tests"))
    import test_explorer_browser as T
    from playwright.sync_api import sync_playwright
    from contrastive_nb.explore import projection
    n = args.browser_n
    cache = Path(tempfile.mkdtemp(prefix="cnb-bench-"))
    res = {"n": n, **machine(), "kernel": kernel_handlers(n, cache)}
    projection(clustered(n, 32)[0], "pca", cache_dir=cache)            # the notebook finds it cached
    folder = Path(tempfile.mkdtemp(prefix="cnb-bench-lab-"))
    T.write_notebook(folder / "bench.ipynb", [NOTEBOOK.format(bench=str(ROOT / "benchmarks"), n=n, cache=str(cache)), PEER])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with T.lab_server(folder, env) as (url, token), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=T.CHROMIUM, headless=True, args=T.CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        T.open_notebook(page, url, token, "bench.ipynb", run=False)
        t0 = time.time()
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function("document.querySelector('.cnb-scatter') || document.querySelector('.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]')",
                               timeout=600_000)
        if not page.query_selector(".cnb-scatter"):
            raise RuntimeError("the benchmark notebook failed: " + page.locator(".jp-OutputArea-output").first.inner_text()[-2000:])
        T.calm_browser()
        sc = page.locator(".cnb-scatter").first
        page.wait_for_function("() => Number(document.querySelector('.cnb-scatter').dataset.draws || 0) >= 1",
                               timeout=600_000, polling=100)
        res["page_run_to_drawn_s"] = time.time() - t0
        info = T.scatter_info(page, sc, n_points=n, timeout=600)
        res["explorer"] = drive(page, T, ".cnb-explorer .cnb-scatter", ".cnb-explorer .cnb-hover", ".cnb-explorer .cnb-counts",
                                "item {row}\n", seed=0, arrivals=folder / "arrivals.txt")
        page.evaluate(DRAW_TIMING_JS)
        page.locator(".cnb-explorer select").first.select_option("id")
        page.wait_for_function(f"() => Number(document.querySelector('.cnb-scatter').dataset.draws) > {info['draws']}",
                               timeout=600_000, polling=100)
        t = page.evaluate("window.__cnbDraw")
        res["explorer"]["recolour_to_drawn_s"] = (t["drawn"] - t["changed"]) / 1000
        page.wait_for_selector(".peer .js-plotly-plot", timeout=600_000)
        res["peer_figurewidget"] = drive(page, T, ".peer", ".peer-hover", ".peer-counts", "item {row}.", seed=0)
        # again with Chromium below the kernel's priority: software WebGL (no GPU here) otherwise takes both cores
        # for each repaint, and the kernel and the Jupyter server wait for them; with a GPU that work is not on the CPU
        T.calm_browser(19)
        res["explorer_browser_niced"] = drive(page, T, ".cnb-explorer .cnb-scatter", ".cnb-explorer .cnb-hover",
                                              ".cnb-explorer .cnb-counts", "item {row}\n", seed=1, arrivals=folder / "arrivals.txt")
        res["peer_figurewidget_browser_niced"] = drive(page, T, ".peer", ".peer-hover", ".peer-counts", "item {row}.", seed=1)
        page.screenshot(path=str(ROOT / "tests" / "artifacts" / "explorer_benchmark_100k.png"))
        browser.close()
    e, q = res["explorer"], res["peer_figurewidget"]
    res["hover_panel_peer_over_explorer"] = q["hover_panel_median_s"] / e["hover_panel_median_s"] if q["hover_panel_median_s"] else None
    save("browser", res)


DRAW_TIMING_JS = """() => {   // from the colour dropdown's change to the scatter view's next draw, in the page
  const sel = document.querySelector('.cnb-explorer select'), sc = document.querySelector('.cnb-scatter');
  window.__cnbDraw = {changed: 0, drawn: 0};
  sel.addEventListener('change', () => { window.__cnbDraw.changed = performance.now(); }, {once: true});
  new MutationObserver((_, obs) => { window.__cnbDraw.drawn = performance.now(); obs.disconnect(); })
    .observe(sc, {attributes: true, attributeFilter: ['data-draws']});
}"""

PEER_JS = """(el) => {   // point positions (px) and rows of the first point trace: the explorer's or the peer's
  const gd = el.querySelector('.js-plotly-plot'); if (!gd || !gd._fullData) return null;
  el.scrollIntoView({block: 'center'});
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  const pts = [];
  for (const t of gd._fullData) {
    if (t.meta !== undefined && t.meta !== 'points') continue;
    for (let j = 0; j < t._length; j++)
      pts.push([r.left + xa._offset + xa.c2p(t.x[j]), r.top + ya._offset + ya.c2p(t.y[j]), Number(t.customdata[j])]);
  }
  return {pts: pts, box: [r.left + xa._offset, r.top + ya._offset, xa._length, ya._length]};
}"""


def kernel_arrival(arrivals: Path | None, after_line: int, timeout=30):
    "The wall-clock time at which the kernel logged its next selection (None without a log)."
    if arrivals is None:
        return None
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = arrivals.read_text().splitlines() if arrivals.exists() else []
        if len(lines) > after_line:
            return float(lines[after_line].split()[0])
        time.sleep(0.1)
    return None


def drive(page, T, scatter_sel, hover_sel, counts_sel, hover_text, seed, n_hovers=15, arrivals=None,
          box_fractions=(0.08, 0.25, 0.5, 0.08, 0.25, 0.5)):
    "Hovers and box selections on one plot; latencies from the mouse event to the panel's change, timed in the page."
    scatter = page.locator(scatter_sel).first
    info = None
    for _ in range(1200):
        try:
            info = scatter.evaluate(PEER_JS)
            if info and len(info["pts"]): break
        except Exception:
            pass
        time.sleep(0.5)
    pts, rng = np.asarray(info["pts"], float), np.random.default_rng(seed)
    from scipy.spatial import cKDTree
    d, _ = cKDTree(pts[:, :2]).query(pts[:, :2], k=2)
    isolated = np.flatnonzero(d[:, 1] > 2.0)                          # points the closest-point hover can single out
    hovers = []
    for k in rng.choice(isolated, n_hovers, replace=False):
        x, y, row = pts[k]
        page.evaluate(TIMING_JS, [scatter_sel, hover_sel])
        page.mouse.move(x, y, steps=1)
        try:
            page.wait_for_function("([s, t]) => document.querySelector(s).innerText.includes(t)",
                                   arg=[hover_sel, hover_text.format(row=int(row))], timeout=10_000)
            t = page.evaluate("window.__cnbT")
            hovers.append((t["panel"] - t["move"]) / 1000)
        except Exception:
            hovers.append(None)
        page.mouse.move(x + 40, y + 40, steps=1)
    T.use_tool(scatter, "Box Select")
    left, top, w, h = info["box"]
    sels = []
    for f in box_fractions:                 # boxes around the centre covering a share f of each axis
        c = np.r_[left + w / 2, top + h / 2] + rng.uniform(-20, 20, 2)
        a, b = c - np.r_[w, h] * f / 2, c + np.r_[w, h] * f / 2
        page.evaluate(TIMING_JS, [scatter_sel, counts_sel])
        n_before = len(arrivals.read_text().splitlines()) if arrivals is not None and arrivals.exists() else 0
        T.drag(page, [a, (a + b) / 2, b], steps=4)
        try:
            page.wait_for_function("() => window.__cnbT.count >= 0", timeout=30_000)
        except Exception:               # plotly itself did not select
            page.screenshot(path=str(ROOT / "tests" / "artifacts" / "explorer_benchmark_no_selection.png"))
            sels.append({"rows": None, "mouseup_to_plotly_event_s": None, "mouseup_to_panel_s": None})
            continue
        t = page.evaluate("window.__cnbT")
        try:
            page.wait_for_function("([s, t]) => document.querySelector(s).innerText.trim().startsWith(t)",
                                   arg=[counts_sel, f"{t['count']} selected"], timeout=15_000)
            t = page.evaluate("window.__cnbT")
            k = kernel_arrival(arrivals, n_before)
            sels.append({"rows": t["count"], "mouseup_to_plotly_event_s": (t["selected"] - t["up"]) / 1000,
                         "mouseup_to_kernel_s": None if k is None else k - t["upEpoch"] / 1000,
                         "mouseup_to_panel_s": (t["panel"] - t["up"]) / 1000})
        except Exception:
            sels.append({"rows": t["count"], "mouseup_to_plotly_event_s": (t["selected"] - t["up"]) / 1000,
                         "mouseup_to_panel_s": None})
        page.mouse.click(left + 5, top + 5)     # a click on empty space clears the selection
        time.sleep(0.5)
        if arrivals is not None:                 # wait for the clearing to reach the kernel too
            kernel_arrival(arrivals, n_before + 1)
    ok = [h for h in hovers if h is not None]
    arrived = [s["mouseup_to_panel_s"] for s in sels if s["mouseup_to_panel_s"] is not None]
    kernel = [s["mouseup_to_kernel_s"] for s in sels if s.get("mouseup_to_kernel_s") is not None]
    return {"hover_panel_median_s": statistics.median(ok) if ok else None, "hover_panel_max_s": max(ok) if ok else None,
            "selection_to_kernel_median_s": statistics.median(kernel) if kernel else None,
            "selection_to_kernel_max_s": max(kernel) if kernel else None,
            "hovers": len(hovers), "hovers_not_shown": len(hovers) - len(ok), "selections": sels,
            "selections_lost": len(sels) - len(arrived),
            "selection_to_panel_median_s": statistics.median(arrived) if arrived else None,
            "selection_to_panel_max_s": max(arrived) if arrived else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["projection", "browser", "all"], default="all")
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--sklearn-n", type=int, default=None, help="points for the scikit-learn comparison (default: --n)")
    ap.add_argument("--skip-umap", action="store_true")
    ap.add_argument("--browser-n", type=int, default=100_000)
    args = ap.parse_args()
    if args.part in ("projection", "all"):
        projection_part(args)
    if args.part in ("browser", "all"):
        browser_part(args)


if __name__ == "__main__":
    main()
