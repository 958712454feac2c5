"""Explorer speed, in two parts; each writes its figures into nbs/results/explorer/benchmark.json (the README's table
is generated from that file).

projection: from an embedding table (default 20,000 x 128, 50 clustered classes) to a laid-out figure, in one process:
  * t-SNE (openTSNE, as `explore.projection` runs it) and UMAP, uncached and cached;
  * the peer: scikit-learn's Barnes-Hut t-SNE on the same PCA-50 input, same perplexity and iterations;
  * building the explorer and its figure from the cached projection.

browser: the explorer against its peer, plain jupyter-scatter given the same three panels (an item panel on hover,
class counts on a selection, the cosine 10 nearest neighbours on a click; written as a careful user would: vectors
normalised once, numpy's argpartition, pandas' value_counts), in one JupyterLab page, the same run and the same
layout, at each of --browser-n (default 100,000 and 1,000,000; results under "browser" and "browser_1000000").
JupyterLab + headless Chromium (software WebGL), driven with real mouse events through the harness of
tests/test_explorer_browser.py. Per view, its cell run alone (data and imports in a shared cell before; the peer's
cell runs after the explorer has been measured):
  * the cell run -> its points drawn, with where the time went;
  * hovers -> the item panel updated (timed in the page, from the mouse event to the panel's change);
  * lasso drags whose ends sit 1-5 px from a point -> the counts panel showing the scatter's own count (from
    mouse-up); a selection whose count never reaches the panel is lost;
  * clicks on a point -> the neighbours panel listing that row (from mouse-up);
  * the ratios explorer / peer of each median ("explorer_over_peer": below 1, the explorer is faster); the machine's
    load average is recorded with each view, since the machine may be shared (the ratio is within one run);
  * the explorer's kernel-side handlers alone (hover, selection of 1k / 10k / 50k rows, a click, a recolour), in
    this process.

    python benchmarks/explorer.py --part projection [--n 20000] [--sklearn-n N] [--skip-umap]
    python benchmarks/explorer.py --part browser [--browser-n 100000 1000000] [--drags 10] [--clicks 10]
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
    """Write `res` under `part` into OUT and its provenance: the run's commit and versions (taken before measuring),
    the browser stack, the machine's load during the run, and per part when and at which commit it was measured."""
    from contrastive_nb.core import atomic_write_json, read_json
    from contrastive_nb.runs import write_provenance
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    old[part] = res
    atomic_write_json(OUT, old)
    prov = OUT.parent / "provenance.json"
    entry = read_json(prov)["files"].get(OUT.name, {}) if prov.exists() else {}
    measured = {p: entry.get("measured_parts", {}).get(p, {"date": old[p].get("date"), "commit": None})
                for p in old}           # a part measured before commits were recorded per part: commit null
    measured[part] = {"date": res.get("date"), "commit": (ENV or {}).get("commit")}
    loads = [v[k] for v in res.values() if isinstance(v, dict)
             for k in ("load_average_1min", "load_average_1min_after") if k in v] or [res.get("load_average_1min")]
    kept = {k: v for k, v in entry.items() if k.startswith("load_average_1min_during_")}   # the other parts' loads
    write_provenance(OUT, {"script": "benchmarks/explorer.py", "parts": sorted(old), "arguments": sys.argv[1:],
                           "measured_parts": measured, **kept,
                           "load_average_1min_during_" + part: [min(loads), max(loads)],
                           **({"browser_stack": browser_stack()} if part.startswith("browser") else {})}, ENV)
    print(json.dumps(res, indent=1))


def browser_stack():
    "The versions the browser part ran on: Chromium, JupyterLab, jupyter-scatter, ipywidgets, anywidget, Playwright."
    import subprocess
    sys.path.insert(0, str(ROOT / "tests"))
    import test_explorer_browser as T
    out = {p: _version(p) for p in ("jupyterlab", "jupyter-scatter", "ipywidgets", "anywidget", "playwright")}
    try:
        out["chromium"] = subprocess.run([T.CHROMIUM, "--version"], capture_output=True, text=True,
                                         timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        out["chromium"] = f"unknown ({type(e).__name__})"
    return out


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
    from contrastive_nb.explore_view import Explorer, StateScatter, counts_html, item_html, neighbours_html
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
    clicks = [timed(lambda r=int(r): (ex.focus(r), neighbours_html(ex, r)))[1] for r in rng.integers(0, n, 10)]
    _, recolour = timed(lambda: ex.color_by("id"))
    return {"click_handler_median_s": statistics.median(clicks),"projection_cached_read_s": cached, "explorer_build_s": build, "first_view_s": first,
            "points_mb": view.widget.points.astype(np.float32).nbytes / 1e6,
            "hover_handler_median_s": statistics.median(hover),
            **{f"selection_handler_{k}_rows_s": v for k, v in sel.items()}, "recolour_handler_s": recolour}


SETUP = """\
import time, html
import numpy as np, pandas as pd, ipywidgets as W, jscatter
from IPython.display import display
from contrastive_nb.evaluate import embedding_table
from contrastive_nb.explore import projection
from contrastive_nb.explore_view import Explorer
import sys; sys.path.insert(0, {bench!r}); from explorer import clustered
z, y = clustered({n}, 32)
table = embedding_table(z, labels=y, text=[f"item {{i}}" for i in range({n})])
xy = projection(z, "pca", cache_dir={cache!r})          # cached: the same layout for both views
# jupyter-scatter's front-end code loaded once, before either view is timed (else the first view pays for it)
_warm = jscatter.Scatter(x=np.arange(3.0), y=np.arange(3.0), width=60, height=60, axes=False, legend=False)
_warm.widget.add_class("warm"); display(_warm.widget)"""

EXPLORER = """\
_t = [time.time()]
ex = Explorer(table, text="text", xy=xy, title="{n:,} points")
_t.append(time.time()); ex.show(); _t.append(time.time())
with open("cell_times.txt", "w") as f: f.write(" ".join(map(str, _t)))"""

# the peer: plain jupyter-scatter with the same three panels, written as a careful user would (vectors normalised
# once, numpy's argpartition for the k nearest, pandas for the counts)
PEER = """\
_t = [time.time()]
zn = z / np.linalg.norm(z, axis=1, keepdims=True)
texts, labels = table["text"].to_numpy(), table["label"].to_numpy()
sc = jscatter.Scatter(x=xy[:, 0], y=xy[:, 1], width=700, height=520, axes=False, legend=False, size=4,
                      mouse_mode="lasso", lasso_type="freeform", opacity=0.85, opacity_unselected=0.25,
                      background_color="#ffffff")
sc.color(by=pd.Categorical(labels.astype(str)))
item, counts, nbrs = W.HTML("<i>hover</i>"), W.HTML(""), W.HTML("")
for w, c in ((item, "peer-hover"), (counts, "peer-counts"), (nbrs, "peer-neighbours")): w.add_class(c)
def on_hover(ch):
    i = ch["new"]
    if i is not None and i >= 0:
        item.value = (f"<div>{{html.escape(texts[i])}}</div><table><tr><td>id</td><td>{{i}}</td></tr>"
                      f"<tr><td>label</td><td>{{labels[i]}}</td></tr></table>")
def on_selection(ch):
    sel = np.asarray(ch["new"] if ch["new"] is not None else [], np.int64)
    vc = pd.Series(labels[sel]).value_counts().rename("selected").to_frame()
    vc["total"] = pd.Series(labels).value_counts().reindex(vc.index).to_numpy()
    vc["share"] = (vc["selected"] / vc["total"]).round(3)
    counts.value = f"<div class='cnb-count-total'>{{len(sel)}} selected</div>" + vc.to_html()
    if len(sel) == 1:                                        # a click: the 10 nearest by cosine
        i = int(sel[0]); s = zn @ zn[i]; s[i] = -np.inf
        top = np.argpartition(-s, 10)[:10]; top = top[np.argsort(-s[top])]
        nbrs.value = f"<div>row {{i}}:</div>" + pd.DataFrame(
            {{"row": top, "cosine": s[top].round(3), "label": labels[top], "text": texts[top]}}).to_html(index=False)
sc.widget.observe(on_hover, names="hovering"); sc.widget.observe(on_selection, names="selection")
box = W.HBox([sc.widget, W.VBox([item, counts, nbrs])]); box.add_class("peer")
_t.append(time.time()); display(box); _t.append(time.time())
with open("peer_cell_times.txt", "w") as f: f.write(" ".join(map(str, _t)))"""

VIEWS = {   # scatter, hover, counts and neighbours panels of each view
    "explorer": (".cnb-explorer .cnb-scatter", ".cnb-explorer .cnb-hover", ".cnb-explorer .cnb-counts",
                 ".cnb-explorer .cnb-neighbours"),
    "peer": (".peer", ".peer .peer-hover", ".peer .peer-counts", ".peer .peer-neighbours"),
}


def api(scatter_sel):
    return (f"(() => {{ const c = document.querySelector('{scatter_sel} canvas');"
            " return c.parentElement.parentElement.api; })()")


EX_JS = """(el, stride) => {   // a view's scatter through its own API: drawn?, point positions (every stride-th)
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


def wait_drawn(page, scatter_sel, n, timeout_s=900):
    page.wait_for_function(f"() => {{ const el = document.querySelector('{scatter_sel}'); if (!el) return false;"
                           f" const c = el.querySelector('canvas'); const api = c && c.parentElement.parentElement.api;"
                           f" return !!api && api.get('isPointsDrawn') && api.get('points').length === {n}; }}",
                           timeout=timeout_s * 1000, polling=100)


def browser_part(args):
    for n in args.browser_n:
        res = browser_run(args, n)
        save("browser" if n == 100_000 else f"browser_{n}", res)


def _run_cell(page, index):
    page.evaluate(f"(() => {{ const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = {index};"
                  " return window.jupyterapp.commands.execute('notebook:run-cell'); })()")


def browser_run(args, n):
    sys.path.insert(0, str(ROOT / "tests"))
    import test_explorer_browser as T
    from playwright.sync_api import sync_playwright
    from contrastive_nb.explore import projection
    cache = Path(tempfile.mkdtemp(prefix="cnb-bench-"))
    res = {"n": n, **machine(), "view": "jupyter-scatter " + _version("jupyter-scatter"),
           "peer": "plain jupyter-scatter " + _version("jupyter-scatter") + " with the same three panels (item, class"
                   " counts, cosine 10-NN on click; vectors normalised once, numpy argpartition)",
           "kernel": kernel_handlers(n, cache)}
    projection(clustered(n, 32)[0], "pca", cache_dir=cache)            # the notebook finds it cached
    folder = Path(tempfile.mkdtemp(prefix="cnb-bench-lab-"))
    T.write_notebook(folder / "bench.ipynb", [SETUP.format(bench=str(ROOT / "benchmarks"), n=n, cache=str(cache)),
                                               EXPLORER.format(n=n), PEER.format()])
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with T.lab_server(folder, env) as (url, token), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=T.CHROMIUM, headless=True, args=T.CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        T.open_notebook(page, url, token, "bench.ipynb", run=False)
        _run_cell(page, 0)                                             # data and imports, shared, not timed
        wait_drawn(page, ".warm", 3)
        page.wait_for_function(T.KERNEL_IDLE, timeout=900_000)
        time.sleep(1)
        page.wait_for_function(T.KERNEL_IDLE, timeout=900_000)
        for view, index, times in (("explorer", 1, "cell_times.txt"), ("peer", 2, "peer_cell_times.txt")):
            scatter = VIEWS[view][0]
            t0 = time.time()                  # each view's cell alone: the peer's runs after the explorer's is measured
            _run_cell(page, index)
            page.wait_for_function(f"document.querySelector('{scatter} canvas') || document.querySelector("
                                   "'.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]')",
                                   timeout=900_000)
            if not page.query_selector(f"{scatter} canvas"):
                raise RuntimeError("the benchmark notebook failed: "
                                   + page.locator(".jp-OutputArea-output").last.inner_text()[-2000:])
            T.calm_browser()
            wait_drawn(page, scatter, n)
            drawn_at = time.time()
            r = {"run_to_drawn_s": drawn_at - t0, "load_average_1min": round(os.getloadavg()[0], 2)}
            cell = [float(x) for x in (folder / times).read_text().split()] if (folder / times).exists() else None
            if cell:
                r["drawn_breakdown_s"] = {"run_to_cell_start": cell[0] - t0, "view_built": cell[1] - cell[0],
                                          "widget_sent": cell[2] - cell[1], "page_transfer_and_webgl": drawn_at - cell[2]}
            page.wait_for_function(T.KERNEL_IDLE, timeout=900_000)
            r.update(drive_view(page, view, n, seed=0, n_drags=args.drags, n_clicks=args.clicks))
            r["load_average_1min_after"] = round(os.getloadavg()[0], 2)
            res[view] = r
        page.screenshot(path=str(ROOT / "tests" / "artifacts" / f"explorer_benchmark_{n}.png"))
        browser.close()
    e, q = res["explorer"], res["peer"]
    res["explorer_over_peer"] = {k: (e[k] / q[k] if e.get(k) and q.get(k) else None)
                                 for k in ("run_to_drawn_s", "hover_panel_median_s", "selection_to_panel_median_s",
                                           "click_to_neighbours_median_s")}
    return res


IDLE_JS = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def idle(page):
    "Two animation frames: the page has finished drawing what the last action asked for (a redraw, rings)."
    page.evaluate(IDLE_JS)
    time.sleep(0.05)


def _near(pts, target, rng):
    "A position 1-5 px from the sampled point nearest `target`, and that point."
    k = int(np.argmin(((pts[:, :2] - target) ** 2).sum(1)))
    ang, rad = rng.uniform(0, 2 * np.pi), rng.uniform(1, 5)
    return pts[k, :2] + rad * np.r_[np.cos(ang), np.sin(ang)]


def drive_view(page, view, n, seed, n_hovers=10, n_drags=10, n_clicks=10):
    """Hovers, lasso drags (ends 1-5 px from a point) and clicks on one view (the explorer or the peer), the same
    positions for both (same seed): latencies from the mouse event to the panel's change, timed in the page; a
    selection or click whose result never shows in its panel is lost."""
    scatter, hover_sel, counts, nbrs = VIEWS[view]
    API = api(scatter)
    sc = page.locator(scatter).first
    sc.scroll_into_view_if_needed()
    info = sc.evaluate(EX_JS, max(1, n // 20_000))
    pts, rng = np.asarray(info["pts"], float).reshape(-1, 3), np.random.default_rng(seed)
    left, top, w, h = info["box"]
    inner = pts[(pts[:, 0] > left + 40) & (pts[:, 0] < left + w - 40) & (pts[:, 1] > top + 40) & (pts[:, 1] < top + h - 40)]
    hovers = []
    for k in rng.choice(len(inner), n_hovers, replace=False):
        x, y, _ = inner[k]
        idle(page)
        page.evaluate(EX_TIMING_JS, hover_sel)
        page.mouse.move(x, y, steps=1)
        try:
            page.wait_for_function(f"() => {{ const h = {API}.get('hoveredPoint'); return window.__cnbT.panel > 0 &&"
                                   f" h !== undefined && h !== null && h >= 0 &&"
                                   f" document.querySelector('{hover_sel}').innerText.includes('item ' + h + '\\n'); }}",
                                   timeout=10_000, polling=20)
            t = page.evaluate("window.__cnbT")
            hovers.append((t["panel"] - t["move"]) / 1000)
        except Exception:
            hovers.append(None)
        page.mouse.move(left + 3, top + 3, steps=1)
        time.sleep(0.3)
    sels = []
    for i in range(n_drags):
        f = rng.uniform(0.04, 0.12 if n > 200_000 else 0.3)
        p = inner[rng.integers(len(inner)), :2]
        start = _near(inner, p, rng)
        end = _near(inner, p + np.r_[w, h] * f * rng.choice([-1, 1], 2), rng)
        path = [start, (start + end) / 2 + np.r_[-(end - start)[1], (end - start)[0]] * 0.6, end]
        path = [np.clip(q, [left + 6, top + 6], [left + w - 6, top + h - 6]) for q in path]
        idle(page)
        page.evaluate(EX_TIMING_JS, counts)
        import test_explorer_browser as T
        T.drag(page, path, steps=4)
        time.sleep(0.05)
        try:
            page.wait_for_function(f"() => {{ const k = {API}.get('selectedPoints').length; const el ="
                                   f" document.querySelector('{counts} .cnb-count-total');"
                                   f" return window.__cnbT.panel > 0 && k > 0 && !!el && el.innerText.trim() === k + ' selected'; }}",
                                   timeout=30_000, polling=20)
            t = page.evaluate("window.__cnbT")
            sels.append({"rows": page.evaluate(f"{API}.get('selectedPoints').length"),
                         "mouseup_to_panel_s": (t["panel"] - t["up"]) / 1000})
        except Exception:
            sels.append({"rows": page.evaluate(f"{API}.get('selectedPoints').length"), "mouseup_to_panel_s": None})
    clicks, failed = [], []
    from scipy.spatial import cKDTree
    d, _ = cKDTree(inner[:, :2]).query(inner[:, :2], k=2)
    alone = inner[d[:, 1] > 1.5] if (d[:, 1] > 1.5).sum() >= n_clicks else inner
    for k in rng.choice(len(alone), n_clicks, replace=False):
        x, y, _ = alone[k]
        idle(page)
        page.evaluate(EX_TIMING_JS, nbrs)
        before = page.evaluate(f"{API}.get('selectedPoints')")
        prev = before[0] if len(before) == 1 else -1         # a click on a new point: its panel changes
        page.mouse.click(x, y)
        try:
            page.wait_for_function(f"() => {{ const s = {API}.get('selectedPoints'); return window.__cnbT.panel > 0 &&"
                                   f" s.length === 1 && s[0] !== {prev} &&"
                                   f" document.querySelector('{nbrs}').innerText.startsWith('row ' + s[0] + ':'); }}",
                                   timeout=30_000, polling=20)
            t = page.evaluate("window.__cnbT")
            clicks.append((t["panel"] - t["up"]) / 1000)
        except Exception:
            clicks.append(None)
            failed.append({"before": prev, "selected": page.evaluate(f"{API}.get('selectedPoints').slice(0, 3)"),
                           "panel": page.evaluate(f"document.querySelector('{nbrs}').innerText.slice(0, 20)"),
                           "panel_changed": page.evaluate("window.__cnbT.panel > 0")})
        time.sleep(0.3)
    ok = [x for x in hovers if x is not None]
    arrived = [x["mouseup_to_panel_s"] for x in sels if x["mouseup_to_panel_s"] is not None]
    shown = [x for x in clicks if x is not None]
    return {"hover_panel_median_s": statistics.median(ok) if ok else None, "hover_panel_max_s": max(ok) if ok else None,
            "hovers": len(hovers), "hovers_not_shown": len(hovers) - len(ok),
            "selections": sels, "selections_lost": len(sels) - len(arrived),
            "selection_rows_max": max((x["rows"] or 0) for x in sels) if sels else None,
            "selection_to_panel_median_s": statistics.median(arrived) if arrived else None,
            "selection_to_panel_max_s": max(arrived) if arrived else None,
            "clicks": len(clicks), "clicks_not_shown": len(clicks) - len(shown),
            "click_to_neighbours_median_s": statistics.median(shown) if shown else None,
            "click_to_neighbours_max_s": max(shown) if shown else None, "clicks_failed": failed}


def _version(pkg):
    from importlib import metadata
    return metadata.version(pkg)


def main():
    global ENV, OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["projection", "browser", "all"], default="all")
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--sklearn-n", type=int, default=None, help="points for the scikit-learn comparison (default: --n)")
    ap.add_argument("--skip-umap", action="store_true")
    ap.add_argument("--browser-n", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--drags", type=int, default=10, help="lasso drags on each view at each size")
    ap.add_argument("--clicks", type=int, default=10, help="clicks (neighbours) on each view at each size")
    ap.add_argument("--out", type=Path, default=None, help="the results file (default: the published one)")
    args = ap.parse_args()
    OUT = args.out or OUT
    from contrastive_nb.runs import run_environment
    ENV = run_environment(ROOT)  # taken before the measurement writes anything
    if args.part in ("projection", "all"):
        projection_part(args)
    if args.part in ("browser", "all"):
        browser_part(args)


if __name__ == "__main__":
    main()
