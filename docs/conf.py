"""Sphinx configuration of the documentation site (`make docs`; see docs/build.py, which writes the sources).

Sphinx + MyST-NB read the notebooks as nbdev processed them, without executing anything: what the site shows is
what the notebooks saved (`make notebooks`). Everything a page loads is served from the site itself — plotly.js
from the plotly package, MathJax from jupyter-server-mathjax — so the site builds and reads offline.
"""
import configparser
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
_cfg = configparser.ConfigParser(interpolation=None)
_cfg.read(HERE.parent / "settings.ini")
_s = _cfg["DEFAULT"]

project = _s.get("title", "contrastive_nb")
author = _s.get("author", "")
copyright = _s.get("copyright", "")
release = version = _s.get("version", "")

extensions = ["myst_nb", "sphinx.ext.githubpages"]   # githubpages: .nojekyll, so _static/ is served
root_doc = "index"
exclude_patterns = ["**/.ipynb_checkpoints", "_build"]
suppress_warnings = [
    "myst.header",            # show_doc headings are H3 under the page's H1, as nbdev writes them
    "mystnb.unknown_mime_type",
    "misc.highlighting_failure",
]

# MyST: the notebooks' Markdown is GitHub/Quarto flavoured
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "strikethrough"]
myst_all_links_external = True      # links are already relative paths of this site (docs/build.py rewrites them)
myst_update_mathjax = False
myst_heading_anchors = 3

# MyST-NB: render the saved outputs; never execute
nb_execution_mode = "off"
nb_merge_streams = True
nb_output_stderr = "show"
nb_render_markdown_format = "myst"  # Markdown outputs (show_table) with tables, as in JupyterLab

# HTML
html_theme = "furo"
html_title = project
html_static_path = ["_static"]
html_css_files = ["cnb.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "navigation_with_keys": True,
}
html_baseurl = _s.get("doc_host", "") + _s.get("doc_baseurl", "") + "/"

# Math: MathJax 2 shipped by jupyter-server-mathjax, copied into _static/mathjax by `_copy_assets` below
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]},
                   "HTML-CSS": {"availableFonts": ["STIX-Web"], "preferredFont": "STIX-Web", "webFont": "STIX-Web", "imageFont": None}, "showMathMenu": False}


def _plotly_js() -> Path:
    import plotly
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _mathjax_dir() -> Path:
    import jupyter_server_mathjax
    return Path(jupyter_server_mathjax.__file__).parent / "static"


def _copy_assets(app, exception):
    "plotly.js and MathJax into the site's _static (once; they do not change between builds of one install)."
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    js = static / "plotly.min.js"
    if not js.exists() or js.stat().st_size != _plotly_js().stat().st_size:
        shutil.copyfile(_plotly_js(), js)
    if not (static / "mathjax" / "MathJax.js").exists():
        shutil.copytree(_mathjax_dir(), static / "mathjax", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("localization", "*.md"))


def _page_assets(app, pagename, templatename, context, doctree):
    "plotly.js only on the pages that show a plotly figure (docs/build.py marks them with `cnb-plotly`)."
    if "cnb-plotly" in context.get("body", ""):
        app.add_js_file("plotly.min.js")
        app.add_js_file("cnb-plotly.js")


def _output_folder(app):
    """MyST-NB writes the images of outputs into `<site>/../jupyter_execute`, the project root when the site is
    `_docs/`; into the build folder beside the doctrees instead (`_build/docs/jupyter_execute`), after MyST-NB has
    made its configuration (a later priority on the same event)."""
    cfg = getattr(app.env, "mystnb_config", None)
    if cfg is not None:
        app.env.mystnb_config = cfg.copy(output_folder=str(Path(app.doctreedir).parent / "jupyter_execute"))


def setup(app):
    app.connect("builder-inited", _output_folder, priority=900)
    app.connect("html-page-context", _page_assets)
    app.connect("build-finished", _copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
