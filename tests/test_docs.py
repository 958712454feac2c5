"""Every notebook goes through nbdev's doc processing and renders to HTML with nbconvert.

Quarto (which `nbdev_docs` drives to build the site) cannot be installed on these machines; this checks the
part before Quarto — nbdev's processors (directives, show_doc, exports) — and that the processed notebooks are
valid documents that render.
"""
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbconvert import HTMLExporter

from helpers import ROOT

NOTEBOOKS = sorted(p.relative_to(ROOT / "nbs") for p in (ROOT / "nbs").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and not p.name.startswith("_"))


@pytest.fixture(scope="module")
def processed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docs")
    for name in ["settings.ini", "setup.py", "README.md"]:
        shutil.copy(ROOT / name, tmp / name)
    shutil.copytree(ROOT / "nbs", tmp / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_proc", "_docs"))
    shutil.copytree(ROOT / "contrastive_nb", tmp / "contrastive_nb")
    # nbdev's processing step itself. Not the `nbdev_proc_nbs` command: when Quarto is missing, that one calls nbdev's
    # `install()`, which tries to install Quarto and then runs `pip install -e <project>[dev]` — here, from this
    # temporary copy, re-pointing the developer's editable install at a folder pytest later deletes.
    subprocess.run([sys.executable, "-c", "from nbdev.serve import proc_nbs; proc_nbs(n_workers=0)"], cwd=tmp,
                   check=True, capture_output=True)
    return tmp / "_proc"


def test_every_notebook_is_listed():
    assert {"index.ipynb", "03_losses.ipynb"} <= {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=str)
def test_notebook_processes_and_renders(processed, nb):
    out = processed / nb
    assert out.exists(), f"nbdev_proc_nbs produced no {nb}"
    node = nbformat.read(out, as_version=4)   # (nbdev adds Quarto-only keys such as has_sd: not strict nbformat)
    src = "\n".join(c.source for c in node.cells)
    assert "#| export" not in src and "#| hide" not in src, "nbdev directives must be processed away"
    html, _ = HTMLExporter().from_notebook_node(node)
    assert html.lstrip().lower().startswith("<!doctype html") and len(html) > 5000
    title = next(c.source for c in node.cells if c.cell_type == "markdown").splitlines()[0].lstrip("# ").strip()
    assert title and title in html
