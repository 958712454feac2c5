"""`contrastive-nb reproduce` on a CPU-sized twin: a tiny sweep of a tiny notebook published in a temp folder, then one
of its seeds re-run by the command. The re-run's `acc` is inside the published prediction interval and bit-identical
(the same machine); a planted metric (`drift`, shifted by an environment variable the published runs did not have)
and the claim built on it land outside."""
import json
import subprocess

import nbformat
import pandas as pd

from helpers import tool

BODY = """import json, os
acc = 0.8 + 0.01 * ((seed * 7) % 5) / 5
drift = acc + (1.0 if os.environ.get("CNB_TWIN_PLANT") else 0.0)
json.dump({"acc": acc, "drift": drift}, open("metrics.json", "w"))"""


def _twin(tmp_path):
    "The published twin: 5 seeds of one grid point, faked as `contrastive-nb sweep` leaves them, then published."
    from contrastive_nb.core import atomic_write_json
    from contrastive_nb.runs import publish_sweep
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('seed = 0\narm = "a"')
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell(BODY)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "nb.ipynb")
    sf = tmp_path / "twin.yaml"
    sf.write_text("notebook: nb.ipynb\nname: twin\ngrid: {arm: [a]}\nseeds: [0, 1, 2, 3, 4]\n")
    for seed in range(5):
        d = tmp_path / "runs" / "twin" / f"arm-a_seed-{seed}"
        d.mkdir(parents=True)
        atomic_write_json(d / "parameters.json", {"notebook": str(tmp_path / "nb.ipynb"),
                                                  "parameters": {"arm": "a", "seed": seed}})
        atomic_write_json(d / "status.json", {"status": "ok", "seconds": 1.0, "commit": "abc1234"})
        acc = 0.8 + 0.01 * ((seed * 7) % 5) / 5
        atomic_write_json(d / "metrics.json", {"acc": acc, "drift": acc})
    publish_sweep(sf, tmp_path / "published", root=tmp_path / "runs")


def test_reproduce_a_published_twin_one_inside_one_planted_outside(tmp_path, env):
    _twin(tmp_path)
    r = subprocess.run([tool("contrastive-nb"), "reproduce", "published", "--seeds", "0", "--root", "again",
                        "--claim", "drift,acc"], cwd=tmp_path, env=dict(env, CNB_TWIN_PLANT="1"),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    t = pd.read_csv(tmp_path / "again" / "reproduce-twin" / "reproduction.csv").set_index("what")
    assert bool(t.loc["acc", "inside"]) and bool(t.loc["acc", "same_value"]), t    # the same machine: the same bits
    assert not bool(t.loc["drift", "inside"]) and not bool(t.loc["drift", "same_value"])
    assert not bool(t.loc["drift − acc", "inside"])                                   # the claim moved too
    assert "2 of 3 values inside" not in r.stdout and "1 of 3 values inside" in r.stdout, r.stdout
    assert "outside:" in r.stdout and "drift" in r.stdout.split("outside:")[1]
    assert "recorded no instruction set" in r.stdout     # the twin's runs were faked without one
    # run again: the finished re-run is kept, not run a second time
    again = subprocess.run([tool("contrastive-nb"), "reproduce", "published", "--seeds", "0", "--root", "again"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "done before, kept" in again.stdout, again.stderr[-2000:]


def test_reproduce_refuses_in_one_sentence(tmp_path, monkeypatch, capsys):
    from contrastive_nb.cli import main
    _twin(tmp_path)
    monkeypatch.chdir(tmp_path)              # in this process: a refusal needs no kernel and no second import
    for args, says in [(("nbs",), "must be a published sweep's folder"),
                       (("published", "--seeds", "zero"), "`--seeds` must be integers"),
                       (("published", "--claim", "acc"), "`--claim` must be A,B")]:
        assert main(["reproduce", *args]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    assert not (tmp_path / "runs" / "reproduce-twin").exists()
