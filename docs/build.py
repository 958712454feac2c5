"""Build the documentation site from the notebooks, offline: `python docs/build.py` (what `make docs` runs).

1. nbdev processes the notebooks (`nbdev.serve.proc_nbs`, the step `nbdev_docs` runs before Quarto): directives,
   front matter, and a `show_doc` section with signature and parameter table for every exported name. Its output,
   `_proc/`, is cached by file time, so a second build reprocesses only the notebooks that changed.
2. Where Quarto is installed (and `--builder` is `auto` or `quarto`), `nbdev_docs` renders them, as nbdev projects do.
3. Otherwise Sphinx with MyST-NB renders them (`docs/conf.py`, theme Furo). This script first rewrites each processed
   notebook into what MyST-NB reads: the front matter back into a `# title` / `> summary` cell; each `show_doc`
   output (Quarto "asis" Markdown) into a Markdown cell with an anchor `api-<name>` and, when the parameters carry
   docments, a parameter table (nbdev 2.4 writes docments as comments in the signature); nbdev's absolute doc links
   into relative ones (plain names where the target has no API entry); Quarto-only attributes dropped; `#| echo:
   false` into MyST-NB's `remove-input` tag; plotly figures into a self-drawing `div` (plotly.js is served from the
   site itself); widget views (which need a kernel) dropped. `show_doc` prints every entry as `def Name(`, so a
   class gets `class Name(` back, and an entry without a docstring loses the text Python lends it ("Call self as a
   function."). The notebooks in `EXECUTE_ON_BUILD` (the architecture page, which reads the library's source) are
   executed again whenever the library or the tests change, so what they say is the code as it is. Every cell gets
   an id derived from its page and position, so that an unchanged notebook gives the same source file and Sphinx
   skips it; a page whose processed notebook and context (pages, API, library, tests) are unchanged is not
   rewritten at all (keys in `_build/docs/page-keys/`).
4. The sidebar: the tutorials, then the guides (the architecture page), then the library notebooks grouped by the
   number they start with (`SECTIONS`: the numbering rule of the architecture page), each under a readable title
   (`TITLES`, else the start of its notebook's summary).

Build outputs stay in `_build/docs/` (Sphinx's environment, the sources it reads, MyST-NB's `jupyter_execute/`),
`_proc/` and `_docs/`, all ignored by git. A rebuild with nothing changed reprocesses no notebook (nbdev's cache by
file time), rewrites no source and lets Sphinx read and write nothing but its indices.

The site lands in `_docs/` (open `_docs/index.html`). Nothing is fetched from the network, when building or reading.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import inspect
import html
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebooks import directives, settings, strip_directives  # noqa: E402  (docs/notebooks.py)

ROOT = Path(__file__).resolve().parents[1]
DOCS = Path(__file__).resolve().parent
# nbdev/Quarto files in nbs/ that are not pages
QUARTO_FILES = {"_quarto.yml", "nbdev.yml", "sidebar.yml", "styles.css", "_brand.yml"}
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_QUARTO_ATTRS = re.compile(r"(\]\([^)\s]*\))\{[^}\n]*\}")          # [text](url){target="_blank" ...}
_LINK_TARGET = re.compile(r"(\]\()([^)\s]+)(\))")                     # ](target)


def nbdev_process(root: Path) -> Path:
    """Run nbdev's doc processing (`nbdev.serve.proc_nbs`) for the project at `root`; returns `root/_proc`.

    Not `nbdev_proc_nbs`: without Quarto that command installs Quarto and `pip install -e`s the folder. In one
    process (`n_workers=0`): each worker process would import the library and torch again, which costs more CPU
    than it saves on two cores (measured: 21 s of CPU in one process, 32 s with two workers)."""
    code = "from nbdev.serve import proc_nbs; proc_nbs(n_workers=0)"
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nbdev's notebook processing failed in {root}:\n{r.stderr[-4000:]}")
    return root / "_proc"


# ---------------------------------------------------------------- notebook order and page names

def notebook_order(nbs: Path) -> list[Path]:
    """The notebooks to publish, as paths relative to `nbs`: `index`, the library notebooks in number order (the
    numbering rule of the architecture page), then `tutorials/` by name. Folders starting with `_` or `.` and
    `results/` are skipped."""
    lib = sorted(p.relative_to(nbs) for p in nbs.glob("*.ipynb") if not p.name.startswith(("_", ".")))
    tut = sorted(p.relative_to(nbs) for p in nbs.glob("tutorials/*.ipynb") if not p.name.startswith(("_", ".")))
    idx = [p for p in lib if p.name == "index.ipynb"]
    return idx + [p for p in lib if p.name != "index.ipynb"] + tut



# The sidebar's groups of library notebooks: a notebook belongs to the last group whose first number is not above its
# own (`04a_compute` → "Engine & compute"; a new `32_...` → "Exploration & audit"). The numbering rule (imports only
# go down the numbers) is explained on the architecture page.
SECTIONS = [
    ("00", "Data & views"),
    ("03", "Losses & models"),
    ("04a", "Engine & compute"),
    ("07", "Evaluation & protocol"),
    ("10", "Strata"),
    ("19", "Text: CLESS, CSS-LM"),   # 19_text_data, 19a_text_corpora: the rooms `text` (20) re-exports
    ("30", "Exploration & audit"),
    ("35", "Runs & reports"),
]
# Readable sidebar titles of the library pages (the page keeps its notebook's `# title`, the module's name). A page
# not listed here gets the start of its notebook's summary.
TITLES = {
    "core": "Core helpers", "image_datasets": "Image datasets: digits, torchvision, folders, CSV",
    "dataset_checks": "Dataset fingerprints and checks", "label_scarcity": "Label scarcity and split manifests",
    "samplers": "Batch samplers", "data": "The data rooms in one import", "augment": "Two-view augmentation",
    "image_tasks": "Image data sets: bundled, a folder, a CSV", "text_tasks": "Your own texts as a task",
    "losses": "Contrastive losses", "reference": "Reference losses (float64)", "models": "Encoders and heads",
    "compute": "FLOP ledger and compute", "loss_terms": "Loss terms and their registry",
    "optim": "Optimisers and the schedule", "hooks": "One update and its hooks", "loaders": "Loaders and input checks",
    "train": "The training engine", "evaluate": "Embedding table and metrics",
    "protocol": "The experiment protocol", "tuning": "Equal tuning budgets (Optuna)", "strata": "Strata, group robustness, coresets",
    "text_data": "Words and (text, tags) data", "text_corpora": "Text corpora and leak-free splits",
    "text": "Word vectors and language models", "cless": "CLESS", "csslm": "CSS-LM",
    "explore": "Exploring embeddings", "audit": "Bias audit", "runs": "Runs, sweeps and the command",
    "report": "Results tables and figures",
}
TUTORIALS_CAPTION, GUIDES_CAPTION = "Tutorials", "How it fits together"
# Notebooks executed again when their page is rewritten (in memory; the source is not changed): they read the
# library's code and the tests
EXECUTE_ON_BUILD = {"architecture.ipynb"}


def _number(stem: str) -> tuple | None:
    m = re.match(r"^(\d+)([a-z]?)_", stem + "_")
    return (int(m.group(1)), m.group(2)) if m else None


def section_of(rel_nb: Path) -> str:
    """The sidebar group of a notebook: `Tutorials`, the guides (top-level notebooks without a number), or the
    library group its number falls in (`SECTIONS`)."""
    if rel_nb.parent == Path("tutorials"):
        return TUTORIALS_CAPTION
    num = _number(rel_nb.stem)
    if num is None:
        return GUIDES_CAPTION
    caption = SECTIONS[0][1]
    for start, cap in SECTIONS:
        if _number(start) <= num:
            caption = cap
    return caption


def _summary_title(summary: str, limit: int = 40) -> str:
    "A short title from a notebook summary: up to its first colon, cut at a word before `limit` characters."
    head = re.split(r"[:;(]", summary, maxsplit=1)[0].strip().rstrip(",.")
    if len(head) > limit:
        head = head[:limit].rsplit(" ", 1)[0].rstrip(",") + "…"
    return head[:1].upper() + head[1:]


def nav_title(page: str, title: str, summary: str = "") -> str:
    """The sidebar title of a page: `TITLES`, else the notebook's title unless it is just the page's name (`# core`),
    else the start of its summary."""
    name = Path(page).name
    if name in TITLES:
        return TITLES[name]
    if title and title.strip() != name:
        return title
    return _summary_title(summary) if summary else title or name


def site_nav(order: list[Path], pages: dict[str, str], fronts: dict[str, dict] | None = None) -> list:
    """The sidebar: `[(caption, [(title, page), …]), …]`: the tutorials, the guides, then the library groups in
    number order (empty groups left out). `fronts`: each notebook's front matter (title, description)."""
    fronts = fronts or {}
    captions = [TUTORIALS_CAPTION, GUIDES_CAPTION] + [c for _, c in SECTIONS]
    groups: dict[str, list] = {c: [] for c in captions}
    for p in order:
        if p.name == "index.ipynb" and p.parent == Path("."):
            continue
        fm = fronts.get(str(p), {})
        page = pages[str(p)]
        groups[section_of(p)].append((nav_title(page, fm.get("title", ""), fm.get("description", "")), page))
    return [(c, groups[c]) for c in captions if groups[c]]

def page_of(rel_nb: Path, front: dict | None = None) -> str:
    """The page (docname, no suffix) of a notebook: nbdev's `output-file` (`03_losses` → `losses`), in the
    notebook's folder."""
    if front and front.get("output-file"):
        stem = Path(front["output-file"]).stem
    else:
        stem = re.sub(r"^\d+[a-z]?_", "", rel_nb.stem)
    return str(rel_nb.parent / stem) if str(rel_nb.parent) != "." else stem


# ---------------------------------------------------------------- rewriting one processed notebook

def _front_matter(nb) -> dict:
    for c in nb.cells[:2]:
        if c.cell_type == "raw" and c.source.lstrip().startswith("---"):
            return yaml.safe_load(c.source.strip().strip("-")) or {}
    return {}


class PageContext:
    "What rewriting needs to know about the whole site: nbdev's doc URL and every notebook's page."
    def __init__(self, doc_url: str, pages: dict[str, str], anchors: dict[str, set] | None = None,
                 api: dict[str, str] | None = None):
        self.doc_url = doc_url.rstrip("/") + "/"       # https://host/baseurl/
        self.pages = pages                             # 'tutorials/suncet_digits.ipynb' (from nbs/) -> page
        self.by_output = {Path(p).name + ".html": p for p in pages.values()}   # 'losses.html' -> 'losses'
        self.anchors = anchors or {}                   # page -> the API anchors show_doc gives it
        self.api = api or {}                           # 'models.html#vit_small' -> 'contrastive_nb.models.vit_small'


def _relative(target_page: str, from_page: str) -> str:
    return posixpath.relpath(target_page + ".html", posixpath.dirname(from_page) or ".")


def rewrite_markdown(text: str, page: str, ctx: PageContext, is_index: bool = False) -> str:
    """Markdown as nbdev/Quarto wrote it → Markdown MyST renders the same way, with links that work in this site."""
    text = _QUARTO_ATTRS.sub(r"\1", text)
    text = _DOC_LINK.sub(lambda m: _doc_link(m, page, ctx), text)

    def link(m):                                               # relative links: notebooks → their pages
        target = m.group(2)
        if "://" in target or target.startswith(("#", "mailto:")):
            return m.group(0)
        path, _, anchor = target.partition("#")
        if is_index and path.startswith("nbs/"):                   # index.ipynb is written for README.md at the root
            path = path[len("nbs/"):]
        if path.endswith(".ipynb"):
            key = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
            if key in ctx.pages:
                path = _relative(ctx.pages[key], page)
        return m.group(1) + path + (f"#{anchor}" if anchor else "") + m.group(3)

    return _LINK_TARGET.sub(link, text)


def _doc_link(m, page: str, ctx: PageContext) -> str:
    """nbdev's link to an API entry, `[`name`](https://host/base/losses.html#name)` → a relative link; plain `name`
    when the entry does not exist (nbdev links private names, which get no `show_doc` section)."""
    text, target = m.group(1), m.group(2)
    if not target.startswith(ctx.doc_url):
        return m.group(0)
    name, _, anchor = target[len(ctx.doc_url):].partition("#")
    dest = ctx.by_output.get(Path(name).name)
    if dest is None or (anchor and anchor not in ctx.anchors.get(dest, set())):
        return text
    return f"[{text}]({_relative(dest, page)}{'#api-' + anchor if anchor else ''})"


_DOC_LINK = re.compile(r"\[([^\]\n]*)\]\((https?://[^)\s]+)\)")


def show_doc_anchor(md: str) -> str | None:
    "The anchor nbdev gives a `show_doc` section: its name, lower-cased."
    m = _SHOW_DOC_HEAD.search(md)
    return m.group(2).strip().strip("`").lower() if m else None


_SHOW_DOC_HEAD = re.compile(r"^(#{2,6})\s+(\S[^\n]*?)\s*$", re.M)


_SOURCE_LINK = re.compile(r"^\[source\]\(([^)\s]+)\)(\{[^}\n]*\})?\s*$", re.M)


def show_doc_markdown(md: str, page: str, ctx: PageContext) -> str:
    """A `show_doc` output → Markdown for the page: an anchor `api-<name>` (nbdev's anchor, the lower-cased name,
    behind a prefix that no heading id has) before the heading, the source link after it, the leading rule dropped;
    a class shown as a class; the parameter table."""
    md = md.strip()
    if md.startswith("---"):
        md = md[3:].lstrip()
    src = _SOURCE_LINK.search(md)
    if src:
        md = (md[:src.start()] + md[src.end():]).lstrip()
    name = show_doc_anchor(md)
    full = ctx.api.get(f"{Path(page).name}.html#{name}") if name else None
    obj = _symbol_or_none(full)
    md = _as_class(md, obj) if inspect.isclass(obj) else md
    if obj is not None and not inspect.isclass(obj) and getattr(obj, "__doc__", None) is None:
        md = md.replace("\n\n*Call self as a function.*", "")   # fastcore's fallback to `__call__`'s docstring
    table = param_table(full)
    if table:                                   # the comments in the signature become the table's Details column
        sig = signature_block(obj)
        md = _SIGNATURE.sub(lambda b: sig or _SIG_COMMENT.sub("", b.group(0)), md, count=1).rstrip() + "\n\n" + table
    m = _SHOW_DOC_HEAD.search(md)
    if m:
        anchor = html.escape("api-" + name, quote=True)
        after = f'\n\n<a class="cnb-api-source" href="{html.escape(src.group(1), quote=True)}">source</a>\n' if src else "\n"
        md = (md[:m.start()] + f'<a id="{anchor}" class="cnb-api-anchor"></a>\n\n' + m.group(0) + after
              + md[m.end():])
    return rewrite_markdown(md, page, ctx)


MAX_LINE = 100      # characters in a line of code on a page (the CSS fits 100 in the column)


def signature_block(obj) -> str | None:
    """The signature of an API entry as a code block, without the docments comments (the table shows them): on one
    line when it fits in `MAX_LINE` characters, else one parameter a line (fastcore packs parameters without a
    comment into lines of up to 110). `class Name(…)` for a class; None when there is no signature to show."""
    from fastcore.docments import DocmentText
    try:
        dt = DocmentText(obj, maxline=MAX_LINE, docstring=False)
        params = [fmt for fmt, _doc in dt.params]
        ret = dt._ret_str.split(" #", 1)[0]               # `):` or `)->type:`, its comment dropped
        ret = "):" if inspect.isclass(obj) else ret      # a constructor's `->None` says nothing
    except Exception:
        return None
    head = ("class " if inspect.isclass(obj) else "async def " if inspect.iscoroutinefunction(obj) else "def ") \
        + obj.__name__
    one = f"{head}({', '.join(params)}{ret}"
    if len(one) <= MAX_LINE:
        return f"```python\n{one}\n```"
    return "```python\n" + head + "(\n" + "".join(_param_lines(p) for p in params) + ret + "\n```"


def _param_lines(p: str) -> str:
    "One parameter of a wrapped signature, itself broken after its commas when it is longer than a line."
    lines, line = [], "    "
    for i, piece in enumerate(re.split(r"(?<=, )", p)):
        if len(line) + len(piece) > MAX_LINE - 1 and line.strip():
            lines.append(line.rstrip())
            line = "        "
        line += piece
    return "\n".join(lines + [line]) + ",\n"


def _symbol_or_none(full: str | None):
    if not full:
        return None
    try:
        return _symbol(full)
    except Exception:
        return None


def _signature_parameters(f) -> dict:
    "`inspect.signature(f).parameters`, or nothing where there is no signature."
    try:
        return dict(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return {}


def _builtin_init(cls) -> bool:
    "True when a class takes its constructor from Python itself (`object`, `Exception`, …): it has no parameters."
    if dataclasses.is_dataclass(cls):
        return False
    owner = next((k for k in cls.__mro__ if "__init__" in vars(k)), object)
    # Python's own, or torch's `nn.Module.__init__(*args, **kwargs)` inherited by a module that adds none
    return owner.__module__ == "builtins" or (owner.__module__, owner.__qualname__) == ("torch.nn.modules.module", "Module")


def _star_comment(f, name: str) -> str | None:
    """The comment of a `*name` / `**name` parameter, which fastcore's `docments` leaves out: the comment on its
    line of the signature, or a comment alone on the line above it."""
    try:
        lines = inspect.getsource(f).splitlines()
    except (OSError, TypeError):
        return None
    for i, line in enumerate(lines):
        m = re.match(rf"\s*\*{{1,2}}{re.escape(name)}\b[^#]*?(?:#\s*(.*))?$", line)
        if m:
            above = lines[i - 1].strip() if i else ""
            return (m.group(1) or "").strip() or (above[1:].strip() if above.startswith("#") else None)
    return None


def _bases(cls) -> str:
    return ", ".join(b.__name__ if b.__module__ == "builtins" else f"{b.__module__}.{b.__qualname__}"
                     for b in cls.__bases__ if b is not object)


def _as_class(md: str, cls) -> str:
    """fastcore's signature of a class reads `def Name(…)`: `class Name(…)` instead; a class that takes Python's own
    constructor (an exception, a hook base) shows its bases, `class NonFiniteInputError(ValueError)`, and any other
    class with bases says them under its signature, as Sphinx's autodoc does."""
    fence = _SIGNATURE.search(md)
    if not fence:
        return md
    sig = fence.group(0)
    bases = _bases(cls)
    if _builtin_init(cls):
        new = f"```python\nclass {cls.__name__}" + (f"({bases})" if bases else "") + "\n```"
    else:
        new = re.sub(r"^(```python\n)(async )?def ", r"\1class ", sig, count=1)
        if bases:
            new += f"\n\nBases: `{bases}`"
    return md[:fence.start()] + new + md[fence.end():]


_SIGNATURE = re.compile(r"```python\n.*?```", re.S)
_SIG_COMMENT = re.compile(r"[ \t]*#[^\n]*(?=\n)")


def api_index(lib: Path) -> dict[str, str]:
    "nbdev's symbol index (`_modidx.py`): doc link (`'models.html#vit_small'`) → full name of the symbol."
    ns: dict = {}
    exec((lib / "_modidx.py").read_text(encoding="utf-8"), ns)
    return {url: full for syms in ns["d"]["syms"].values() for full, (url, _src) in syms.items()}


def _symbol(full: str):
    import importlib
    parts = full.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(full)


def _esc(text: str) -> str:
    "Text for a Markdown table cell: one line (a comment continued on the next lines is one docment), `|` escaped."
    return " ".join(text.split("\n")).replace("|", "\\|")


def _cell(v) -> str:
    return _esc(f"`{v}`") if v != "" else ""


def api_parameters(obj) -> tuple[dict, dict | None]:
    """The parameters an API entry documents, as fastcore's `docments(obj, full=True)` gives them (`anno`, `default`,
    `docment`), and its return value: a function's own, a class's constructor's (a dataclass's fields); none for a
    class that takes Python's own constructor. `self` left out."""
    from fastcore.docments import docments
    if inspect.isclass(obj) and _builtin_init(obj):
        return {}, None
    dm = dict(docments(obj, full=True))
    dm.pop("self", None)
    f = obj.__init__ if inspect.isclass(obj) else obj
    for name, p in _signature_parameters(f).items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name in dm and not dm[name].get("docment"):
            dm[name] = {**dm[name], "docment": _star_comment(f, name)}
    ret = dm.pop("return", None)
    return dm, (None if inspect.isclass(obj) else ret)


def param_table(full: str | None) -> str | None:
    """The parameter table of an API entry (as nbdev's Quarto pages had): parameter, type, default, details (its
    docments comment), and the return value; None when it has no parameter. Details left empty where a parameter
    has no comment (tests/test_docs.py names those)."""
    obj = _symbol_or_none(full)
    if obj is None or not callable(obj):
        return None
    try:
        dm, ret = api_parameters(obj)
    except Exception:                        # no signature to read: no table
        return None
    if not dm:
        return None

    def anno(v):
        a = v.get("anno", inspect.Parameter.empty)
        return "" if a is inspect.Parameter.empty else (a if isinstance(a, str) else inspect.formatannotation(a))

    def default(v):
        d = v.get("default", inspect.Parameter.empty)
        return "" if d is inspect.Parameter.empty else _default_text(d)

    rows = ["| parameter | type | default | details |", "|---|---|---|---|"]
    for name, v in dm.items():
        rows.append(f"| `{name}` | {_cell(anno(v))} | {_cell(default(v))} | {_esc(v.get('docment') or '')} |")
    if ret and (ret.get("docment") or anno(ret)):
        rows.append(f"| **returns** | {_cell(anno(ret))} | | {_esc(ret.get('docment') or '')} |")
    return "\n".join(rows)


def _default_text(d) -> str:
    "A default value as the table shows it: a function or class by its name (a repr would show a memory address)."
    if inspect.isfunction(d) or inspect.isclass(d) or inspect.isbuiltin(d):
        return d.__name__
    return re.sub(r" at 0x[0-9a-f]+", "", repr(d))


def plotly_html(spec: dict, key: str) -> str:
    "A saved plotly figure as a `div` that `_static/cnb-plotly.js` draws with the site's own plotly.js."
    payload = json.dumps({"data": spec.get("data", []), "layout": spec.get("layout", {}),
                          "config": spec.get("config", {})}, separators=(",", ":"))
    payload = payload.replace("</", "<\\/")                       # cannot close the script element early
    return (f'<div class="cnb-plotly" id="cnb-plotly-{key}"><div class="cnb-plotly-target"></div>'
            f'<script type="application/json" class="cnb-plotly-spec">{payload}</script></div>')


def rewrite_outputs(outputs: list, key: str) -> list:
    out = []
    for i, o in enumerate(outputs):
        data = o.get("data")
        if data is None:
            out.append(o); continue
        if PLOTLY_MIME in data:
            spec = data[PLOTLY_MIME]
            spec = json.loads(spec) if isinstance(spec, str) else spec
            o = copy.deepcopy(o)
            o["data"] = {"text/html": plotly_html(spec, f"{key}-{i}")}
            o.setdefault("metadata", {})
            out.append(o); continue
        if WIDGET_MIME in data:           # a live widget needs a kernel; its static image is a separate output
            continue
        out.append(o)
    return out


def rewrite_notebook(nb, rel_nb: Path, ctx: PageContext):
    "One processed notebook → the notebook MyST-NB renders (a new object; `nb` is not changed)."
    nb = copy.deepcopy(nb)
    front = _front_matter(nb)
    page = ctx.pages[str(rel_nb)]
    is_index = rel_nb.name == "index.ipynb"
    cells = []
    title = front.get("title") or page
    head = f"# {title}\n"
    if front.get("description"):
        head += f"\n> {front['description']}\n"
    cells.append(nbformat.v4.new_markdown_cell(head))
    for n, c in enumerate(nb.cells):
        if c.cell_type == "raw" and c.source.lstrip().startswith("---") and n < 2:
            continue
        if c.cell_type == "markdown":
            if c.source.strip().startswith("<!-- WARNING: THIS FILE WAS AUTOGENERATED"):
                continue
            c.source = rewrite_markdown(c.source, page, ctx, is_index)
            c.pop("attachments", None) if not c.get("attachments") else None
            cells.append(c); continue
        if c.cell_type != "code":
            cells.append(c); continue
        opts, code = directives(c.source), strip_directives(c.source)
        tags = list(c.metadata.get("tags", []))
        if str(opts.get("include", "")).lower() == "false":
            continue
        if str(opts.get("output", "")).lower() == "asis":     # show_doc: its Markdown output is part of the page
            for o in c.get("outputs", []):
                md = o.get("data", {}).get("text/markdown")
                if md:
                    cells.append(nbformat.v4.new_markdown_cell(show_doc_markdown(md, page, ctx)))
            continue
        if str(opts.get("echo", "")).lower() == "false" and "remove-input" not in tags:
            tags.append("remove-input")
        if str(opts.get("output", "")).lower() == "false" and "remove-output" not in tags:
            tags.append("remove-output")
        c.source = code
        c.metadata = {"tags": tags} if tags else {}
        c.outputs = rewrite_outputs(c.get("outputs", []), f"{hashlib.sha1(page.encode()).hexdigest()[:6]}-{n}")
        cells.append(c)
    nb.cells = cells
    nb.metadata.pop("widgets", None)                 # saved widget state would pull in a widget manager from a CDN
    nb.metadata.pop("papermill", None)
    return nb


def _write_if_changed(path: Path, text: str | bytes):
    "Write only when the content differs, so Sphinx rebuilds only the pages that changed."
    data = text.encode() if isinstance(text, str) else text
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def execute_notebook(nb, cwd: Path):
    """`nb` executed top to bottom in a fresh in-process IPython shell (execnb's, as `nbdev_test` runs notebooks) in
    folder `cwd`; returns the executed copy. An error stops the build, naming the notebook's cell."""
    from execnb.shell import CaptureShell
    nb = copy.deepcopy(nb)
    here = os.getcwd()
    try:
        shell = CaptureShell(path=cwd)
        for c in nb.cells:
            if c.cell_type != "code":
                continue
            c.outputs = [nbformat.from_dict(dict(o)) for o in (shell.run(c.source) or [])]
            errs = [o for o in c.outputs if o.get("output_type") == "error"]
            if errs:
                raise RuntimeError(f"executing a notebook for the docs failed in the cell\n{c.source}\n"
                                   f"{errs[0].get('ename')}: {errs[0].get('evalue')}")
    finally:
        os.chdir(here)
    return nb


def toctree_cell(entries: list[tuple[str, str]], caption: str) -> str:
    "A hidden toctree (one sidebar group) of `(title, page)` entries."
    body = "\n".join(f"{_toctree_title(t)} <{p}>" for t, p in entries)
    return f"```{{toctree}}\n:hidden:\n:caption: {caption}\n:maxdepth: 1\n\n{body}\n```\n"


def _toctree_title(title: str) -> str:
    "A title for a toctree entry: `<` would start the target, and a title is one line."
    return " ".join(title.replace("`", "").replace("<", "‹").replace(">", "›").split())


def sphinx_sources(proc: Path, nbs: Path, src: Path, doc_url: str, lib: Path | None = None) -> dict[str, str]:
    """Write the Sphinx source folder `src` from nbdev's `proc` (mirrors `nbs`); returns notebook → page."""
    order = notebook_order(nbs)
    missing = [str(p) for p in order if not (proc / p).exists()]
    if missing:
        raise RuntimeError(f"nbdev's processing produced no {missing} in {proc}")
    raw = {str(p): (proc / p).read_bytes() for p in order}
    nbs_read = {k: nbformat.reads(b.decode("utf-8"), as_version=4) for k, b in raw.items()}
    fronts = {k: _front_matter(nb) for k, nb in nbs_read.items()}
    pages = {k: page_of(Path(k), fronts[k]) for k in nbs_read}
    dup = {v for v in pages.values() if list(pages.values()).count(v) > 1}
    if dup:
        raise RuntimeError(f"two notebooks would publish to the same page: {sorted(dup)}")
    anchors = {pages[k]: {a for c in nb.cells if c.cell_type == "code" and "output: asis" in c.source
                          for o in c.get("outputs", []) if (a := show_doc_anchor(o.get("data", {}).get("text/markdown", "")))}
               for k, nb in nbs_read.items()}
    ctx = PageContext(doc_url, pages, anchors, api_index(lib) if lib and (lib / "_modidx.py").exists() else {})
    common = _context_digest(ctx, lib, nbs.parent, order, fronts)
    keys = src.parent / "page-keys"
    wanted = set()
    for k, nb in nbs_read.items():
        dest, stamp = src / (pages[k] + ".ipynb"), keys / (pages[k] + ".sha256")
        key = hashlib.sha256(common.encode() + raw[k]).hexdigest()
        wanted.add(dest)
        if dest.exists() and stamp.exists() and stamp.read_text() == key:
            continue                                  # rewritten from the same inputs last time: the same page
        if k in EXECUTE_ON_BUILD:
            nb = execute_notebook(nb, nbs / Path(k).parent)
        out = rewrite_notebook(nb, Path(k), ctx)
        if k == "index.ipynb":
            for caption, entries in site_nav(order, pages, fronts):
                out.cells.append(nbformat.v4.new_markdown_cell(toctree_cell(entries, caption)))
        for i, c in enumerate(out.cells):            # ids from the position: the same notebook, the same file
            c.id = f"cell-{i}"
        _write_if_changed(dest, nbformat.writes(out))
        _write_if_changed(stamp, key)
    # images and other files the pages refer to (nbdev copied them into _proc)
    for f in proc.rglob("*"):
        rel = f.relative_to(proc)
        if f.is_dir() or f.suffix == ".ipynb" or rel.name in QUARTO_FILES or rel.parts[0].startswith(("_", ".")):
            continue
        dest = src / rel
        _write_if_changed(dest, f.read_bytes())
        wanted.add(dest)
    for f in list(src.rglob("*")):                   # pages of notebooks that no longer exist
        if f.is_file() and f not in wanted:
            f.unlink()
    return pages


def _context_digest(ctx: PageContext, lib: Path | None, root: Path, order: list, fronts: dict) -> str:
    """What every page's rewriting depends on besides its own notebook: the site's pages, API anchors and symbols
    (links, parameter tables), the sidebar, the library's and the tests' source (parameter tables; the architecture
    page reads both) and this script. A page whose notebook and context are unchanged is not rewritten (nor is the
    library imported for it)."""
    h = hashlib.sha256(json.dumps([ctx.doc_url, ctx.pages, {k: sorted(v) for k, v in ctx.anchors.items()}, ctx.api,
                                   [str(p) for p in order], fronts], sort_keys=True, default=str).encode())
    files = [Path(__file__)] + ([p for p in sorted(lib.rglob("*.py"))] if lib else []) \
        + sorted((root / "tests").rglob("*.py")) + [root / "settings.ini"]
    for f in files:
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.name).encode() + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def build_sphinx(src: Path, out: Path, doctrees: Path, jobs: int = 2, quiet: bool = True) -> None:
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(DOCS), "-d", str(doctrees), "-j", str(jobs)]
    cmd += ["-q"] if quiet else []
    r = subprocess.run(cmd + [str(src), str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"Sphinx failed:\n{r.stderr[-6000:]}")
    if r.stderr.strip():
        print(r.stderr.strip(), file=sys.stderr)


def build(root: Path = ROOT, out: Path | None = None, builder: str = "auto", jobs: int = 2, quiet: bool = True) -> Path:
    """Build the site of the project at `root` into `out` (default `root/_docs`); returns `out`."""
    root = Path(root).resolve()
    cfg = settings(root)
    out = Path(out or root / cfg.get("doc_path", "_docs")).resolve()
    if builder not in ("auto", "quarto", "sphinx"):
        raise ValueError(f"`builder` must be 'auto', 'quarto' or 'sphinx'; got {builder!r}")
    if builder == "quarto" or (builder == "auto" and shutil.which("quarto")):
        return build_quarto(root, out, jobs)
    t0 = time.time()
    proc = nbdev_process(root)
    t1 = time.time()
    work = root / "_build" / "docs"
    src = work / "src"
    work.mkdir(parents=True, exist_ok=True)
    if str(root) not in sys.path:            # the API tables read the docments of this checkout's library
        sys.path.insert(0, str(root))
    lib = root / cfg.get("lib_path", "contrastive_nb")
    stamp, digest = work / "inputs.sha256", inputs_digest(root, proc, lib, out)
    if (out / "index.html").exists() and stamp.exists() and stamp.read_text() == digest:
        if not quiet:
            print(f"nbdev processing {t1 - t0:.1f} s; nothing else changed since the last build (delete "
                  f"{stamp.relative_to(root)} to render again)")
        return out
    stamp.unlink(missing_ok=True)
    sphinx_sources(proc, root / cfg.get("nbs_path", "nbs"), src,
                   cfg.get("doc_host", "") + cfg.get("doc_baseurl", ""), lib)
    t2 = time.time()
    build_sphinx(src, out, work / "doctrees", jobs, quiet)
    stamp.write_text(digest)
    if not quiet:
        print(f"nbdev processing {t1 - t0:.1f} s, sources {t2 - t1:.1f} s, Sphinx {time.time() - t2:.1f} s")
    return out


def inputs_digest(root: Path, proc: Path, lib: Path, out: Path) -> str:
    """SHA-256 of everything a build renders from: nbdev's processed notebooks and their files, the library (API
    tables), the tests and settings (the architecture page reads them), this script, the Sphinx configuration and its
    static files, the versions of Sphinx, MyST-NB and Furo, and the output folder. Equal digests: the same site."""
    import importlib.metadata as md
    h = hashlib.sha256()
    files = [p for base in (proc, lib, root / "tests", DOCS) if base.is_dir() for p in base.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
             and not (base == root / "tests" and "artifacts" in p.relative_to(base).parts)]
    files += [root / "settings.ini"]
    for f in sorted(files):
        h.update(str(f.relative_to(root) if f.is_relative_to(root) else f).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest() if f.exists() else b"-")
    for dist in ("sphinx", "myst-nb", "furo", "nbdev", "fastcore"):
        try:
            h.update(f"{dist}=={md.version(dist)}".encode())
        except md.PackageNotFoundError:
            h.update(dist.encode())
    h.update(str(out).encode())
    return h.hexdigest()


def build_quarto(root: Path, out: Path, jobs: int) -> Path:
    """`nbdev_docs` (Quarto). It also re-renders README.md with Quarto; README.md belongs to `make readme`
    (nbconvert), so it is put back as it was."""
    if not shutil.which("quarto"):
        raise RuntimeError("`--builder quarto` needs Quarto on PATH (https://quarto.org); `--builder sphinx` needs nothing")
    readme = root / "README.md"
    before = readme.read_bytes() if readme.exists() else None
    nbdev_docs = shutil.which("nbdev_docs", path=str(Path(sys.executable).parent)) or "nbdev_docs"
    try:
        subprocess.run([nbdev_docs, "--n_workers", str(jobs)], cwd=root, check=True)
    finally:
        if before is not None and readme.read_bytes() != before:
            readme.write_bytes(before)
    built = root / settings(root).get("doc_path", "_docs")
    if built.resolve() != out:
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(built, out)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(ROOT), help="the project folder (settings.ini, nbs/)")
    ap.add_argument("--out", default=None, help="where the site goes (default: doc_path of settings.ini, _docs/)")
    ap.add_argument("--builder", default=os.environ.get("DOCS_BUILDER", "auto"), choices=["auto", "quarto", "sphinx"],
                    help="auto: nbdev_docs where Quarto is installed, else Sphinx + MyST-NB")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    try:
        out = build(Path(a.root), Path(a.out) if a.out else None, a.builder, a.jobs, quiet=not a.verbose)
    except (RuntimeError, ValueError, subprocess.CalledProcessError) as e:
        print(f"docs: {e}", file=sys.stderr)
        return 1
    print(f"docs: the site is in {out} (open {out / 'index.html'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
