"""Malformed input, a batch at a time: every refusal of `contrastive-nb run/params/sweep/results` is one sentence on
stderr with exit status 2 (never a traceback), and every refusal of the loaders (`csv_image_dataset`,
`image_folder_dataset`, sweep files) a `ValueError`/`FileNotFoundError` whose message is one line naming the file.
Hand-written cases first, then seeded random mutations of valid files. Nothing here executes a notebook."""
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from scenario import cli_env, write_notebook

CLI = str(Path(sys.executable).parent / "contrastive-nb")
CLEAR = (ValueError, FileNotFoundError)        # what the API raises for bad input; anything else is a bug


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    "Files to point the command at: a good notebook, bad notebooks, sweep files, run folders."
    w = tmp_path_factory.mktemp("world")
    nb = write_notebook(w / "nb.ipynb", 'seed = 0\nlr = 0.1\ntag = "a"\nepochs = 2\nlayers = [1, 2]\nopts = {"a": 1}', "pass")
    write_notebook(w / "noparams.ipynb", "x = 1", "pass").write_text(
        (w / "noparams.ipynb").read_text().replace('"parameters"', '"other"'))
    (w / "garbage.ipynb").write_text("this is not JSON")
    (w / "folder.ipynb").mkdir()
    sweeps = {
        "malformed": "notebook: nb.ipynb\nname: [unclosed\n",
        "list": "- notebook: nb.ipynb\n- name: s\n",
        "scalar": "just text\n",
        "seeds3": "notebook: nb.ipynb\nname: s\nseeds: 3\n",
        "retries": "notebook: nb.ipynb\nname: s\nretries: lots\n",
        "escape": "notebook: nb.ipynb\nname: ../../escape\n",
        "absolute": f"notebook: nb.ipynb\nname: {w / 'abs'}\n",
        "dotname": "notebook: nb.ipynb\nname: .s\n",
        "unknown": "notebook: nb.ipynb\nname: s\nseedz: [1]\n",
        "nonb": "notebook: missing.ipynb\nname: s\n",
        "gridscalar": "notebook: nb.ipynb\nname: s\ngrid: {lr: 0.1}\n",
        "badparam": "notebook: nb.ipynb\nname: s\ngrid: {lr: [fast]}\n",
        "nanparam": "notebook: nb.ipynb\nname: s\ngrid: {lr: [.nan]}\n",
        "timeout": "notebook: nb.ipynb\nname: s\ntimeout: -1\n",
        "tag": "notebook: nb.ipynb\nname: s\n!!python/object/apply:os.system [echo]: 1\n",
        "deep": "[" * 5000 + "]" * 5000 + "\n",
    }
    for k, text in sweeps.items():
        (w / f"{k}.yaml").write_text(text)
    (w / "latin1.yaml").write_bytes("notebook: nb.ipynb\nname: café\n".encode("latin-1"))
    (w / "params-list.yaml").write_text("- 1\n- 2\n")
    (w / "params-bad.yaml").write_text("lr: [\n")
    (w / "params-nested.yaml").write_text("layers: [1, !!binary aGk=]\n")
    (w / "nested.yaml").write_text("notebook: nb.ipynb\nname: s\ngrid: {opts: [{a: [1, !!set {x: null}]}]}\n")
    for name, status, params in [("failed-only/r1", {"status": "failed", "error": "x"}, {"parameters": {"seed": 0}}),
                                 ("nokey/r1", {"status": "ok"}, {"notebook": "nb.ipynb"}),
                                 ("badstatus/r1", {"state": "ok"}, {"parameters": {"seed": 0}}),
                                 ("nometrics/r1", {"status": "ok"}, {"parameters": {"seed": 0}})]:
        (w / name).mkdir(parents=True)
        (w / name / "status.json").write_text(json.dumps(status))
        (w / name / "parameters.json").write_text(json.dumps(params))
    (w / "garbage-json" / "r1").mkdir(parents=True)
    (w / "garbage-json" / "r1" / "parameters.json").write_text("{not json")
    (w / "empty").mkdir()
    (w / "a-file").write_text("x")
    return w


def _cases(w):
    nb = str(w / "nb.ipynb")
    runs = str(w / "runs")
    return [   # (argv, a piece of the sentence)
        (["run", str(w / "folder.ipynb")], "is a folder"),
        (["run", str(w)], "is a folder"),
        (["run", str(w / "missing.ipynb")], "does not exist"),
        (["run", str(w / "garbage.ipynb")], "is not a readable Jupyter notebook"),
        (["run", str(w / "noparams.ipynb")], "no cell tagged 'parameters'"),
        (["run", nb, "--name", "n" * 300, "--root", runs], "300 bytes long"),
        (["run", nb, "--name", ".hidden", "--root", runs], "must not start with '.'"),
        (["run", nb, "--name", "../out", "--root", runs], "no path separators"),
        (["run", nb, "--name", b"caf\xe9".decode("utf-8", "surrogateescape"), "--root", runs], "is not UTF-8 text"),
        (["run", nb, "-p", "lrr", "1", "--root", runs], "unknown parameter(s) ['lrr']"),
        (["run", nb, "-p", "epochs", "many", "--root", runs], "takes a int"),
        (["run", nb, "-p", "lr", "nan", "--root", runs], "takes finite numbers"),
        (["run", nb, "-f", str(w / "none.yaml"), "--root", runs], "does not exist"),
        (["run", nb, "-f", str(w), "--root", runs], "is a folder"),
        (["run", nb, "-f", str(w / "params-bad.yaml"), "--root", runs], "line 2, column 1"),
        (["run", nb, "-f", str(w / "params-list.yaml"), "--root", runs], "must hold a mapping"),
        # values are JSON data all the way down: a tuple inside a list would reach papermill's unescaped branch
        (["run", nb, "-p", "layers", EXPLOIT, "--root", runs], "the item at [0] is a tuple"),
        (["run", nb, "-p", "layers", "[(1, 2)]", "--root", runs], "the item at [0] is a tuple"),
        (["run", nb, "-p", "layers", "[1, {2, 3}]", "--root", runs], "the item at [1] is a set"),
        (["run", nb, "-p", "layers", "[b'x']", "--root", runs], "the item at [0] is a bytes"),
        (["run", nb, "-p", "layers", "[!!binary aGk=]", "--root", runs], "the item at [0] is a bytes"),
        (["run", nb, "-p", "opts", "{a: [!!set {x: null}]}", "--root", runs], "the item at ['a'][0] is a set"),
        (["run", nb, "-p", "opts", "{a: !!timestamp 2001-12-14}", "--root", runs], "['a'] is a date"),
        (["run", nb, "-p", "opts", "{1: 2}", "--root", runs], "has the key 1, a int"),
        (["run", nb, "-p", "opts", "{'a': {'b': 1+2j}}", "--root", runs], "['a']['b'] is a complex"),
        (["run", nb, "-f", str(w / "params-nested.yaml"), "--root", runs], "the item at [1] is a bytes"),
        (["sweep", str(w / "nested.yaml")], "the item at ['a'][1] is a set"),
        (["run", nb, "--timeout", "-1", "--root", runs], "`timeout` must be in (0, inf)"),
        (["run", nb, "--root", str(w / "a-file")], "is a file"),
        (["params", str(w / "folder.ipynb")], "is a folder"),
        (["params", str(w / "missing.ipynb")], "does not exist"),
        (["params", str(w / "garbage.ipynb")], "not a readable Jupyter notebook"),
        (["sweep", str(w / "malformed.yaml")], "line 3, column 1"),
        (["sweep", str(w / "list.yaml")], "holds a list"),
        (["sweep", str(w / "scalar.yaml")], "holds a str"),
        (["sweep", str(w / "seeds3.yaml")], "such as [0, 1, 2]; got 3"),
        (["sweep", str(w / "retries.yaml")], "`retries` must be an integer; got 'lots'"),
        (["sweep", str(w / "escape.yaml")], "no path separators"),
        (["sweep", str(w / "absolute.yaml")], "no path separators"),
        (["sweep", str(w / "dotname.yaml")], "must not start with '.'"),
        (["sweep", str(w / "unknown.yaml")], "unknown key(s) ['seedz']"),
        (["sweep", str(w / "nonb.yaml")], "missing.ipynb does not exist"),
        (["sweep", str(w / "gridscalar.yaml")], "non-empty lists"),
        (["sweep", str(w / "badparam.yaml")], "takes a float"),
        (["sweep", str(w / "nanparam.yaml")], "takes finite numbers"),
        (["sweep", str(w / "timeout.yaml")], "`timeout` must be in (0, inf)"),
        (["sweep", str(w / "tag.yaml")], "could not determine a constructor"),
        (["sweep", str(w / "deep.yaml")], "deep.yaml"),
        (["sweep", str(w / "latin1.yaml")], "is not UTF-8"),
        (["sweep", str(w / "none.yaml")], "does not exist"),
        (["sweep", str(w)], "is a folder"),
        (["sweep", str(w / "seeds3.yaml"), "--parallel", "0"], "such as [0, 1, 2]"),
        (["results", str(w / "a-file")], "is a file"),
        (["results", str(w / "nowhere")], "does not exist"),
        (["results", str(w / "empty")], "no run folders"),
        (["results", str(w / "failed-only")], "none of the 1 run(s)"),
        (["results", str(w / "nokey")], "nokey/r1/parameters.json must hold a mapping with the key 'parameters'"),
        (["results", str(w / "badstatus")], "badstatus/r1/status.json must hold a mapping with the key 'status'"),
        (["results", str(w / "garbage-json")], "is not valid JSON"),
        (["results", str(w / "nometrics")], "no numeric metrics to summarize"),
    ]


EXPLOIT = """[('"+str(__import__("os").system("touch pwned"))+"',)]"""   # ran the command before the JSON rule


def _main(capsys, argv):
    from contrastive_nb.cli import main
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as e:                     # argparse's own refusals (usage line + one error line)
        rc = e.code
    return rc, capsys.readouterr().err


def test_every_cli_refusal_is_one_sentence_with_exit_status_2(world, capsys):
    bad = []
    for argv, says in _cases(world):
        rc, err = _main(capsys, argv)
        lines = err.strip().splitlines()
        if not (rc == 2 and len(lines) == 1 and lines[0].startswith("contrastive-nb: error:") and says in err):
            bad.append((argv[:2], says, rc, err[-400:]))
    assert not bad, "\n".join(map(str, bad))
    assert not (world / "runs").exists() or not any((world / "runs").iterdir()), "a refused command left a folder"
    assert not (world.parent / "escape").exists() and not (world / "abs").exists()
    assert not list(world.parent.rglob("pwned")) and not Path("pwned").exists(), "a parameter value ran code"
    for argv in (["run"], ["sweep", str(world / "seeds3.yaml"), "--parallel", "x"], ["nonsense"]):   # argparse
        rc, err = _main(capsys, argv)
        assert rc == 2 and "Traceback" not in err and "\n\n" not in err.strip(), err       # one paragraph:
        assert err.strip().splitlines()[-1].startswith("contrastive-nb"), err          # usage, then the error


def test_the_installed_command_prints_the_sentence_not_a_traceback(world):
    p = subprocess.run([CLI, "run", str(world / "folder.ipynb")], capture_output=True, text=True, timeout=300,
                       env=cli_env())
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [f"contrastive-nb: error: `notebook` must be a .ipynb file; "
                                             f"{world / 'folder.ipynb'} is a folder"]


# ---------------------------------------------------------------- the loaders

def _clear(e, *names):
    "A clear refusal: an expected type, one line, naming one of `names`."
    msg = str(e)
    return isinstance(e, CLEAR) and msg and "\n" not in msg and any(n in msg for n in names)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    for k in range(3):
        Image.fromarray(np.full((8, 8, 3), 40 * k, np.uint8)).save(d / f"{k}.png")
    return d


CSV_CASES = {   # name: (bytes, None if accepted else a piece of the message)
    "bom": ("\ufeffimage,label\n0.png,0\n1.png,1\n".encode(), None),
    "latin1": ("image,label\n0.png,café\n".encode("latin-1"), "is not utf-8 text: byte 0xe9 on line 2"),
    "short-row": (b"image,label\n0.png,0\n1.png\n", "line 3 has 1 field(s) but the header has 2"),
    "long-row": (b"image,label\n0.png,0,extra\n", "line 2 has 3 field(s)"),
    "huge-label": (b"image,label\n0.png," + b"x" * 200_000 + b"\n", "line 2 is not valid CSV (field larger"),
    "huge-number": (b"image,label\n0.png,0\n1.png," + b"9" * 5000 + b"\n", "not integer class ids (line 3"),
    "nul": (b"image,label\n0.png,0\x00\n", "NUL byte on line 2"),
    "open-quote": (b'image,label\n0.png,"0\n', "not valid CSV (unexpected end of data)"),
    "empty": (b"", "is empty"),
    "header-only": (b"image,label\n", "has no rows after its header"),
    "dup-header": (b"image,label,label\n0.png,0,0\n", "more than once"),
    "no-label-col": (b"image,class\n0.png,0\n", "`label_col`='label' is not a column"),
    "nan-label": (b"image,label\n0.png,0\n1.png,nan\n", "no label in column 'label' (line 3: 'nan')"),
    "float-label": (b"image,label\n0.png,0.0\n1.png,2.0\n", None),
    "no-image": (b"image,label\n,0\n", "no image path in column 'image': line 2"),
    "folder-image": (b"image,label\n.,0\n", "do not exist (or are not files)"),
    "missing-image": (b"image,label\ngone.png,0\n", "line 2:"),
}


@pytest.mark.parametrize("case", list(CSV_CASES))
def test_csv_loader_refusals_name_the_file_and_line(images, case):
    from contrastive_nb.data import csv_image_dataset
    text, says = CSV_CASES[case]
    path = images / f"{case}.csv"
    path.write_bytes(text)
    if says is None:
        assert len(csv_image_dataset(path)) >= 1
        return
    with pytest.raises(CLEAR) as e:
        csv_image_dataset(path)
    assert _clear(e.value, str(path)) and says in str(e.value), str(e.value)[:500]


def test_image_folder_refusals_are_clear(tmp_path, images):
    from contrastive_nb.data import image_folder_dataset
    (tmp_path / "empty").mkdir()
    (tmp_path / "texts" / "a").mkdir(parents=True)
    (tmp_path / "texts" / "a" / "x.txt").write_text("not an image")
    for root in [tmp_path / "nowhere", images / "0.png", tmp_path / "empty", tmp_path / "texts"]:
        with pytest.raises(CLEAR) as e:
            image_folder_dataset(root)
        assert _clear(e.value, str(root), "classes a"), str(e.value)


def _mutate(text: str, rng: random.Random) -> str:
    "One random edit of the kind a hand, an editor or a bad export makes."
    pieces = [",", '"', "\n", "\r\n", ":", "-", "[", "]", "{", "}", "#", "&", "*", "!", "|", " ", "\t", "\\", "\x00",
              "é", "\ufeff", "nan", "2.0", "1e999", ".nan", "../", "..", "~", "null", "yes", "!!python/object/apply:os.system [x]"]
    i = rng.randrange(len(text) + 1)
    op = rng.randrange(5)
    if op == 0:
        return text[:i] + rng.choice(pieces) + text[i:]
    if op == 1:
        return text[:i] + text[i + rng.randint(1, 6):]
    if op == 2:
        lines = text.splitlines(keepends=True)
        k = rng.randrange(len(lines))
        return "".join(lines[:k] + [lines[k]] + lines[k:])
    if op == 3:
        return text[:i]
    lines = text.splitlines(keepends=True)
    rng.shuffle(lines)
    return "".join(lines)


def _fuzz(good: str, seed: int, n: int, folder, suffix: str, load, names):
    "Load `n` seeded mutations of `good`: each is accepted or refused clearly; both outcomes must occur."
    rng, outcomes = random.Random(seed), {"accepted": 0, "refused": 0}
    for k in range(n):
        text = good
        for _ in range(rng.randint(1, 3)):
            text = _mutate(text, rng)
        path = folder / f"m{k}{suffix}"
        path.write_text(text, encoding="utf-8")
        try:
            load(path)
            outcomes["accepted"] += 1
        except Exception as e:
            assert _clear(e, str(path), *names), f"mutation {k} {text!r}: {type(e).__name__}: {e}"
            outcomes["refused"] += 1
    assert min(outcomes.values()) >= 10, outcomes


def test_mutated_csv_files_load_or_are_refused_clearly(images):
    from contrastive_nb.data import check_dataset, csv_image_dataset
    _fuzz("image,label,fold\n0.png,0,a\n1.png,1,b\n2.png,1,a\n", 0, 150, images, ".csv",
          lambda p: check_dataset(csv_image_dataset(p), allow_unlabeled=True), ["`dataset`"])


def test_mutated_sweep_files_are_accepted_or_refused_clearly(world):
    from contrastive_nb.runs import load_sweep, sweep_runs
    good = ("notebook: nb.ipynb\nname: s\nparameters: {epochs: 2}\ngrid: {lr: [0.1, 0.2]}\nseeds: [0, 1]\n"
            "parallel: 1\nretries: 1\ntimeout: 60\n")
    _fuzz(good, 1, 120, world, ".yaml", lambda p: sweep_runs(load_sweep(p)), ["parameter", "run name"])
