"""The documentation site, built and read as a person reads it.

Built once per test session from a copy of the project, as `make docs` builds it without Quarto (docs/build.py:
nbdev's processing — `show_doc` sections with signatures and parameter tables — then Sphinx + MyST-NB). Checked
from the built files (every notebook has a page titled as the notebook; every internal link and anchor resolves;
each function of DESIGN.md's public contract has an API entry with its signature) and in Debian's Chromium driven
by Playwright, from a local HTTP server with every other address blocked and counted (the navigation follows the
notebook map and its links open their pages; every image loads; search finds a function; a plotly figure answers
a real mouse hover; nothing is fetched from outside the site). Screenshots of the home page and of a tutorial page
are saved to tests/artifacts/.
"""
import functools
import html
import http.server
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from helpers import ROOT

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]

sys.path.insert(0, str(ROOT / "docs"))
from build import api_index, notebook_order  # noqa: E402  (docs/build.py)

NOTEBOOKS = notebook_order(ROOT / "nbs")

# DESIGN.md, "The public contract": (module, function, parameters as `name` or `name=default`)
CONTRACT = [
    ("losses", "nt_xent", ["z1", "z2", "temperature=0.5"]),
    ("losses", "suncet", ["z", "labels", "temperature=0.1"]),
    ("losses", "supcon", ["z", "labels", "temperature=0.1", "variant='out'"]),
    ("losses", "spread", ["z1", "z2", "labels", "temperature=0.5", "alpha=0.5"]),
    ("losses", "binary_nce", ["logits", "targets"]),
    ("data", "labeled_fraction_split", ["labels", "fraction", "seed"]),
    ("data", "k_shot_split", ["labels", "k", "seed"]),
    ("data", "noisy_labels", ["labels", "rate", "seed", "kind='symmetric'"]),
    ("evaluate", "frequency_bins", ["label_counts", "n_bins=5"]),
    ("evaluate", "ap_scores", ["y_true", "y_score"]),
    ("evaluate", "ap_by_bin", ["y_true", "y_score", "bins"]),
    ("text", "load_plm", ["path=None"]),
    ("evaluate", "knn_accuracy", ["train_z", "train_y", "test_z", "test_y", "k=20", "temperature=0.07"]),
    ("strata", "collapse_metrics", ["z", "labels"]),
    ("audit", "association_test", ["X", "Y", "A", "B", "n_permutations=10000", "seed=0"]),
]


def _title(nb_path: Path) -> str:
    "The `# Title` of a notebook's first Markdown cell."
    nb = nbformat.read(nb_path, as_version=4)
    first = next(c.source for c in nb.cells if c.cell_type == "markdown")
    return first.splitlines()[0].lstrip("#").strip()


def _page(nb_rel: Path) -> str:
    "The page a notebook gets: nbdev's page name (number prefix dropped), in the notebook's folder."
    stem = re.sub(r"^\d+[a-z]?_", "", nb_rel.stem)
    return str(nb_rel.parent / stem) if str(nb_rel.parent) != "." else stem


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    "A copy of the project with its site built: (project copy, site folder)."
    tmp = tmp_path_factory.mktemp("docs")
    for name in ["settings.ini", "setup.py", "README.md"]:
        shutil.copy(ROOT / name, tmp / name)
    shutil.copytree(ROOT / "nbs", tmp / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_proc", "_docs"))
    shutil.copytree(ROOT / "contrastive_nb", tmp / "contrastive_nb", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp))
    t0 = time.time()
    r = subprocess.run([sys.executable, str(ROOT / "docs" / "build.py"), "--root", str(tmp), "--builder", "sphinx",
                        "--jobs", "2", "-v"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"docs/build.py failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    print(f"site built in {time.time() - t0:.1f} s: {r.stdout.strip()}")
    return tmp, tmp / "_docs"


@functools.lru_cache(maxsize=None)
def _html(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _text(fragment: str) -> str:
    "The text of an HTML fragment (tags dropped, entities decoded)."
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


_HREF = re.compile(r"<a\s[^>]*?href=\"([^\"]*)\"")
_ID = re.compile(r"\sid=\"([^\"]+)\"")


def test_every_notebook_is_published():
    names = {p.name for p in NOTEBOOKS}
    assert {"index.ipynb", "03_losses.ipynb", "41_report.ipynb"} <= names and any(p.parts[0] == "tutorials" for p in NOTEBOOKS)


def test_processed_notebooks_carry_no_directives(built):
    proc = built[0] / "_proc"
    for nb in NOTEBOOKS:
        node = nbformat.read(proc / nb, as_version=4)
        src = "\n".join(c.source for c in node.cells)
        assert "#| export" not in src and "#| hide" not in src, f"nbdev left directives in {nb}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=str)
def test_every_notebook_has_a_page(built, nb):
    page = built[1] / (_page(nb) + ".html")
    assert page.exists(), f"no page {page.name} for {nb}"
    text = _html(page)
    h1 = re.search(r"<h1>(.*?)<a class=\"headerlink\"", text, re.S)
    assert h1 is not None and _text(h1.group(1)).strip() == _title(ROOT / "nbs" / nb)
    article = re.search(r"<article[^>]*>(.*)</article>", text, re.S)
    assert article and len(_text(article.group(1))) > 300, f"{page.name} is nearly empty"


def _internal_links(site: Path):
    "(page, href, resolved file, fragment) for every relative link of every page of the site."
    for page in sorted(site.rglob("*.html")):
        if page.name in ("genindex.html", "search.html"):
            continue
        for href in _HREF.findall(_html(page)):
            href = html.unescape(href)
            parts = urlsplit(href)
            if parts.scheme or href.startswith(("mailto:", "javascript:")) or parts.netloc:
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            yield page, href, target, parts.fragment


def test_internal_links_and_anchors_resolve(built):
    site = built[1]
    ids, broken, n = {}, [], 0
    for page, href, target, frag in _internal_links(site):
        n += 1
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            broken.append(f"{page.relative_to(site)}: {href} (no file)"); continue
        if frag and target.suffix == ".html":
            if target not in ids:
                ids[target] = set(_ID.findall(_html(target)))
            if unquote(frag) not in ids[target]:
                broken.append(f"{page.relative_to(site)}: {href} (no #{frag} in {target.name})")
    assert n > 500, f"only {n} internal links found"
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:30])
    leftover = [p.name for p in site.rglob("*.html")
                if any("contrastive-nb.github.io/contrastive_nb/" in h for h in _HREF.findall(_html(p)))]
    assert not leftover, f"nbdev doc links to the published site left in {leftover}"


@pytest.mark.parametrize("module,fn,params", CONTRACT, ids=[f"{m}.{f}" for m, f, _ in CONTRACT])
def test_contract_function_has_an_api_entry(built, module, fn, params):
    page = built[1] / f"{module}.html"
    text = _html(page)
    at = text.find(f'id="api-{fn}"')
    assert at >= 0, f"{page.name} has no API entry for {fn}"
    head = re.compile(r"<h([2-6])>(.*?)</h\1>", re.S).search(text, at)
    assert head and _text(head.group(2)).rstrip("#¶ ").strip() == fn, head and head.group(0)
    pre = re.compile(r"<pre>(.*?)</pre>", re.S).search(text, head.end())
    sig = _text(pre.group(1))
    assert re.search(rf"def\s+{fn}\s*\(", sig), sig
    for p in params:
        name, _, default = p.partition("=")
        rx = rf"\b{name}\s*(:[^=,]*?)?" + (rf"=\s*{re.escape(default)}" if default else r"\s*[,:=)\n]")
        assert re.search(rx, sig), f"{fn}: parameter {p} not in the signature shown:\n{sig}"


def test_documented_parameters_get_a_table(built):
    """Every API entry whose parameters carry docments shows a parameter table naming each parameter (nbdev 2.4
    puts the docments in the signature as comments; docs/build.py turns them into a table, as nbdev's Quarto pages
    had)."""
    from fastcore.docments import docments
    import importlib
    site, api = built[1], api_index(ROOT / "contrastive_nb")
    checked, missing = 0, []
    for url, full in sorted(api.items()):
        page, _, anchor = url.partition("#")
        text = _html(site / page) if (site / page).exists() else ""
        at = text.find(f'id="api-{anchor}"')
        if at < 0:
            continue                                  # a private or undocumented name: no API entry
        mod, _, rest = full.partition(".")[2].partition(".")
        obj = importlib.import_module(f"contrastive_nb.{mod}")
        for part in rest.split("."):
            obj = getattr(obj, part)
        try:
            dm = {k: v for k, v in docments(obj, full=True).items() if k not in ("self", "return")}
        except Exception:
            continue
        if not any(v.get("docment") for v in dm.values()):
            continue
        nxt = text.find('class="cnb-api-anchor"', text.find(">", at))
        entry = text[at:nxt if nxt > 0 else len(text)]
        table = re.search(r"<table.*?</table>", entry, re.S)
        names = set(re.findall(r"<code[^>]*><span class=\"pre\">([^<]+)</span></code>", table.group(0))) if table else set()
        if not table or not set(dm) <= names:
            missing.append(f"{page}#{anchor}: {sorted(set(dm) - names)}")
        checked += 1
    assert checked >= 20, f"only {checked} API entries with docments"
    assert not missing, "API entries whose parameter table is missing or incomplete:\n" + "\n".join(missing)


def test_the_command_is_documented(built):
    assert "contrastive-nb run" in _text(_html(built[1] / "runs.html"))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def served(built):
    "The built site over HTTP on 127.0.0.1; yields its base URL."
    handler = functools.partial(_QuietHandler, directory=str(built[1]))
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown(); srv.server_close()


IMAGES_JS = """() => Array.from(document.images).map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))"""
PLOTLY_POINTS_JS = """() => {
  const gd = document.querySelector('.cnb-plotly .js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd._fullData) return null;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
  const pts = [];
  gd._fullData.forEach((t, i) => { if (t.x) for (let j = 0; j < t.x.length; j++)
    pts.push({trace: i, name: t.name, x: t.x[j], y: t.y[j],
              px: r.left + xa._offset + xa.l2p(xa.d2l(t.x[j])), py: r.top + ya._offset + ya.l2p(ya.d2l(t.y[j]))}); });
  return pts;
}"""


def test_site_in_a_browser(built, served):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    site, base = built[1], served
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages = [_page(nb) for nb in NOTEBOOKS]
    outside = []

    def route(r):
        if r.request.url.startswith(base + "/"):
            r.continue_()
        else:
            outside.append(r.request.url); r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route("**/*", route)
        try:
            # the home page: the navigation lists the library notebooks in map order, then the tutorials
            page.goto(f"{base}/index.html")
            nav = page.eval_on_selector_all(".sidebar-tree a.reference", "as => as.map(a => a.getAttribute('href'))")
            nav_pages = [h.split("#")[0].removesuffix(".html") for h in nav]
            assert nav_pages == pages[1:], f"navigation {nav_pages} != notebook map {pages[1:]}"
            page.screenshot(path=str(ARTIFACTS / "docs_home.png"), full_page=False)
            # a nav link opens its page
            page.click(".sidebar-tree a.reference >> nth=3")
            page.wait_for_load_state("load")
            assert page.url.endswith(f"/{pages[4]}.html") and page.locator("h1").first.inner_text().strip(" ¶#") == _title(ROOT / "nbs" / NOTEBOOKS[4])

            # every page: it loads, its images load, math is typeset where there is math
            n_images = 0
            for name in pages:
                resp = page.goto(f"{base}/{name}.html")
                assert resp is not None and resp.status == 200, f"{name}.html: {resp and resp.status}"
                page.wait_for_load_state("load")
                imgs = page.evaluate(IMAGES_JS)
                bad = [i["src"] for i in imgs if not i["ok"]]
                assert not bad, f"{name}.html: images that did not load: {bad}"
                n_images += len(imgs)
            assert n_images >= 3, f"only {n_images} images in the whole site"

            # search (Sphinx's client-side index): a contract function is found on its page
            page.goto(f"{base}/search.html?q=nt_xent")
            page.wait_for_selector("#search-results ul.search li a", timeout=30_000)
            hits = page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.getAttribute('href'))")
            assert any(h.startswith("losses.html") for h in hits), hits

            # a plotly figure: drawn by the site's own plotly.js, and a real hover shows the point's values
            with_plotly = [n for n in pages if "cnb-plotly" in (site / f"{n}.html").read_text()]
            assert with_plotly, "no page shows a plotly figure"
            # every plotly figure of every such page is drawn; the hover runs on the first page with an SVG scatter
            # (the explorer's WebGL traces draw on a canvas, which headless Chromium without a GPU cannot hover)
            svg_page = None
            for n in with_plotly:
                page.goto(f"{base}/{n}.html")
                page.wait_for_function("() => [...document.querySelectorAll('.cnb-plotly')].every(d => d.querySelector('.js-plotly-plot'))",
                                       timeout=30_000)
                if svg_page is None and page.evaluate("() => !!document.querySelector('.cnb-plotly .js-plotly-plot .scatterlayer .point')"):
                    svg_page = n
            assert svg_page, f"no page among {with_plotly} draws an SVG scatter to hover"
            page.goto(f"{base}/{svg_page}.html")
            page.wait_for_function("() => document.querySelector('.cnb-plotly .js-plotly-plot .scatterlayer .point')", timeout=30_000)
            page.locator(".cnb-plotly").first.scroll_into_view_if_needed()
            pts = page.evaluate(PLOTLY_POINTS_JS)
            assert pts, "the plotly figure has no points"
            target = max(pts, key=lambda q: min((q["px"] - o["px"]) ** 2 + (q["py"] - o["py"]) ** 2 for o in pts if o is not q))
            page.mouse.move(target["px"] - 25, target["py"] - 25)
            page.mouse.move(target["px"], target["py"], steps=5)
            page.wait_for_selector(".cnb-plotly .hoverlayer .hovertext", timeout=15_000)
            hover = page.locator(".cnb-plotly .hoverlayer .hovertext").first.text_content()
            shown = [float(v) for v in re.findall(r"-?\d+\.\d+", hover)]
            assert any(abs(v - target["y"]) < 1e-3 for v in shown), (target, hover)

            # a tutorial page, for the eye
            tut = next((n for n in pages if n == "tutorials/suncet_digits"), next(n for n in pages if n.startswith("tutorials/")))
            page.goto(f"{base}/{tut}.html")
            page.wait_for_load_state("load")
            page.screenshot(path=str(ARTIFACTS / "docs_tutorial.png"), full_page=False)
        finally:
            page.screenshot(path=str(ARTIFACTS / "docs_last_page.png"))
            browser.close()
    assert not outside, f"the site asked for {len(outside)} outside resources: {sorted(set(outside))[:10]}"
