"""The explorer in a real browser: JupyterLab (headless, localhost) runs a small explorer notebook in Debian's
Chromium, driven by Playwright. Checks are read from the page itself: the number of points plotly drew, the hover
panel filled by the kernel after a real mouse hover, and the count table after a real box selection.
A screenshot is saved to tests/artifacts/explorer.png."""
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from helpers import ROOT, tool

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
N_PER_CLASS, N_CLASSES = 30, 4

NOTEBOOK_CELLS = [
    "import numpy as np\nfrom contrastive_nb.evaluate import embedding_table\nfrom contrastive_nb.explore import Explorer",
    f"""rng = np.random.default_rng(0)
y = np.repeat(np.arange({N_CLASSES}), {N_PER_CLASS})
z = rng.normal(size=({N_CLASSES}, 16))[y] * 4 + rng.normal(size=(len(y), 16))
words = ["alpha", "beta", "gamma", "delta"]
table = embedding_table(z, labels=y, text=[f"item {{i}} about {{words[l]}}" for i, l in enumerate(y)],
                        group=np.where(np.arange(len(y)) % 2 == 0, "even", "odd"))
ex = Explorer(table, color="label", text="text", method="pca", cache_dir=None, marker_size=9)
ex.show()""",
]

CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path, env):
    "A JupyterLab server on localhost serving a folder with the explorer notebook; yields (url, token)."
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    work = tmp_path / "work"; work.mkdir()
    nbformat.write(nb, work / "explorer.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    e = dict(env)
    e.pop("CONTRASTIVE_NB_HEADLESS", None)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        e[var] = str(tmp_path / sub)
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen([tool("jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}", "--allow-root",
                             "--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={tmp_path / 'ws'}"],
                            env=e, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200: break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
        yield url, token
    finally:
        proc.terminate()
        try: proc.wait(20)
        except subprocess.TimeoutExpired: proc.kill()
        log.close()


POINTS_JS = """() => {
  const gd = document.querySelector('.cnb-explorer .js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd.calcdata) return null;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  const pts = [];
  gd._fullData.forEach((t, i) => {
    if (t.name === 'neighbours') return;
    for (let j = 0; j < t.x.length; j++)
      pts.push({trace: i, j: j, text: t.text[j], px: r.left + xa._offset + xa.l2p(t.x[j]), py: r.top + ya._offset + ya.l2p(t.y[j])});
  });
  // the positions plotly handed to its WebGL marker renderer (x, y pairs), over all traces
  const scene = gd._fullLayout._plots.xy._scene;
  const drawn = scene && scene.markerOptions ? scene.markerOptions.reduce((s, m) => s + (m && m.positions ? m.positions.length / 2 : 0), 0) : 0;
  const canvases = gd.querySelectorAll('canvas').length;
  return {pts: pts, drawn: drawn, canvases: canvases};
}"""


def test_explorer_in_jupyterlab(lab):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    url, token = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{url}/lab/tree/explorer.ipynb?token={token}")
            page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=90_000)
            # wait until the kernel is up, then run every cell through JupyterLab's own command
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            page.wait_for_function("""() => { const w = window.jupyterapp.shell.currentWidget;
                return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
                       && w.sessionContext.session.kernel.status === 'idle'; }""", timeout=120_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector(".cnb-explorer .js-plotly-plot", timeout=120_000)
            info, deadline = None, time.time() + 60
            while time.time() < deadline:
                info = page.evaluate(POINTS_JS)
                if info and info["drawn"] == N_CLASSES * N_PER_CLASS: break
                time.sleep(0.5)
            assert info is not None, "no plotly graph with a layout in the explorer"
            assert info["drawn"] == N_CLASSES * N_PER_CLASS and len(info["pts"]) == N_CLASSES * N_PER_CLASS
            assert info["canvases"] > 0, "the WebGL scatter drew no canvas"

            # hover: the most isolated point, so plotly's closest-point hover picks it
            pts = info["pts"]
            def isolation(q):
                return min((q["px"] - o["px"]) ** 2 + (q["py"] - o["py"]) ** 2 for o in pts if o is not q)
            target = max(pts, key=isolation)
            item = target["text"].split("<br>")[-1]            # "item N about word"
            page.mouse.move(target["px"] - 30, target["py"] - 30)
            page.mouse.move(target["px"], target["py"], steps=5)
            page.wait_for_function("t => document.querySelector('.cnb-hover') && document.querySelector('.cnb-hover').innerText.includes(t)",
                                   arg=item, timeout=30_000)
            hover_label = page.locator(".cnb-explorer .hovertext").first.text_content()
            assert item in hover_label, (item, hover_label)

            # click: the kernel lists the point's nearest neighbours (found in the 16-d space) beside the plot
            row = int(item.split()[1])
            page.mouse.click(target["px"], target["py"])
            page.wait_for_function("t => { const c = document.querySelector('.cnb-neighbours'); return c && c.innerText.includes(t); }",
                                   arg=f"row {row}:", timeout=30_000)
            assert page.locator(".cnb-neighbours tbody tr").count() == 10

            # box selection over the points of one class, with the modebar's Box Select tool and a real drag
            page.locator(".cnb-explorer .modebar-btn[data-title='Box Select']").click()
            cls = [q for q in pts if q["trace"] == 0]
            x0, x1 = min(q["px"] for q in cls) - 4, max(q["px"] for q in cls) + 4
            y0, y1 = min(q["py"] for q in cls) - 4, max(q["py"] for q in cls) + 4
            expected = sum(x0 <= q["px"] <= x1 and y0 <= q["py"] <= y1 for q in pts)
            page.mouse.move(x0, y0); page.mouse.down()
            page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=5); page.mouse.move(x1, y1, steps=5); page.mouse.up()
            page.wait_for_function("t => { const c = document.querySelector('.cnb-counts .cnb-count-total'); return c && c.innerText.trim() === t; }",
                                   arg=f"{expected} selected", timeout=30_000)
            counts_text = page.locator(".cnb-counts").inner_text()
            assert expected >= N_PER_CLASS and "label=" in counts_text
        finally:
            page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
            browser.close()
