"""The explorer in a real browser: JupyterLab (headless, on 127.0.0.1) runs a notebook with four views in Debian's
Chromium, driven by Playwright with real mouse events, and every check is read from the page itself.

The view is jupyter-scatter's; the test reads it through its own API (the regl-scatterplot instance jupyter-scatter
keeps on the canvas' container: point positions, selected points, hovered point, colours), never its internals.

* ten drags in a row on a 360-point map, box and lasso alternating, each starting and ending 1–5 px from a point
  (where a hover fires as the drag begins and ends): the counts panel must show the exact number inside every time;
* `compare`: a hover in one panel highlights the item in the other and fills the item panel; a box selection in one
  selects the same items in the other and the counts panel shows how many (linked by jupyter-scatter's `compose`);
* colouring a 20,000-point explorer by a text column with 20,000 distinct values, from the dropdown: 99 categories
  + "other" are drawn and the page answers a hover within 2 s;
* the title heads the live widget, and the counts table's cells are padded (no "360.967");
* a hover whose `images` function raises shows the error in the hover panel;
* a reload of the saved notebook with its kernel running draws every plot again, and selections still arrive;
* the static output of headless runs and the docs: live once plotly.js loads (from the CDN, served locally here),
  its PNG where it cannot.

Screenshots of each go to tests/artifacts/explorer_*.png. The harness (`lab_server`, `open_notebook`, `scatter_info`)
is reused by benchmarks/explorer.py.
"""
import contextlib
import os
import secrets
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers import ROOT, tool

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]

SETUP = """\
import numpy as np, pandas as pd
from contrastive_nb.evaluate import embedding_table
from contrastive_nb.explore_compare import compare
from contrastive_nb.explore_view import Explorer
rng = np.random.default_rng(0)
y = np.repeat(np.arange(10), 36)
z = rng.normal(size=(10, 16))[y] * 2.5 + rng.normal(size=(len(y), 16))
table = embedding_table(z, labels=y, text=[f"item {i} of class {l}" for i, l in enumerate(y)],
                        group=np.where(np.arange(len(y)) % 2 == 0, "even", "odd"))
xy = np.c_[np.cos(y * 0.63) * 6, np.sin(y * 0.63) * 6] + rng.normal(size=(len(y), 2))   # ten blobs on a ring"""
CELLS = [
    SETUP,
    "ex = Explorer(table, text='text', xy=xy, marker_size=8, title='drags')\nex.show()",
    """table_b = embedding_table(z + rng.normal(size=z.shape) * 1.5, labels=y, text=table['text'])
cmp = compare(table, table_b, names=('model A', 'model B'), method='pca', cache_dir=None)
cmp.show()""",
    """n = 20_000
big = embedding_table(rng.normal(size=(n, 8)), labels=rng.integers(0, 12, n),
                      text=[f"a sentence of its own, number {i}" for i in range(n)])
ex_text = Explorer(big, text='text', xy=rng.normal(size=(n, 2)), title='20,000 texts')
ex_text.show()""",
    """def no_thumbnail(row):
    raise RuntimeError("the thumbnail store is offline")
ex_bad = Explorer(table, xy=xy, images=no_thumbnail, title='broken images')
ex_bad.show()""",
]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(folder: Path, env: dict):
    "A JupyterLab server on 127.0.0.1 serving `folder` (settings and runtime files inside it); yields (url, token)."
    port, token = _free_port(), secrets.token_hex(16)
    e = dict(env)
    e.pop("CONTRASTIVE_NB_HEADLESS", None)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        e[var] = str(folder / f".{sub}")
    labconfig = folder / ".config" / "labconfig"           # no "news" pop-up over the page
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text('{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    log_path = folder / ".lab.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([tool("jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                                 f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}", "--allow-root",
                                 "--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={folder / '.ws'}"],
                                env=e, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(240):
                try:
                    with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                        if r.status == 200: break
                except OSError:
                    time.sleep(0.5)
            else:
                raise RuntimeError("JupyterLab did not start:\n" + log_path.read_text()[-3000:])
            yield url, token
        finally:
            proc.terminate()
            try: proc.wait(20)
            except subprocess.TimeoutExpired: proc.kill()


def descendants(pid=None) -> list[int]:
    "Process ids of every descendant of `pid` (default: this process), read from /proc."
    kids = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                kids.setdefault(int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(d.name))
            except OSError:
                pass
    todo, out = [pid or os.getpid()], []
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k); todo.append(k)
    return out


def calm_browser(level=None):
    """Give Chromium (every descendant process) at least niceness `level` (default: this process's): running as
    root, Chromium raises its GPU process's priority (nice -8), which a shared machine's other jobs pay for."""
    level = os.getpriority(os.PRIO_PROCESS, 0) if level is None else level
    for pid in descendants():
        try:
            if os.getpriority(os.PRIO_PROCESS, pid) < level:
                os.setpriority(os.PRIO_PROCESS, pid, level)
        except OSError:
            pass


def write_notebook(path: Path, cells):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


KERNEL_IDLE = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!k && k.status === 'idle'; }"""


def open_notebook(page, url, token, name, run=True, timeout=180_000):
    "Open `name` in JupyterLab, wait for an idle kernel and (if `run`) run every cell with JupyterLab's own command."
    page.goto(f"{url}/lab/tree/{name}?token={token}")
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')", timeout=timeout)
    page.wait_for_function(KERNEL_IDLE, timeout=timeout)
    if run:
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


SCATTER_JS = """(el, withPoints) => {
  // the view's own API: jupyter-scatter keeps its regl-scatterplot instance on the canvas' container as `api`
  const canvas = el.querySelector('canvas');
  const api = canvas && canvas.parentElement && canvas.parentElement.parentElement && canvas.parentElement.parentElement.api;
  if (!api || !api.get('isPointsDrawn')) return null;
  const r = canvas.getBoundingClientRect(), n = api.get('points').length;
  let pts = null;
  if (withPoints) {
    pts = new Float64Array(3 * n);
    for (let i = 0; i < n; i++) { const p = api.getScreenPosition(i); pts[3 * i] = r.left + p[0]; pts[3 * i + 1] = r.top + p[1]; pts[3 * i + 2] = i; }
    pts = Array.from(pts);
  }
  const hovered = api.get('hoveredPoint');
  return {n: n, pts: pts, selected: api.get('selectedPoints').length, colors: (api.get('pointColor') || []).length,
          hovered: hovered === undefined || hovered === null ? -1 : hovered, box: [r.left, r.top, r.width, r.height]};
}"""


def scatter_info(page, scatter, n_points=None, timeout=60, points=True):
    """What a scatter view drew, read through its own API: point positions (px, with their point index, which is the
    table row up to the display cap), how many are selected, how many colours, the hovered point, its box."""
    deadline = time.time() + timeout
    scatter.scroll_into_view_if_needed()
    while True:
        info = scatter.evaluate(SCATTER_JS, False)
        if info and (n_points is None or info["n"] == n_points):
            if points:
                info = scatter.evaluate(SCATTER_JS, True)
                info["pts"] = np.asarray(info["pts"], float).reshape(-1, 3)
            return info
        if time.time() > deadline:
            raise AssertionError(f"the plot was not drawn within {timeout} s: {None if not info else info['n']} points")
        time.sleep(0.25)


def drawn(scatter, n_points, timeout=60):
    "Wait (cheaply: no positions) until a scatter view has drawn `n_points` points; returns what it reports."
    return scatter_info(None, scatter, n_points, timeout, points=False)


def panel_text_is(page, selector, text, timeout=30_000, nth=0):
    page.wait_for_function("([s, t, i]) => { const c = document.querySelectorAll(s)[i]; return !!c && c.innerText.trim() === t; }",
                           arg=[selector, text, nth], timeout=timeout)


def panel_contains(page, selector, text, timeout=30_000, nth=0):
    page.wait_for_function("([s, t, i]) => { const c = document.querySelectorAll(s)[i]; return !!c && c.innerText.includes(t); }",
                           arg=[selector, text, nth], timeout=timeout)


# --- drags whose ends sit 1-5 px from a point ---------------------------------------------------------------------

def _edge_margin(pts, poly):
    "Smallest distance from any point to the polygon's edges (px)."
    a, b = poly, np.roll(poly, -1, axis=0)
    ab = b - a
    t = np.clip(((pts[:, None, :] - a) * ab).sum(-1) / np.maximum((ab ** 2).sum(-1), 1e-9), 0, 1)
    d = np.linalg.norm(pts[:, None, :] - (a + t[..., None] * ab), axis=-1)
    return d.min()


def _inside(pts, poly):
    from matplotlib.path import Path as MplPath
    return MplPath(poly).contains_points(pts)


def plan_drag(pts, box, rng, kind):
    """A drag whose first and last positions are 1-5 px from a point, with no point within 1 px of its outline;
    returns (mouse path, expected rows). Boxes are given by two corners, lassos by their vertices."""
    left, top, w, h = box
    xy = pts[:, :2]
    inner = xy[(xy[:, 0] > left + 30) & (xy[:, 0] < left + w - 30) & (xy[:, 1] > top + 30) & (xy[:, 1] < top + h - 30)]
    for _ in range(1000):
        p, q = inner[rng.choice(len(inner), 2, replace=False)]
        if np.abs(p - q).min() < 20 or np.linalg.norm(p - q) > 320:
            continue
        ang = rng.uniform(0, 2 * np.pi, 2); rad = rng.uniform(1, 5, 2)
        start, end = p + rad[0] * np.r_[np.cos(ang[0]), np.sin(ang[0])], q + rad[1] * np.r_[np.cos(ang[1]), np.sin(ang[1])]
        if kind == "box":
            poly = np.array([start, [end[0], start[1]], end, [start[0], end[1]]])
            path = [start, (start + end) / 2, end]
        else:       # a lasso from start by way of a third vertex to end, closed from end back to start
            mid = (start + end) / 2 + np.r_[-(end - start)[1], (end - start)[0]] * rng.uniform(0.3, 0.8)
            poly = np.array([start, mid, end])
            path = list(poly)
        in_plot = (poly[:, 0] > left + 5) & (poly[:, 0] < left + w - 5) & (poly[:, 1] > top + 5) & (poly[:, 1] < top + h - 5)
        if not in_plot.all() or _edge_margin(xy, poly) < 1.0:
            continue
        expected = np.sort(pts[_inside(xy, poly), 2].astype(int))
        if 3 <= len(expected) < len(pts) - 3:
            return [np.asarray(v, float) for v in path], expected
    raise AssertionError("could not plan a drag with clean edges")


def drag(page, path, steps=6, pause=0.02):
    "A drag along `path`, paced so the lasso (a vertex at most every 8 ms, 2 px apart) records each step."
    page.mouse.move(*path[0], steps=3)          # the hover at the start of the drag
    time.sleep(0.08)
    page.mouse.down()
    # the lasso's first vertex is where the mouse first moves after the button goes down: a nudge of half a pixel
    # towards the next vertex makes that the drag's start (else the first step's end would be its corner)
    first = np.asarray(path[0], float); toward = np.asarray(path[1], float) - first
    page.mouse.move(*(first + 0.5 * toward / max(np.linalg.norm(toward), 1e-9)))
    time.sleep(pause)
    for a, b in zip(path[:-1], path[1:]):
        for t in np.linspace(0, 1, steps + 1)[1:]:
            page.mouse.move(*(np.asarray(a) + t * (np.asarray(b) - np.asarray(a))))
            time.sleep(pause)
    time.sleep(pause)
    page.mouse.up()                              # ends next to a point: another hover


def most_isolated(pts):
    "The point farthest from its nearest neighbour (the hover cannot pick another)."
    from scipy.spatial import cKDTree
    d, _ = cKDTree(pts[:, :2]).query(pts[:, :2], k=2)
    return pts[int(d[:, 1].argmax())]


def use_tool(scope, mode):
    "Pick what a drag does with the explorer's own buttons: 'lasso', 'box' or 'pan & zoom'."
    scope.locator(".cnb-drag-mode button", has_text=mode).first.click()


# --- the notebook, opened once for the module ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    "One headless Chromium for the module (Playwright's sync API allows one running instance at a time)."
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def lab_page(browser, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab")
    write_notebook(folder / "explorer.ipynb", CELLS)
    env = dict(os.environ, PATH=str(Path(tool("jupyter")).parent) + os.pathsep + os.environ.get("PATH", ""))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with lab_server(folder, env) as (url, token):
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.on("dialog", lambda d: d.dismiss())
        try:
            open_notebook(page, url, token, "explorer.ipynb")
            calm_browser()
            page.wait_for_function("document.querySelectorAll('.cnb-scatter').length >= 5", timeout=240_000)
            yield page
        finally:
            page.close()


def scatters(page):
    return {"ex": page.locator(".cnb-explorer .cnb-scatter").nth(0), "a": page.locator(".cnb-compare .cnb-scatter").nth(0),
            "b": page.locator(".cnb-compare .cnb-scatter").nth(1), "text": page.locator(".cnb-explorer .cnb-scatter").nth(1),
            "bad": page.locator(".cnb-explorer .cnb-scatter").nth(2)}


def test_ten_drags_near_points_all_arrive(lab_page):
    page, rng = lab_page, np.random.default_rng(0)
    sc, box = scatters(page)["ex"], page.locator(".cnb-explorer").nth(0)
    info = scatter_info(page, sc, n_points=360)
    assert info["colors"] == 10                                        # coloured by label: ten categories
    counts = ".cnb-explorer .cnb-counts .cnb-count-total"
    for i in range(10):
        kind = "box" if i % 2 == 0 else "lasso"
        use_tool(box, kind)
        info = scatter_info(page, sc, n_points=360)
        path, expected = plan_drag(info["pts"], info["box"], rng, kind)
        drag(page, path)
        try:
            panel_text_is(page, counts, f"{len(expected)} selected", timeout=15_000)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "explorer_drag_failed.png"))
            shown = page.locator(counts).first.inner_text()
            raise AssertionError(f"drag {i + 1} ({kind}): {len(expected)} points inside, the counts panel says {shown!r}, "
                                 f"the scatter selected {scatter_info(page, sc, points=False)['selected']}") from None
        assert scatter_info(page, sc, points=False)["selected"] == len(expected), f"drag {i + 1}: the scatter's own selection differs"
    page.screenshot(path=str(ARTIFACTS / "explorer_drags.png"))
    assert "label=" in page.locator(".cnb-explorer .cnb-counts").first.inner_text()
    assert box.locator(".cnb-title").inner_text().strip() == "drags"     # the title shows in the live widget
    cells = box.locator(".cnb-counts td")
    assert cells.count() and all(cells.nth(i).evaluate("c => getComputedStyle(c).paddingLeft") == "8px"
                                 for i in range(cells.count()))         # cells padded: "36" and "0.967" stay apart


def test_compare_links_hover_and_selection(lab_page):
    page = lab_page
    a, b = scatters(page)["a"], scatters(page)["b"]
    ia, ib = scatter_info(page, a, n_points=360), scatter_info(page, b, n_points=360)
    assert ia["colors"] == 10 and ib["colors"] == 10                  # coloured by label
    assert page.locator(".cnb-compare .cnb-legend .cnb-legend-item").count() == 10   # with a key
    # hover the most isolated point of A: B highlights the same item (jupyter-scatter's compose), the panel shows it
    p = most_isolated(ia["pts"]); row = int(p[2])
    page.mouse.move(*(p[:2] - 25), steps=2); page.mouse.move(*p[:2], steps=4)
    panel_contains(page, ".cnb-compare .cnb-hover", f"item {row} of class")
    deadline = time.time() + 10
    while scatter_info(page, b, points=False)["hovered"] != row:
        assert time.time() < deadline, "panel B did not highlight the item hovered in A"
        time.sleep(0.2)
    # a box selection in A selects the same items in B
    use_tool(page.locator(".cnb-compare"), "box")
    ia = scatter_info(page, a, n_points=360)
    path, expected = plan_drag(ia["pts"], ia["box"], np.random.default_rng(1), "box")
    drag(page, path)
    panel_text_is(page, ".cnb-compare .cnb-counts .cnb-count-total", f"{len(expected)} selected")
    deadline = time.time() + 10
    while scatter_info(page, b, points=False)["selected"] != len(expected):
        assert time.time() < deadline, f"panel B shows {scatter_info(page, b, points=False)['selected']} selected, not {len(expected)}"
        time.sleep(0.2)
    page.screenshot(path=str(ARTIFACTS / "explorer_compare.png"))


def test_colour_by_a_20000_value_text_column(lab_page):
    page = lab_page
    sc = scatters(page)["text"]
    drawn(sc, 20_000)
    box = page.locator(".cnb-explorer").nth(1)
    t0 = time.time()
    box.locator("select").first.select_option("text")
    deadline = time.time() + 60
    while scatter_info(page, sc, points=False)["colors"] != 100:         # 99 texts + "other", not 20,000 colours
        assert time.time() < deadline, scatter_info(page, sc, points=False)["colors"]
        time.sleep(0.2)
    redraw_s = time.time() - t0
    info = scatter_info(page, sc, n_points=20_000)
    panel_contains(page, ".cnb-explorer .cnb-status", "20,000 distinct values", nth=1)
    assert box.locator(".cnb-legend .cnb-legend-item").count() == 100
    p = most_isolated(info["pts"])
    t0 = time.time()
    page.mouse.move(*p[:2], steps=1)
    panel_contains(page, ".cnb-explorer .cnb-hover", f"a sentence of its own, number {int(p[2])}\n", nth=1, timeout=2_000)
    hover_s = time.time() - t0
    page.screenshot(path=str(ARTIFACTS / "explorer_text_colour.png"))
    print(f"recoloured 20,000 points by a 20,000-value column in {redraw_s:.2f} s; hover answered in {hover_s:.2f} s")


def test_a_raising_hover_shows_its_error(lab_page):
    page = lab_page
    sc = scatters(page)["bad"]
    info = scatter_info(page, sc, n_points=360)
    p = most_isolated(info["pts"])
    page.mouse.move(*(p[:2] - 25), steps=2); page.mouse.move(*p[:2], steps=4)
    panel_contains(page, ".cnb-explorer .cnb-hover", "the thumbnail store is offline", nth=2)
    assert "hover failed" in page.locator(".cnb-explorer .cnb-hover").nth(2).inner_text()
    page.screenshot(path=str(ARTIFACTS / "explorer_hover_error.png"))


def test_reload_draws_every_plot_again(lab_page):
    page = lab_page
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    page.reload()
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('.cnb-scatter').length >= 5", timeout=120_000)
    sc = scatters(page)
    for name, n in (("ex", 360), ("a", 360), ("b", 360), ("text", 20_000), ("bad", 360)):
        drawn(sc[name], n, timeout=90)
    use_tool(page.locator(".cnb-explorer").nth(0), "box")
    info = scatter_info(page, sc["ex"], n_points=360)
    path, expected = plan_drag(info["pts"], info["box"], np.random.default_rng(2), "box")
    drag(page, path)
    panel_text_is(page, ".cnb-explorer .cnb-counts .cnb-count-total", f"{len(expected)} selected")
    page.screenshot(path=str(ARTIFACTS / "explorer_reload.png"))


def test_static_figure_is_live_where_plotly_loads_and_a_png_where_not(browser, tmp_path):
    "The headless/docs output: the HTML draws the live figure once plotly.js (CDN) loads, and keeps its PNG when not."
    from contrastive_nb.evaluate import embedding_table
    from contrastive_nb.explore_static import _plotly_js_bytes
    from contrastive_nb.explore_view import Explorer
    rng = np.random.default_rng(0)
    ex = Explorer(embedding_table(rng.normal(size=(60, 4)), labels=np.repeat(np.arange(3), 20)), xy=rng.normal(size=(60, 2)))
    page_html = "<html><body>" + ex.static().html() + "</body></html>"
    (tmp_path / "static.html").write_text(page_html)
    online, offline = browser.new_page(), browser.new_page()
    try:
        online.route("https://cdn.plot.ly/**", lambda route: route.fulfill(body=_plotly_js_bytes(), content_type="text/javascript"))
        online.goto((tmp_path / "static.html").as_uri())
        online.wait_for_selector(".cnb-static .js-plotly-plot", timeout=30_000)
        assert online.locator("img.cnb-static-png").count() == 0
        assert online.evaluate("document.querySelector('.js-plotly-plot')._fullData.filter(t => t.meta === 'points').length") == 3
        offline.route("https://cdn.plot.ly/**", lambda route: route.abort())
        offline.goto((tmp_path / "static.html").as_uri())
        assert offline.locator("img.cnb-static-png").is_visible() and offline.locator(".js-plotly-plot").count() == 0
    finally:
        online.close(); offline.close()
