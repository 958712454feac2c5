"""A newcomer's first hour: a committed tutorial carries no run's parameters, and running it from JupyterLab's
working directory (its own folder) writes nothing into the repository."""
import subprocess
from pathlib import Path

import nbformat
import pytest

from helpers import ROOT

TUTORIALS = sorted((ROOT / "nbs" / "tutorials").glob("*.ipynb"))


def _status() -> str:
    "Everything git sees in the tutorials' folder, where a notebook opened in JupyterLab runs (ignored files too)."
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored", "--", "nbs/tutorials"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_no_committed_tutorial_carries_a_runs_parameters(path):
    nb = nbformat.read(path, as_version=4)
    assert not [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])], \
        f"{path.name} carries papermill's injected-parameters cell: JupyterLab would run it with a run's out_dir"
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and "out_dir = None" in params[0].source


def test_running_a_tutorial_from_its_folder_leaves_the_repository_as_it_was():
    "The smoke tutorial's cells up to its first written file, executed where JupyterLab runs them (nbs/tutorials/)."
    from nbclient import NotebookClient
    nb = nbformat.read(ROOT / "nbs" / "tutorials" / "smoke_digits.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    upto = next(i for i, c in enumerate(code) if "split.json" in c.source)          # writes its first file
    cells = [nbformat.v4.new_code_cell(c.source) for c in code[:upto + 1]]
    cells.append(nbformat.v4.new_code_cell("print(out.resolve())"))
    before = _status()
    run = nbformat.v4.new_notebook(cells=cells)
    run.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(run, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "nbs" / "tutorials")}}).execute()
    out = run.cells[-1].outputs[0]["text"].strip()
    assert not Path(out).resolve().is_relative_to(ROOT.resolve()), f"the run folder {out} is inside the repository"
    assert _status() == before, "running the tutorial changed nbs/tutorials/:\n" + _status()
