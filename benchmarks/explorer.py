"""Explorer speed, in two parts; each writes its figures into nbs/results/explorer/benchmark.json (the README's table
is generated from that file).

projection: from an embedding table (default 20,000 x 128, 50 clustered classes) to a laid-out figure, in one process:
  * t-SNE (openTSNE, as `explore.projection` runs it) and UMAP, uncached and cached;
  * the peer: scikit-learn's Barnes-Hut t-SNE on the same PCA-50 input, same perplexity and iterations;
  * building the explorer and its figure from the cached projection.

browser: the explorer (jupyter-scatter under `ExplorerState`; all points drawn, projection cached) in JupyterLab +
headless Chromium (software WebGL), driven with real mouse events through the harness of
tests/test_explorer_browser.py, at each of --browser-n (default 100,000 and 1,000,000; results under "browser" and
"browser_1000000"):
  * page: the explorer's cell run (kernel already started) -> points drawn, with where the time went; a colour
    change -> the new points drawn (the peer's cell runs only after the explorer has been measured);
  * hover -> the kernel's item panel updated (timed in the page, from the mouse event to the panel's change);
  * box and lasso drags whose corners sit 1-5 px from a point -> the scatter's own selection, and -> the kernel's
    counts panel showing that count (from mouse-up); a selection whose count never reaches the panel is lost;
  * the same hovers and box selections through the peer: plotly's own FigureWidget with an ipywidgets panel filled
    by its on_hover / on_selection callbacks (the stack the explorer used before), at --peer-n points or fewer;
  * the kernel-side handlers alone (hover, selection of 1k / 10k / 50k rows, a recolour), in this process.

    python benchmarks/explorer.py --part projection [--n 20000] [--sklearn-n N] [--skip-umap]
    python benchmarks/explorer.py --part browser [--browser-n 100000 1000000] [--drags 20]
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
ENV = None  # where the measurement runs (main sets it before anything is written)


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
    from contrastive_nb.core import read_json
    from contrastive_nb.runs import write_provenance
    prov = OUT.parent / "provenance.json"
    parts = read_json(prov)["files"].get(OUT.name, {}).get("parts", []) if prov.exists() else []
    write_provenance(OUT, {"script": "benchmarks/explorer.py", "parts": sorted({*parts, part}),
                           "arguments": sys.argv[1:]}, ENV)
    print(json.dumps(res, indent=1))


# --- part 1: projections -----------------------------------------------------------------------------------------

def projection_part(args):
    from openTSNE import TSNE as OpenTSNE
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE as SkTSNE
    from contrastive_nb.evaluate import embedding_table
    from contrastive_nb.explore import projection
    from contrastive_nb.explore_view import Explorer
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
    from contrastive_nb.explore import projection
    from contrastive_nb.explore_view import Explorer, StateScatter, counts_html, item_html
    z, y = clustered(n, 32)
    table = embedding_table(z, labels=y, text=[f"item {i}" for i in range(n)])
    projection(z, "pca", cache_dir=cache)
    _, cached = timed(lambda: projection(z, "pca", cache_dir=cache))
    ex, build = timed(lambda: Explorer(table, text="text", method="pca", cache_dir=cache))
    view, first = timed(lambda: StateScatter(ex))
    rng = np.random.default_rng(0)
    hover = [timed(lambda r=int(r): (setattr(view.widget, "hovering", r), item_html(ex, r)))[1] for r in rng.integers(0, n, 30)]
    sel = {}
    for k in [k for k in (1_000, 10_000, 50_000) if k < n]:
        picks = [rng.choice(n, k, replace=False) for _ in range(5)]
        sel[k] = statistics.median(timed(lambda p=p: (setattr(view.widget, "selection", p), counts_html(ex)))[1] for p in picks)
    _, recolour = timed(lambda: ex.color_by("id"))
    return {"projection_cached_read_s": cached, "explorer_build_s": build, "first_view_s": first,
            "points_mb": view.widget.points.astype(np.float32).nbytes / 1e6,
            "hover_handler_median_s": statistics.median(hover),
            **{f"selection_handler_{k}_rows_s": v for k, v in sel.items()}, "recolour_handler_s": recolour}


NOTEBOOK = """\
import time; _t = [time.time()]
import numpy as np, ipywidgets as W, plotly.graph_objects as go
from contrastive_nb.evaluate import embedding_table
from contrastive_nb.explore_view import Explorer
import sys; sys.path.insert(0, {bench!r}); from explorer import clustered
z, y = clustered({n}, 32)
table = embedding_table(z, labels=y, text=[f"item {{i}}" for i in range({n})])
ex = Explorer(table, text="text", method="pca", cache_dir={cache!r}, title="{n:,} points")
import time
def arrived(what, **info):          # when each selection reaches the kernel (wall clock, as the page's Date.now())
    if what == "selection":
        with open("arrivals.txt", "a") as f: f.write(f"{{time.time()}} {{len(ex.selected)}}\\n")
ex.subscribe(arrived)
_t.append(time.time()); ex.show(); _t.append(time.time())
with open("cell_times.txt", "w") as f: f.write(" ".join(map(str, _t)))"""

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


EX_JS = """(el, stride) => {   // the explorer's scatter through its own API: drawn?, point positions (every stride-th)
  const canvas = el.querySelector('canvas');
  const api = canvas && canvas.parentElement && canvas.parentElement.parentElement && canvas.parentElement.parentElement.api;
  if (!api || !api.get('isPointsDrawn')) return null;
  const r = canvas.getBoundingClientRect(), n = api.get('points').length;
  if (!stride) return {n: n};
  const pts = [];
  for (let i = 0; i < n; i += stride) { const p = api.getScreenPosition(i); pts.push(r.left + p[0], r.top + p[1], i); }
  return {n: n, pts: pts, box: [r.left, r.top, r.width, r.height]};
}"""

EX_TIMING_JS = """(panelSel) => {
  const panel = document.querySelector(panelSel);
  window.__cnbT = {move: 0, up: 0, upEpoch: 0, panel: 0};
  if (!window.__cnbListening) {
    document.addEventListener('mousemove', () => { window.__cnbT.move = performance.now(); }, true);
    document.addEventListener('mouseup', () => { window.__cnbT.up = performance.now(); window.__cnbT.upEpoch = Date.now(); }, true);
    window.__cnbListening = true;
  }
  if (window.__cnbObserver) window.__cnbObserver.disconnect();
  window.__cnbObserver = new MutationObserver(() => { window.__cnbT.panel = performance.now(); });
  window.__cnbObserver.observe(panel, {childList: true, subtree: true, characterData: true});
}"""

API = "(() => { const c = document.querySelector('.cnb-explorer .cnb-scatter canvas'); return c.parentElement.parentElement.api; })()"


def wait_drawn(page, n, timeout_s=900):
    page.wait_for_function(f"() => {{ const el = document.querySelector('.cnb-explorer .cnb-scatter'); if (!el) return false;"
                           f" const c = el.querySelector('canvas'); const api = c && c.parentElement.parentElement.api;"
                           f" return !!api && api.get('isPointsDrawn') && api.get('points').length === {n}; }}",
                           timeout=timeout_s * 1000, polling=100)


def browser_part(args):
    for n in args.browser_n:
        res = browser_run(args, n)
        save("browser" if n == 100_000 else f"browser_{n}", res)


def browser_run(args, n):
    sys.path.insert(0, str(ROOT / "tests"))
    import test_explorer_browser as T
    from playwright.sync_api import sync_playwright
    from contrastive_nb.explore import projection
    cache = Path(tempfile.mkdtemp(prefix="cnb-bench-"))
    res = {"n": n, **machine(), "view": "jupyter-scatter " + _version("jupyter-scatter"), "kernel": kernel_handlers(n, cache)}
    projection(clustered(n, 32)[0], "pca", cache_dir=cache)            # the notebook finds it cached
    folder = Path(tempfile.mkdtemp(prefix="cnb-bench-lab-"))
    with_peer = n <= args.peer_n
    T.write_notebook(folder / "bench.ipynb", [NOTEBOOK.format(bench=str(ROOT / "benchmarks"), n=n, cache=str(cache))]
                     + ([PEER] if with_peer else []))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with T.lab_server(folder, env) as (url, token), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=T.CHROMIUM, headless=True, args=T.CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        T.open_notebook(page, url, token, "bench.ipynb", run=False)
        t0 = time.time()     # the explorer's cell alone: the peer's cell runs after it has been measured
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")
        page.wait_for_function("document.querySelector('.cnb-scatter canvas') || document.querySelector('.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]')",
                               timeout=900_000)
        if not page.query_selector(".cnb-scatter canvas"):
            raise RuntimeError("the benchmark notebook failed: " + page.locator(".jp-OutputArea-output").first.inner_text()[-2000:])
        T.calm_browser()
        wait_drawn(page, n)
        drawn_at = time.time()
        res["page_run_to_drawn_s"] = drawn_at - t0
        cell = [float(x) for x in (folder / "cell_times.txt").read_text().split()] if (folder / "cell_times.txt").exists() else None
        if cell:   # where the time went: up to the cell's start (kernel, page), imports and table, widget, page's drawing
            res["drawn_breakdown_s"] = {"run_to_cell_start": cell[0] - t0, "imports_table_explorer": cell[1] - cell[0],
                                        "widget_built_and_sent": cell[2] - cell[1], "page_transfer_and_webgl": drawn_at - cell[2]}
        page.wait_for_function(T.KERNEL_IDLE, timeout=900_000)
        res["explorer"] = drive_explorer(page, T, n, seed=0, n_drags=args.drags, arrivals=folder / "arrivals.txt")
        page.evaluate(DRAW_TIMING_JS)
        page.locator(".cnb-explorer select").first.select_option("id")
        page.wait_for_function("() => window.__cnbDraw.drawn > 0", timeout=600_000, polling=100)
        t = page.evaluate("window.__cnbDraw")
        res["explorer"]["recolour_to_drawn_s"] = (t["drawn"] - t["changed"]) / 1000
        if with_peer:
            page.evaluate("(() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 1;"
                          " return window.jupyterapp.commands.execute('notebook:run-cell'); })()")
            page.wait_for_selector(".peer .js-plotly-plot", timeout=600_000)
            page.wait_for_function(T.KERNEL_IDLE, timeout=900_000)
            res["peer_figurewidget"] = drive(page, T, ".peer", ".peer-hover", ".peer-counts", "item {row}.", seed=0)
        page.screenshot(path=str(ROOT / "tests" / "artifacts" / f"explorer_benchmark_{n}.png"))
        browser.close()
    e, q = res["explorer"], res.get("peer_figurewidget")
    if q:
        for k in ("hover_panel_median_s", "selection_to_panel_median_s"):
            res[k.replace("_median_s", "_peer_over_explorer")] = q[k] / e[k] if q.get(k) and e.get(k) else None
    return res


def _near(pts, target, rng):
    "A position 1-5 px from the sampled point nearest `target`, and that point."
    k = int(np.argmin(((pts[:, :2] - target) ** 2).sum(1)))
    ang, rad = rng.uniform(0, 2 * np.pi), rng.uniform(1, 5)
    return pts[k, :2] + rad * np.r_[np.cos(ang), np.sin(ang)]


def drive_explorer(page, T, n, seed, n_hovers=10, n_drags=20, arrivals=None):
    """Hovers, then box and lasso drags (alternating; corners 1-5 px from a point) on the explorer: latencies from the
    mouse event to the panel's change, timed in the page; a drag whose selection never shows in the counts panel is lost."""
    sc = page.locator(".cnb-explorer .cnb-scatter").first
    sc.scroll_into_view_if_needed()
    info = sc.evaluate(EX_JS, max(1, n // 20_000))
    pts, rng = np.asarray(info["pts"], float).reshape(-1, 3), np.random.default_rng(seed)
    left, top, w, h = info["box"]
    inner = pts[(pts[:, 0] > left + 40) & (pts[:, 0] < left + w - 40) & (pts[:, 1] > top + 40) & (pts[:, 1] < top + h - 40)]
    hovers = []
    for k in rng.choice(len(inner), n_hovers, replace=False):
        x, y, _ = inner[k]
        page.evaluate(EX_TIMING_JS, ".cnb-explorer .cnb-hover")
        page.mouse.move(x, y, steps=1)
        try:
            page.wait_for_function(f"() => {{ const h = {API}.get('hoveredPoint'); return h !== undefined && h !== null && h >= 0 &&"
                                   f" document.querySelector('.cnb-explorer .cnb-hover').innerText.includes('item ' + h + '\\n'); }}",
                                   timeout=10_000, polling=20)
            t = page.evaluate("window.__cnbT")
            hovers.append((t["panel"] - t["move"]) / 1000)
        except Exception:
            hovers.append(None)
        page.mouse.move(left + 3, top + 3, steps=1)
        time.sleep(0.3)
    sels, counts = [], ".cnb-explorer .cnb-counts"
    for i in range(n_drags):
        kind = "box" if i % 2 == 0 else "lasso"
        T.use_tool(page.locator(".cnb-explorer").first, kind)
        f = rng.uniform(0.04, 0.12 if n > 200_000 else 0.3)
        p = inner[rng.integers(len(inner)), :2]
        start = _near(inner, p, rng)
        end = _near(inner, p + np.r_[w, h] * f * rng.choice([-1, 1], 2), rng)
        path = ([start, (start + end) / 2, end] if kind == "box" else
                [start, (start + end) / 2 + np.r_[-(end - start)[1], (end - start)[0]] * 0.6, end])
        path = [np.clip(q, [left + 6, top + 6], [left + w - 6, top + h - 6]) for q in path]
        page.evaluate(EX_TIMING_JS, counts)
        n_before = len(arrivals.read_text().splitlines()) if arrivals is not None and arrivals.exists() else 0
        T.drag(page, path, steps=4)
        time.sleep(0.05)
        rows = page.evaluate(f"{API}.get('selectedPoints').length")
        try:
            page.wait_for_function(f"() => {{ const k = {API}.get('selectedPoints').length;"
                                   f" return document.querySelector('{counts} .cnb-count-total').innerText.trim() === k + ' selected'; }}",
                                   timeout=15_000, polling=20)
            t = page.evaluate("window.__cnbT")
            k = kernel_arrival(arrivals, n_before)
            sels.append({"kind": kind, "rows": page.evaluate(f"{API}.get('selectedPoints').length"),
                         "mouseup_to_kernel_s": None if k is None else k - t["upEpoch"] / 1000,
                         "mouseup_to_panel_s": (t["panel"] - t["up"]) / 1000})
        except Exception:
            sels.append({"kind": kind, "rows": rows, "mouseup_to_panel_s": None})
    ok = [x for x in hovers if x is not None]
    arrived = [x["mouseup_to_panel_s"] for x in sels if x["mouseup_to_panel_s"] is not None]
    kernel = [x["mouseup_to_kernel_s"] for x in sels if x.get("mouseup_to_kernel_s") is not None]
    return {"hover_panel_median_s": statistics.median(ok) if ok else None, "hover_panel_max_s": max(ok) if ok else None,
            "hovers": len(hovers), "hovers_not_shown": len(hovers) - len(ok),
            "selection_to_kernel_median_s": statistics.median(kernel) if kernel else None,
            "selections": sels, "selections_lost": len(sels) - len(arrived),
            "selection_rows_max": max((x["rows"] or 0) for x in sels) if sels else None,
            "selection_to_panel_median_s": statistics.median(arrived) if arrived else None,
            "selection_to_panel_max_s": max(arrived) if arrived else None}


def _version(pkg):
    from importlib import metadata
    return metadata.version(pkg)


DRAW_TIMING_JS = """() => {   // from the colour dropdown's change to the scatter drawing its new points in nine colour bins
  const sel = document.querySelector('.cnb-explorer select');
  const api = document.querySelector('.cnb-explorer .cnb-scatter canvas').parentElement.parentElement.api;
  window.__cnbDraw = {changed: 0, drawn: 0};
  sel.addEventListener('change', () => {
    window.__cnbDraw.changed = performance.now();
    const before = api.get('points');
    const poll = () => { if ((api.get('pointColor') || []).length === 9 && api.get('points') !== before && api.get('isPointsDrawn'))
                           window.__cnbDraw.drawn = performance.now();
                         else requestAnimationFrame(poll); };
    requestAnimationFrame(poll);
  }, {once: true});
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
    scatter.locator(".modebar-btn[data-title='Box Select']").click()
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
    ap.add_argument("--browser-n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--peer-n", type=int, default=100_000, help="the plotly FigureWidget peer runs up to this many points")
    ap.add_argument("--drags", type=int, default=20, help="box and lasso drags on the explorer at each size")
    args = ap.parse_args()
    global ENV
    from contrastive_nb.runs import run_environment
    ENV = run_environment(ROOT)  # taken before the measurement writes anything
    if args.part in ("projection", "all"):
        projection_part(args)
    if args.part in ("browser", "all"):
        browser_part(args)


if __name__ == "__main__":
    main()
