"""`make notebooks` publishes a tutorial's results with its executed notebook, or neither: a notebook edited while
it ran keeps its edits and the old results, and a process killed anywhere in the publish leaves something the next
run finishes (a journal), never a missing results folder or leftovers that stay."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from scenario import env

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("nbtool_publish", ROOT / "docs" / "notebooks.py")
nbtool = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(nbtool)


def _project(tmp_path):
    "A tutorial notebook with published results (old) and a finished run with new results."
    (tmp_path / "nbs" / "tutorials").mkdir(parents=True)
    nb = tmp_path / "nbs" / "tutorials" / "exp.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("old = 1")]), nb)
    dest = tmp_path / "nbs" / "results" / "exp"
    dest.mkdir(parents=True); (dest / "metrics.json").write_text('{"acc": "old"}')
    run = tmp_path / "run"; run.mkdir(); (run / "metrics.json").write_text('{"acc": "new"}')
    return nb, dest, run


def _state(nb, dest):
    code = nbformat.read(nb, as_version=4).cells[0].source
    acc = json.loads((dest / "metrics.json").read_text())["acc"] if (dest / "metrics.json").exists() else None
    hidden = sorted(p.name for p in list(dest.parent.iterdir()) + list(nb.parent.iterdir()) if p.name.startswith("."))
    return code, acc, hidden


KILL = """
import importlib.util, os, signal, sys
from pathlib import Path
import nbformat
spec = importlib.util.spec_from_file_location("nbtool", sys.argv[1]); nbtool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nbtool)
nb, dest, run, at = Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
real, calls = os.replace, [0]
def replace(a, b):
    calls[0] += 1
    if calls[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(a, b)
nbtool.os.replace = replace
staged, _ = nbtool.stage_results(run, dest, nb, Path(sys.argv[6]))
nbtool.publish(nb, nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("new = 1")]), staged, dest)
"""


@pytest.mark.parametrize("at", [1, 2, 3, 4, 5])
def test_killed_anywhere_in_a_publish_the_next_run_ends_with_both_old_or_both_new(tmp_path, at):
    "os.replace calls: 1 journal, 2 old results aside, 3 new results in, 4 notebook in; 5 never happens."
    nb, dest, run = _project(tmp_path)
    p = subprocess.run([sys.executable, "-c", KILL, str(ROOT / "docs" / "notebooks.py"), str(nb), str(dest), str(run),
                        str(at), str(tmp_path)], capture_output=True, text=True, timeout=120, env=env())
    assert p.returncode == (-9 if at < 5 else 0), p.stderr[-2000:]
    nbtool.recover(tmp_path)
    code, acc, hidden = _state(nb, dest)
    assert (code, acc) in [("old = 1", "old"), ("new = 1", "new")], (at, code, acc)
    assert (code, acc) == (("old = 1", "old") if at == 1 else ("new = 1", "new")), at    # after the journal: finished
    assert hidden == [], hidden


def test_a_notebook_edited_while_it_ran_keeps_its_edit_and_the_old_results(tmp_path, monkeypatch):
    nb, dest, run = _project(tmp_path)
    (run / "parameters.json").write_text('{"parameters": {}}')
    def execute(path, root):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("edited = 1")]), path)   # the edit
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("new = 1")]), run
    monkeypatch.setattr(nbtool, "execute_tutorial", execute)
    monkeypatch.setattr(nbtool, "_flags", lambda root: set())
    with pytest.raises(RuntimeError, match="was edited while it executed; neither it nor its results"):
        nbtool.run(nb, tmp_path)
    assert _state(nb, dest) == ("edited = 1", "old", [])
