"""`contrastive-nb run`: one papermill run of the smoke notebook into its own folder, and refusals."""
import json
import subprocess

from helpers import ROOT, tool

NB = str(ROOT / "nbs" / "tutorials" / "smoke_digits.ipynb")


def cli(*args, env, cwd):
    return subprocess.run([tool("contrastive-nb"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_run_writes_its_folder(tmp_path, env):
    r = cli("run", NB, "-p", "epochs", "1", "-p", "batch_size", "256", "--name", "smoke", "--root", "runs",
            env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "runs" / "smoke"
    names = {p.name for p in run.iterdir()}
    assert {"smoke_digits.ipynb", "parameters.json", "status.json", "log.txt", "metrics.json", "history.json",
            "split.json", "smoke.png"} <= names
    assert json.loads((run / "status.json").read_text())["status"] == "ok"
    params = json.loads((run / "parameters.json").read_text())["parameters"]
    assert params["epochs"] == 1 and params["batch_size"] == 256 and params["out_dir"] == "."
    m = json.loads((run / "metrics.json").read_text())
    assert m["epochs"] == 1 and 0.1 < m["probe_accuracy_trained"] <= 1.0
    hidden = [p.name for p in (tmp_path / "runs").iterdir() if p.name.startswith(".")]
    assert hidden == [".locks"], f"partial folder left behind: {hidden}"           # only the folder of run locks
    assert [p.name for p in (tmp_path / "runs" / ".locks").iterdir()] == ["smoke.lock"]
    # the same name again is refused, and the first run is untouched
    r2 = cli("run", NB, "--name", "smoke", "--root", "runs", env=env, cwd=tmp_path)
    assert r2.returncode == 2 and "already exists" in r2.stderr
    assert json.loads((run / "metrics.json").read_text()) == m


def test_bad_parameters_are_refused_before_running(tmp_path, env):
    r = cli("run", NB, "-p", "epoch", "1", "--root", "runs", env=env, cwd=tmp_path)
    assert r.returncode == 2 and "unknown parameter(s) ['epoch']" in r.stderr
    r = cli("run", NB, "-p", "epochs", "many", "--root", "runs", env=env, cwd=tmp_path)
    assert r.returncode == 2 and "parameter `epochs`" in r.stderr and "takes a int" in r.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_failed_run_keeps_partial_notebook(tmp_path, env):
    r = cli("run", NB, "-p", "labeled_fraction", "2.0", "--name", "bad", "--root", "runs", env=env, cwd=tmp_path)
    assert r.returncode == 2 and "failed" in r.stderr
    run = tmp_path / "runs" / "bad"
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and "fraction" in status["error"]
    assert "in cell [" in r.stderr and status["failure"]["traceback"]  # the notebook's own error, not a banner
    assert (run / "smoke_digits.ipynb").exists()
