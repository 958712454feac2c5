"""A user's own runs through the command: a failed run says the notebook's own error, and `claims` gives the claims
table of a sweep (printed, saved beside it, never overwritten without --force, refusals in one sentence)."""
import json
import subprocess

import nbformat
import numpy as np
import pandas as pd

from helpers import tool


def cli(*args, env, cwd):
    return subprocess.run([tool("contrastive-nb"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _notebook(path, params, body):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(params)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_a_failed_run_prints_the_notebooks_own_exception(tmp_path, env):
    _notebook(tmp_path / "nb.ipynb", 'dataset = "digits"',
              "# read the data\nif dataset not in ('digits',):\n"
              "    raise ValueError(f\"`dataset` must be one of ['digits']; got {dataset!r}\")")
    r = cli("run", "nb.ipynb", "-p", "dataset", "/my/pngs", "--name", "bad", env=env, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    said = r.stderr.strip().splitlines()[-1]  # the command's sentence (the kernel may warn before it)
    assert "ValueError: `dataset` must be one of ['digits']; got '/my/pngs'" in said, said
    assert "which starts `if dataset not in ('digits',):`" in said and "in cell [" in said, said
    assert "Traceback" not in said and "In [" not in said and said.startswith("contrastive-nb: error: run 'bad' failed: ValueError"), said
    status = json.loads((tmp_path / "runs" / "bad" / "status.json").read_text())
    f = status["failure"]
    assert (f["type"], f["line"]) == ("ValueError", "if dataset not in ('digits',):")
    assert "\x1b" not in f["traceback"] and "must be one of" in f["traceback"]
    assert status["error"] in said


def _fake_sweep(folder, effect=0.05, seeds=4):
    "Run folders as `contrastive-nb sweep` leaves them: arm b is `effect` above arm a on every seed."
    rng = np.random.default_rng(1)
    for seed in range(seeds):
        base = 0.8 + 0.02 * rng.standard_normal()
        for arm, acc in (("a", base), ("b", base + effect + 0.003 * rng.standard_normal())):
            d = folder / f"arm-{arm}_seed-{seed}"
            d.mkdir(parents=True)
            (d / "parameters.json").write_text(json.dumps({"parameters": {"arm": arm, "seed": seed}}))
            (d / "status.json").write_text('{"status": "ok"}')
            (d / "metrics.json").write_text(json.dumps({"test": {"acc": acc}}))


def test_claims_prints_and_saves_the_table_and_refuses_in_one_sentence(tmp_path, env, monkeypatch, capsys):
    _fake_sweep(tmp_path / "runs" / "mine")
    r = cli("claims", "runs/mine", "--metric", "test/acc", "--compare", "arm=a,b", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "higher" in r.stdout and "param/arm" in r.stdout, r.stdout
    saved = tmp_path / "runs" / "mine" / "claims_test-acc_arm.parquet"
    t = pd.read_parquet(saved)
    assert t[["param/arm", "baseline", "n", "verdict"]].values.tolist() == [["b", "a", 4, "higher"]]
    assert 0.04 < t["diff"].iloc[0] < 0.06 and t["t_low"].iloc[0] > 0 and t["p_holm"].iloc[0] < 0.05
    before = saved.read_bytes()
    again = cli("claims", "runs/mine", "--metric", "test/acc", "--compare", "arm=a,b", env=env, cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr and saved.read_bytes() == before
    from contrastive_nb.cli import main
    monkeypatch.chdir(tmp_path)              # the refusals in this process: no second import of torch each
    for args, says in [
        (("--metric", "test/acc", "--compare", "arm"), "`--compare` must be PARAM=BASELINE,VALUE"),
        (("--metric", "test/ac", "--compare", "arm=a,b"), "(did you mean 'test/acc'?)"),
        (("--metric", "test/acc", "--compare", "arm=a,c"), "never takes the value(s) ['c']; it takes ['a', 'b']"),
        (("--metric", "test/acc", "--compare", "arm=a,b", "--alpha", "2"), "`alpha`"),
    ]:
        assert main(["claims", "runs/mine", *args, "--out", "elsewhere"]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    assert not (tmp_path / "elsewhere").exists()
    assert main(["claims", "runs/none", "--metric", "m", "--compare", "arm=a,b"]) == 2
    assert "runs/none does not exist" in capsys.readouterr().err
