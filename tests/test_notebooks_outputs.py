"""Every notebook is committed with the outputs its current code produced (`make notebooks`, docs/notebooks.py).

The first test reads the record `make notebooks` leaves on each executed code cell and fails, naming the cells,
when a notebook was never executed, when a cell's code (or the code above it) changed after it ran, or when its
outputs were cleared or edited. The others run the mechanism for real on small notebooks in a scratch project:
a library notebook (nbclient, test-flagged cells skipped) and a tutorial (papermill via `contrastive-nb run`'s
`run_notebook`, results copied to nbs/results/), then break them in each of those ways.
"""
import json
import shutil
import sys

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from helpers import ROOT

sys.path.insert(0, str(ROOT / "docs"))
import notebooks as nbtool  # noqa: E402  (docs/notebooks.py)

NOTEBOOKS = nbtool.all_notebooks(ROOT)


def _rel(p):
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=_rel)
def test_saved_outputs_are_current(nb):
    problems = nbtool.check(nb, ROOT)
    assert not problems, (f"{_rel(nb)}: saved outputs are missing or stale; run `make notebooks NB={_rel(nb)}`:\n  "
                          + "\n  ".join(problems))


# ---------------------------------------------------------------- the mechanism, on a scratch project

def _notebook(*cells):
    nb = new_notebook(cells=[new_markdown_cell("# toy\n\n> A toy notebook.")] + list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
    return nb


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    "A scratch project (settings.ini of this one) with one library notebook and one tutorial, both executed."
    root = tmp_path_factory.mktemp("proj")
    shutil.copy(ROOT / "settings.ini", root / "settings.ini")
    (root / "nbs" / "tutorials").mkdir(parents=True)
    lib = root / "nbs" / "toy.ipynb"
    nbformat.write(_notebook(new_code_cell("x = 2\nprint(x * 21)"),
                             new_code_cell("#| slow\nprint('a slow cell')"),
                             new_code_cell("import os\nos.environ.get('CONTRASTIVE_NB_HEADLESS'), x + 1")), lib)
    tut = root / "nbs" / "tutorials" / "toy_tutorial.ipynb"
    params = new_code_cell("n = 3\nout_dir = None              # run folder; None: a temporary folder")
    params.metadata["tags"] = ["parameters"]
    nbformat.write(_notebook(params, new_code_cell(
        "import json, pathlib\nimport pandas as pd\nout = pathlib.Path(out_dir)\n"
        "(out / 'metrics.json').write_text(json.dumps({'acc': 0.5, 'n': n}))\n"
        "pd.DataFrame({'seed': range(n), 'acc': [0.5] * n}).to_parquet(out / 'results.parquet')\n"
        "pd.DataFrame({'id': [0], 'embedding': [[0.0]]}).to_parquet(out / 'embeddings_model.parquet')\n"
        "(out / 'model.pt').write_bytes(b'weights')\nprint('wrote', sorted(p.name for p in out.iterdir()))")), tut)
    msgs = [nbtool.run(lib, root), nbtool.run(tut, root)]
    return root, lib, tut, msgs


def test_executed_notebooks_are_current(project):
    root, lib, tut, msgs = project
    assert nbtool.check(lib, root) == [] and nbtool.check(tut, root) == []
    assert "toy.ipynb: executed" in msgs[0] and "results → nbs/results/toy_tutorial/" in msgs[1]
    nb = nbformat.read(lib, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].outputs[0]["text"] == "42\n"
    assert code[1].outputs == [] and "executed" not in code[1].metadata       # `#| slow`: skipped, as nbdev_test does
    assert code[2].outputs[0]["data"]["text/plain"] == "('1', 3)"            # headless, in a real kernel
    assert all(set(c.metadata["executed"]) == {"code", "outputs"} for c in (code[0], code[2]))


def test_tutorial_runs_at_its_defaults_and_publishes_its_results(project):
    root, lib, tut, _ = project
    nb = nbformat.read(tut, as_version=4)
    assert not [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]   # the run's, not the notebook's
    assert "out_dir = None" in nb.cells[1].source                                              # its own default stays
    assert "wrote" in nb.cells[-1].outputs[0]["text"]
    res = root / "nbs" / "results" / "toy_tutorial"
    assert sorted(p.name for p in res.iterdir()) == ["metrics.json", "provenance.json", "results.parquet"]
    assert json.loads((res / "metrics.json").read_text()) == {"acc": 0.5, "n": 3}
    assert pd.read_parquet(res / "results.parquet")["seed"].tolist() == [0, 1, 2]
    prov = json.loads((res / "provenance.json").read_text())
    assert prov["notebook"] == "nbs/tutorials/toy_tutorial.ipynb" and prov["parameters"] == {"out_dir": "."}
    assert (root / "runs" / "notebooks").is_dir()


def test_nbdev_clean_keeps_the_record(project, tmp_path):
    root, lib, _, _ = project
    nb = nbformat.read(lib, as_version=4)
    nbtool._clean(nb, root)                    # what `nbdev_clean` does, with this project's settings.ini
    p = lib.parent / "cleaned.ipynb"
    nbformat.write(nb, p)
    try:
        assert nbtool.check(p, root) == []
    finally:
        p.unlink()


@pytest.mark.parametrize("edit,expected", [
    ("code", "code cell 1 (cell 2, id"),
    ("code-above", "code cell 3 (cell 4"),
    ("outputs", "its outputs differ"),
    ("new-cell", "was not executed"),
    ("delete-above", "its code, or the code of a cell above it, changed"),
    ("skipped-with-output", "is skipped by `make notebooks`"),
    ("never", "never been executed"),
])
def test_stale_or_missing_outputs_are_reported(project, edit, expected):
    root, lib, _, _ = project
    nb = nbformat.read(lib, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if edit == "code":
        code[0].source = "x = 3\nprint(x * 21)"
    elif edit == "code-above":                  # the last cell's own code did not change, the code above it did
        code[0].source += "\nx = 5"
    elif edit == "outputs":
        code[0].outputs = []
    elif edit == "new-cell":
        nb.cells.append(new_code_cell("x * 2"))
    elif edit == "delete-above":
        nb.cells.remove(code[0])
    elif edit == "skipped-with-output":
        code[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran on a GPU\n")]
    elif edit == "never":
        for c in code:
            c.metadata.pop("executed", None)
    p = lib.parent / f"edited-{edit}.ipynb"
    nbformat.write(nb, p)
    try:
        problems = nbtool.check(p, root)
    finally:
        p.unlink()
    assert any(expected in m for m in problems), problems
    if edit == "code":                          # the cells below ran after the changed one: stale too
        assert len(problems) == 2


def test_a_failing_notebook_leaves_its_source_untouched(project):
    root = project[0]
    p = root / "nbs" / "broken.ipynb"
    nbformat.write(_notebook(new_code_cell("print('before')"), new_code_cell("raise ValueError('the 2nd cell fails')")), p)
    before = p.read_bytes()
    with pytest.raises(RuntimeError, match="broken.ipynb failed.*the 2nd cell fails"):
        nbtool.run(p, root)
    assert p.read_bytes() == before


def test_results_keep_only_table_inputs(tmp_path):
    run = tmp_path / "run"; run.mkdir()
    (run / "metrics.json").write_text('{"acc": 1}')
    (run / "parameters.json").write_text('{"parameters": {"seed": 1}}')
    (run / "status.json").write_text('{"status": "ok"}')
    (run / "summary.csv").write_text("a,b\n1,2\n")
    (run / "big.csv").write_text("x\n" + "1\n" * (nbtool.RESULT_MAX_BYTES // 2 + 1))
    (run / "embeddings_a.parquet").write_bytes(b"PAR1")
    (run / "checkpoint.pt").write_bytes(b"\0")
    dest = tmp_path / "nbs" / "results" / "exp"
    (tmp_path / "nbs" / "tutorials").mkdir(parents=True)
    nb = tmp_path / "nbs" / "tutorials" / "exp.ipynb"; nb.write_text("{}")
    dest.mkdir(parents=True); (dest / "stale.json").write_text("{}")       # an artefact of an older run
    staged, files = nbtool.stage_results(run, dest, nb, tmp_path)
    assert files == ["metrics.json", "summary.csv"]
    assert sorted(p.name for p in dest.iterdir()) == ["stale.json"]          # staged, not yet published
    nbtool.publish(nb, nbformat.v4.new_notebook(), staged, dest)
    assert sorted(p.name for p in dest.iterdir()) == ["metrics.json", "provenance.json", "summary.csv"]
    prov = json.loads((dest / "provenance.json").read_text())
    assert prov["parameters"] == {"seed": 1} and prov["left_out_over_1MiB"] == ["big.csv"]
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")]   # no temporary folders left


def test_widget_state_kept_only_when_shown():
    "Saved widget state (random model ids) is dropped unless an output shows a widget: re-execution stays quiet."
    state = {"application/vnd.jupyter.widget-state+json": {"state": {"0a1b": {}}, "version_major": 2}}
    plain = new_notebook(cells=[new_code_cell("1", outputs=[nbformat.v4.new_output(
        "execute_result", data={"text/plain": "1"}, execution_count=1)])], metadata={"widgets": state})
    nbtool.drop_unshown_widget_state(plain)
    assert "widgets" not in plain.metadata  # kept, it would be rewritten by every execution
    view = {nbtool.WIDGET_VIEW: {"model_id": "0a1b", "version_major": 2}, "text/plain": "w"}
    shown = new_notebook(cells=[new_code_cell("w", outputs=[nbformat.v4.new_output(
        "display_data", data=view)])], metadata={"widgets": state})
    nbtool.drop_unshown_widget_state(shown)
    assert shown.metadata["widgets"] == state  # dropped, the displayed widget would render empty
