"""Notebook parameters: `contrastive-nb run` takes only the names the notebook's `parameters` cell declares, with
literal values of the declared type; code-like strings reach the notebook as plain data, never evaluated; a parameter
declared as text receives the text verbatim (`no`, `123`); NaN and infinity follow one rule, however written."""
import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from scenario import env

CLI = str(Path(sys.executable).parent / "contrastive-nb")


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    "A two-cell notebook: a parameters cell, and a cell that writes the values it received to values.json."
    d = tmp_path_factory.mktemp("nb")
    nb = nbformat.v4.new_notebook()
    strings = "".join(f's{k} = "plain"  # free text\n' for k in range(len(CODE_LIKE) + len(VERBATIM)))
    params = nbformat.v4.new_code_cell(strings + 'epochs = 2\nlr = 0.1\nlayers = [1, 2]\nlimit = float("inf")\n'
                                       'nested = {"a": [1]}')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        'import json\njson.dump({k: v for k, v in globals().items() if k[:1] == "s" and k[1:].isdigit()}'
        ' | {"epochs": epochs, "lr": lr, "layers": layers, "limit": limit, "nested": nested},'
        ' open("values.json", "w"))')]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = d / "params.ipynb"
    nbformat.write(nb, path)
    return path


def _run(notebook, cwd, *params, name="r"):
    args = [CLI, "run", str(notebook), "--name", name, "--root", str(cwd / "runs")]
    for k, v in params:
        args += ["-p", k, v]
    e = env(); e["PATH"] = str(Path(sys.executable).parent) + ":" + e["PATH"]
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=e, cwd=cwd)


CODE_LIKE = {
    "call": '__import__("os").system("touch MARKER")',
    "quote-break": 'x"; import os; os.system("touch MARKER"); y="',
    "newline-break": 'x"\nimport os\nos.system("touch MARKER")\ny = "',
    "backslash-quote": 'x\\"; __import__("os").system("touch MARKER"); y=\\"',
    "yaml-tag": '!!python/object/apply:os.system ["touch MARKER"]',
    "f-string": 'f"{__import__(\'os\').system(\'touch MARKER\')}"',
}


VERBATIM = {   # text that YAML or Python would read as another type: a `str` parameter receives it as written
    "yaml-bool": "no", "int": "123", "float": "0.5", "infinity": "1e999", "null": "null", "list": "[1]",
}


def test_unknown_names_and_wrong_types_are_refused_before_running(notebook, tmp_path):
    for params, says in [([("tags", "x")], "unknown parameter(s) ['tags']"),
                         ([("epochs", '__import__("os").getpid()')], "takes a int")]:
        p = _run(notebook, tmp_path, *params)
        assert p.returncode == 2 and says in p.stderr, (params, p.stderr[-2000:])
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    from contrastive_nb.runs import check_parameters, coerce_value     # the same checks, without a process each
    for name, text, says in [("epochs", "2.5", "takes a int"), ("layers", "3", "takes a list"),
                             ("lr", "True", "takes a float"), ("s0", "[1]", "takes a str")]:
        with pytest.raises(ValueError, match=says):
            check_parameters(notebook, {name: coerce_value(text)})


def test_code_like_strings_arrive_verbatim_and_never_run(notebook, tmp_path):
    texts = [*CODE_LIKE.values(), *VERBATIM.values()]
    p = _run(notebook, tmp_path, *[(f"s{k}", text) for k, text in enumerate(texts)], ("lr", "1"), ("limit", "nan"),
             ("nested", NESTED))
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads((tmp_path / "runs" / "r" / "values.json").read_text())
    for k, (name, text) in enumerate(CODE_LIKE.items()):
        assert got[f"s{k}"] == text, name
    assert (got["epochs"], got["lr"], got["layers"]) == (2, 1.0, [1, 2])        # an int for a float is widened
    assert isinstance(got["lr"], float)
    assert not list(tmp_path.rglob("MARKER")), "a string was executed"
    for k, (name, text) in enumerate(VERBATIM.items(), start=len(CODE_LIKE)):
        assert got[f"s{k}"] == text, name
    assert got["limit"] != got["limit"]            # NaN: allowed where the notebook's default is non-finite
    assert got["nested"] == json.loads(NESTED)
    # the notebook receives exactly what parameters.json records: the injected cell, read back, equals it
    recorded = json.loads((tmp_path / "runs" / "r" / "parameters.json").read_text())["parameters"]
    injected = _injected(tmp_path / "runs" / "r" / "params.ipynb")
    assert set(injected) == set(recorded)
    for k in recorded:
        same = injected[k] == recorded[k] or (k == "limit" and math.isnan(injected[k]) and math.isnan(recorded[k]))
        assert same and type(injected[k]) is type(recorded[k]), (k, injected[k], recorded[k])


NESTED = '{"a": [1, {"b": null, "c": "q\\"uote\\n"}], "d": [[0.5, true, -0.0]], "e": {"f": {"g": "x\\\\y"}}}'


def _injected(path) -> dict:
    "The values papermill's injected-parameters cell assigns, read as literals (`float('nan')` as a float)."
    cell = next(c for c in nbformat.read(path, as_version=4).cells if "injected-parameters" in c.metadata.get("tags", []))
    out = {}
    for node in ast.parse(cell.source).body:
        assert isinstance(node, ast.Assign), ast.dump(node)
        v = node.value
        literal = isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "float"
        out[node.targets[0].id] = float(ast.literal_eval(v.args[0])) if literal else ast.literal_eval(v)
    return out


def test_nan_and_infinity_follow_one_rule_however_written(notebook, tmp_path, capsys):
    from contrastive_nb.cli import main
    runs = tmp_path / "runs"
    (tmp_path / "p.yaml").write_text("lr: .nan\n")
    for args in [("-p", "lr", text) for text in ["nan", ".nan", "NaN", "inf", "Infinity", ".inf", "1e999", "+inf"]] + [
            ("-f", tmp_path / "p.yaml"), ("-p", "layers", "[1, 1e999]")]:
        capsys.readouterr()
        assert main(["run", str(notebook), "--root", str(runs), *map(str, args)]) == 2, args
        err = capsys.readouterr().err
        assert "takes finite numbers" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not runs.exists() or not any(runs.iterdir())
