"""The documentation site, built and read as a person reads it.

Built once per test session from a copy of the project, as `make docs` builds it without Quarto (docs/build.py:
nbdev's processing — `show_doc` sections with signatures and parameter tables — then Sphinx + MyST-NB). Checked
from the built files: every notebook has a page titled as the notebook; every internal link and anchor resolves;
each function of the public contract has an API entry with its signature; every API entry with parameters has a
parameter table that documents each of them, a class reads as a class, and no entry shows Python's placeholder
docstring; no page shows a path of the machine that built it or an internal ticket number; code lines fit the
column (100 characters); the sidebar starts with the tutorials and the architecture page and groups the library
by stage; the architecture page lists every module, hook event and loss term the code has; a rebuild with nothing
changed renders nothing. And in Debian's Chromium driven by Playwright, from a local HTTP server with every other
address blocked and counted (the navigation follows the sidebar and its links open their pages; every image loads;
search finds a function; a plotly figure answers a real mouse hover; code and parameter tables do not scroll
sideways; nothing is fetched from outside the site). Screenshots of the home page and of a tutorial page are saved
to tests/artifacts/.
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
from build import (_front_matter, _toctree_title, api_index, api_parameters, notebook_order,  # noqa: E402
                   page_of, site_nav)  # (docs/build.py)

NOTEBOOKS = notebook_order(ROOT / "nbs")

# The public contract, the names other code, notebooks and users rely on: (module, function, parameters as `name`
# or `name=default`)
CONTRACT = [
    ("losses", "nt_xent", ["z1", "z2", "temperature=0.5"]),
    ("losses", "suncet", ["z", "labels", "temperature=0.1"]),
    ("losses", "supcon", ["z", "labels", "temperature=0.1", "variant='out'"]),
    ("losses", "spread", ["z1", "z2", "labels", "temperature=0.5", "alpha=0.5"]),
    ("losses", "binary_nce", ["logits", "targets"]),
    ("label_scarcity", "labeled_fraction_split", ["labels", "fraction", "seed"]),
    ("label_scarcity", "k_shot_split", ["labels", "k", "seed"]),
    ("label_scarcity", "noisy_labels", ["labels", "rate", "seed", "kind='symmetric'"]),
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
    shutil.copytree(ROOT / "tests", tmp / "tests", ignore=shutil.ignore_patterns("__pycache__", "artifacts"))
    t0 = time.time()
    r = _build(tmp)
    assert r.returncode == 0, f"docs/build.py failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    print(f"site built in {time.time() - t0:.1f} s: {r.stdout.strip()}")
    return tmp, tmp / "_docs"


def _build(project: Path):
    env = dict(os.environ, PYTHONPATH=str(project))
    return subprocess.run([sys.executable, str(ROOT / "docs" / "build.py"), "--root", str(project), "--builder",
                           "sphinx", "--jobs", "2", "-v"], env=env, capture_output=True, text=True)


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


def _api_entries(site: Path):
    """Every API entry of the site: (page, anchor, symbol, the entry's HTML up to the next entry). The symbols come
    from nbdev's index of the library (`_modidx.py`)."""
    import importlib
    for url, full in sorted(api_index(ROOT / "contrastive_nb").items()):
        page, _, anchor = url.partition("#")
        text = _html(site / page) if (site / page).exists() else ""
        at = text.find(f'id="api-{anchor}"')
        if at < 0:
            continue                                  # a private or undocumented name: no API entry
        mod, _, rest = full.partition(".")[2].partition(".")
        obj = importlib.import_module(f"contrastive_nb.{mod}")
        for part in rest.split("."):
            obj = getattr(obj, part)
        nxt = text.find('class="cnb-api-anchor"', text.find(">", at))
        end = min(x for x in (nxt, text.find("</article>", at), len(text)) if x > 0)
        yield page, anchor, obj, text[at:end]


_TABLE = re.compile(r"<table.*?</table>", re.S)
_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S)
_TD = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)


def _param_rows(entry: str) -> dict:
    "The parameter table of an API entry: parameter name → its details cell (text); {} without a table."
    table = _TABLE.search(entry)
    if not table:
        return {}
    rows = {}
    for row in _ROW.findall(table.group(0))[1:]:
        cells = [_text(c).strip() for c in _TD.findall(row)]
        if cells and cells[0] != "returns":
            rows[cells[0]] = cells[-1]
    return rows


def test_every_api_entry_documents_its_parameters(built):
    """Exact: every public function and class on the API pages whose signature has parameters (a class: its
    constructor's, a dataclass's fields; `self` and a constructor Python itself provides do not count) has a
    parameter table with one row per parameter, and every row says what the parameter is (nbdev's docments: a
    comment after the parameter). The entries without parameters are counted too."""
    site = built[1]
    n, with_params, tables, undocumented = 0, 0, 0, []
    for page, anchor, obj, entry in _api_entries(site):
        n += 1
        if not callable(obj):
            continue
        params, _ret = api_parameters(obj)
        if not params:
            continue
        with_params += 1
        rows = _param_rows(entry)
        tables += bool(rows) and set(rows) == set(params)
        missing = [p for p in params if not rows.get(p)]
        if missing:
            undocumented.append(f"{page}#{anchor}: {', '.join(missing)}")
    print(f"{n} API entries, {with_params} with parameters, {tables} with a complete parameter table")
    assert n >= 150 and with_params >= 100, (n, with_params)
    assert not undocumented, (f"{len(undocumented)} of {with_params} API entries with parameters leave some "
                              f"undocumented (add a comment after each parameter in the notebook):\n"
                              + "\n".join(undocumented))
    assert tables == with_params


def test_a_docments_comment_becomes_the_details_of_its_row(built):
    "nbdev 2.4 puts docments in the signature as comments; the build turns them into the table, as Quarto did."
    entry = next(e for p, a, _o, e in _api_entries(built[1]) if p == "losses.html" and a == "nt_xent")
    rows = _param_rows(entry)
    assert {"z1", "z2", "temperature"} <= set(rows), rows
    from fastcore.docments import docments
    from contrastive_nb.losses import nt_xent
    for name, v in docments(nt_xent, full=True).items():
        if name in rows and v.get("docment"):
            assert rows[name] == _text(v["docment"]).replace("`", ""), (name, rows[name], v["docment"])
    sig = _text(re.search(r"<pre>(.*?)</pre>", entry, re.S).group(1))
    assert "#" not in sig, f"the comments stay in the signature as well as in the table:\n{sig}"


def test_classes_are_shown_as_classes(built):
    "A class's signature reads `class Name`; an exception names the exception it extends."
    import inspect
    wrong, n = [], 0
    for page, anchor, obj, entry in _api_entries(built[1]):
        if not inspect.isclass(obj):
            continue
        n += 1
        sig = _text(re.search(r"<pre>(.*?)</pre>", entry, re.S).group(1)).strip()
        if not sig.startswith(f"class {obj.__name__}"):
            wrong.append(f"{page}#{anchor}: {sig.splitlines()[0]}")
        elif issubclass(obj, BaseException):
            base = obj.__bases__[0].__name__
            if base not in _text(entry):
                wrong.append(f"{page}#{anchor}: does not say it is a {base}")
    assert n >= 30, n
    assert not wrong, "\n".join(wrong)
    losses = _html(built[1] / "losses.html")
    entry = losses[losses.find('id="api-nonfiniteinputerror"'):]
    assert "class NonFiniteInputError(ValueError)" in _text(re.search(r"<pre>(.*?)</pre>", entry, re.S).group(1))


def test_every_api_entry_has_a_description(built):
    """No entry shows Python's placeholder ("Call self as a function.", what fastcore finds for a function without
    a docstring), and every entry has its docstring's first line under the signature."""
    site, bare = built[1], []
    assert not [p.name for p in site.rglob("*.html") if "Call self as a function" in _html(p)]
    for page, anchor, obj, entry in _api_entries(site):
        if callable(obj) and not (getattr(obj, "__doc__", None) or "").strip():
            bare.append(f"{page}#{anchor}")
    assert not bare, f"{len(bare)} API entries without a docstring:\n" + "\n".join(bare)


VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
             "wbr"}


class _Prose(__import__("html.parser").parser.HTMLParser):
    """The text of a page's article in three parts: code cells' source, notebook outputs, and the rest (headings,
    prose, API entries)."""
    SKIP = ("cell_input", "cell_output")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.parts = [], {"code": [], "output": [], "prose": []}
        self.in_article = 0

    def _kind(self):
        for k in reversed(self.stack):
            if k:
                return k
        return "prose"

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            return
        cls = dict(attrs).get("class") or ""
        kind = "code" if "cell_input" in cls else "output" if "cell_output" in cls else None
        if tag in ("script", "style"):
            kind = "skip"
        self.stack.append(kind)
        self.in_article += tag == "article"

    def handle_endtag(self, tag):
        if tag in VOID_TAGS:
            return
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        kind = self._kind()
        if kind != "skip":
            self.parts[kind].append(data)


def _parts(page: Path) -> dict:
    text = _html(page)
    article = re.search(r"<article[^>]*>(.*)</article>", text, re.S)
    p = _Prose()
    p.feed(article.group(1) if article else text)
    return {k: "".join(v) for k, v in p.parts.items()}


def _pages(site: Path):
    return [p for p in sorted(site.rglob("*.html")) if p.name not in ("genindex.html", "search.html")]


def test_no_page_shows_a_path_of_the_machine_that_built_it(built):
    """Neither the checkout the notebooks ran in, nor the copy the site was built from, nor a home or temporary
    folder appears on a page. A code cell may spell out a path as data (`"/tmp/abs"` as an input a check refuses),
    so /tmp/ is looked for in outputs and prose only; the others everywhere."""
    project, site = built
    everywhere = [str(ROOT), str(project), "/root/", "/home/"]
    found = []
    for page in _pages(site):
        parts = _parts(page)
        whole = "\n".join(parts.values())
        for needle in everywhere:
            if needle in whole:
                found.append(f"{page.relative_to(site)}: {needle} ×{whole.count(needle)}")
        shown = parts["output"] + "\n" + parts["prose"]
        for m in re.finditer(r"/tmp/\S*", shown):
            found.append(f"{page.relative_to(site)}: {m.group(0)[:80]}")
    assert not found, "pages that show the build machine's paths:\n" + "\n".join(found)


TICKET = re.compile(r"\b(issue|issues|ticket|tickets) #?\d+(\.\d+)?\b", re.I)


def test_no_page_cites_an_internal_ticket(built):
    "Headings and prose say what a thing is, not which ticket it came from (`The protocol (issue 19)`)."
    site, found = built[1], []
    for page in _pages(site):
        for m in TICKET.finditer(_parts(page)["prose"]):
            found.append(f"{page.relative_to(site)}: {m.group(0)!r}")
    assert not found, "internal ticket numbers on the pages:\n" + "\n".join(found)


MAX_CODE_LINE = 100


def test_code_lines_fit_the_column(built):
    "Every line of code on a page (code cells, API signatures, code blocks in prose) has at most 100 characters."
    site, long = built[1], []
    for page in _pages(site):
        text = _html(page)
        for pre in re.findall(r"<pre>(.*?)</pre>", text, re.S):
            start = text.find(pre)
            if text.rfind('class="cell_output', 0, start) > text.rfind('class="cell_input', 0, start) \
                    and text.rfind('class="cell_output', 0, start) > text.rfind("cnb-api-anchor", 0, start):
                continue                                  # an output, not code
            for line in _text(pre).splitlines():
                if len(line) > MAX_CODE_LINE:
                    long.append(f"{page.relative_to(site)}: {len(line)}: {line[:60]}…")
    assert not long, f"{len(long)} code lines over {MAX_CODE_LINE} characters:\n" + "\n".join(long[:40])


def _nav(site: Path) -> list:
    "The sidebar of the home page: [(caption, [(title, href), …]), …]."
    text = _html(site / "index.html")
    tree = re.search(r'<div class="sidebar-tree">(.*?)</div>', text, re.S).group(1)
    out = []
    for cap, body in re.findall(r'<p class="caption"[^>]*>(.*?)</p>\s*<ul>(.*?)</ul>', tree, re.S):
        links = re.findall(r'<a class="reference internal" href="([^"]*)">(.*?)</a>', body, re.S)
        out.append((_text(cap).strip(), [(_text(t).strip(), h) for h, t in links]))
    return out


def test_sidebar_starts_with_the_tutorials_and_groups_the_library(built):
    project, site = built
    nav = _nav(site)
    captions = [c for c, _ in nav]
    assert captions[:2] == ["Tutorials", "How it fits together"], captions
    assert [c for c in captions[2:]] == [c for c in ["Data & views", "Losses & models", "Engine & compute",
                                                     "Evaluation & protocol", "Strata", "Text: CLESS, CSS-LM",
                                                     "Exploration & audit", "Runs & reports"] if c in captions], captions
    assert nav[1][1][0][1] == "architecture.html", nav[1]
    order = notebook_order(project / "nbs")
    fronts = {str(p): _front_matter(nbformat.read(project / "_proc" / p, as_version=4)) for p in order}
    pages = {str(p): page_of(p, fronts[str(p)]) for p in order}
    expected = [(c, [(_toctree_title(t), p + ".html") for t, p in entries])
                for c, entries in site_nav(order, pages, fronts)]
    assert nav == expected
    library = [(t, h) for c, entries in nav[2:] for t, h in entries]
    bare = [t for t, h in library if t == h.removesuffix(".html")]
    assert not bare, f"sidebar titles that are bare module names: {bare}"
    assert {h for _, h in library} >= {"core.html", "train.html", "evaluate.html", "audit.html"}


def test_architecture_page_lists_what_the_code_has(built):
    """The architecture page is generated from the code at build time: every module of the library, every event of
    `Hook`, every registered loss term and every test file appear on it."""
    import ast
    project, site = built
    page = _text(_html(site / "architecture.html"))
    lib = project / "contrastive_nb"
    modules = [p.stem for p in lib.glob("*.py") if not p.name.startswith("_")]
    # read from whichever module defines them (`hooks`, `loss_terms` today; `train` re-exports them)
    body = [n for p in sorted(lib.glob("*.py")) if not p.name.startswith("_")
            for n in ast.parse(p.read_text(encoding="utf-8")).body]
    hook = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == "Hook")
    events = [f.name for f in hook.body if isinstance(f, ast.FunctionDef)]
    terms = [ast.literal_eval(d.args[0]) for n in body if isinstance(n, ast.ClassDef)
             for d in n.decorator_list if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "register_loss_term"]
    tests = [str(p.relative_to(project)) for p in (project / "tests").rglob("test_*.py")]
    assert len(modules) >= 15 and len(events) >= 8 and terms and tests
    missing = [x for x in modules + events + terms + tests if x not in page]
    assert not missing, f"the architecture page does not mention {missing}"
    for name in ("embedding", "TrainState", "Checkpointer", "numbering"):
        assert name in page


def test_a_rebuild_with_nothing_changed_renders_nothing(built):
    "A second build of the same project: nbdev reprocesses nothing, and no page of the site is written again."
    project, site = built
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    t0 = time.time()
    r = _build(project)
    took = time.time() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    assert "nothing else changed" in r.stdout, r.stdout
    after = {p: p.stat().st_mtime_ns for p in site.rglob("*") if p.is_file()}
    assert after == before, [str(p.relative_to(site)) for p in after if after[p] != before.get(p)][:10]
    assert not (project / "jupyter_execute").exists(), "MyST-NB wrote jupyter_execute/ beside the site"
    print(f"rebuild with nothing changed: {took:.1f} s")


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
WIDE_JS = """(maxLine) => {
  const out = [];
  document.querySelectorAll('article pre').forEach(p => {
    const longest = Math.max(...p.innerText.split('\\n').map(l => l.length));
    if (longest <= maxLine && p.scrollWidth > p.clientWidth + 1) out.push(['pre', longest, p.scrollWidth, p.clientWidth]);
  });
  document.querySelectorAll('a.cnb-api-anchor ~ section .table-wrapper, a.cnb-api-anchor + section .table-wrapper')
    .forEach(t => { if (t.scrollWidth > t.clientWidth + 1) out.push(['parameter table', t.scrollWidth, t.clientWidth]); });
  return out;
}"""
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
            # the home page: the navigation is the sidebar of the built files (tutorials first, then the guides,
            # then the library by stage; test_sidebar_starts_with_the_tutorials_and_groups_the_library)
            page.goto(f"{base}/index.html")
            nav = page.eval_on_selector_all(".sidebar-tree a.reference", "as => as.map(a => a.getAttribute('href'))")
            nav_pages = [h.split("#")[0].removesuffix(".html") for h in nav]
            expected = [h.removesuffix(".html") for _, entries in _nav(site) for _, h in entries]
            assert nav_pages == expected and sorted(nav_pages) == sorted(pages[1:]), (nav_pages, pages[1:])
            page.screenshot(path=str(ARTIFACTS / "docs_home.png"), full_page=False)
            # a nav link opens its page
            page.click(".sidebar-tree a.reference >> nth=3")
            page.wait_for_load_state("load")
            nb4 = NOTEBOOKS[pages.index(nav_pages[3])]
            assert page.url.endswith(f"/{nav_pages[3]}.html") and page.locator("h1").first.inner_text().strip(" ¶#") == _title(ROOT / "nbs" / nb4)

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
                # code of at most 100 characters a line, and parameter tables, fit the 736 px column
                wide = page.evaluate(WIDE_JS, MAX_CODE_LINE)
                assert not wide, f"{name}.html: blocks that scroll sideways although their content fits: {wide[:5]}"
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
