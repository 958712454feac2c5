"""A killed `contrastive-nb run` resumes instead of restarting: run again with the same name it says "resuming run X
from update N" and `fit` goes on from that checkpoint, in the same folder (issue 46). SIGTERM (or SIGINT) to the
command is passed on to the kernel, so `fit` writes a checkpoint and the run ends `preempted` — resumable — rather
than losing its kernel without one. The fault is injected by the notebook itself (an `OnStep` hook that signals or
kills its parent command at update k), so nothing here depends on timing."""
import json
import os
import subprocess
from pathlib import Path

from scenario import cli_env, write_notebook

BODY = (Path(__file__).with_name("resume_body.py")).read_text()
CLI = [str(Path(__import__("sys").executable).parent / "contrastive-nb")]


def _run(nb, root, stop=None):
    env = cli_env()
    env.pop("CNB_TEST_STOP", None)
    if stop:
        env["CNB_TEST_STOP"] = stop
    return subprocess.run(CLI + ["run", str(nb), "--name", "r", "--root", str(root), "-p", "epochs", "3"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=root.parent)


def _latest(folder: Path) -> int:
    return json.loads((folder / "checkpoints" / "latest.json").read_text())["updates"]


def test_a_stopped_then_killed_run_resumes_each_time_from_its_last_checkpoint(tmp_path):
    nb = write_notebook(tmp_path / "train.ipynb", 'epochs = 1\nseed = 0\nout_dir = "."', BODY)
    root = tmp_path / "runs"
    # 1. SIGTERM to the command at update 3: forwarded to the kernel, `fit` checkpoints and the run is 'preempted'
    p = _run(nb, root, "SIGTERM:3")
    assert p.returncode != 0 and "run the same command again to resume it" in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    st = json.loads((root / "r" / "status.json").read_text())
    assert st["status"] == "preempted", st        # on today's code: the kernel dies with no checkpoint, 'failed'
    stopped_at = _latest(root / "r")
    assert stopped_at >= 3, stopped_at
    # 2. run again: it resumes from there; SIGKILL of command and kernel at update 8 leaves the partial folder
    p = _run(nb, root, "SIGKILL:8")
    assert p.returncode == -9, p.stderr[-2000:]
    assert f"resuming run 'r' from update {stopped_at}" in p.stdout, p.stdout[-2000:]
    partial = [d for d in root.iterdir() if d.name.startswith(".r.partial-")]
    assert len(partial) == 1 and _latest(partial[0]) == 8
    # 3. run again: resumes from update 8 (today's code deletes the partial folder and trains from update 0)
    p = _run(nb, root)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "resuming run 'r' from update 8" in p.stdout, p.stdout[-2000:]
    assert json.loads((root / "r" / "status.json").read_text())["status"] == "ok"
    assert _latest(root / "r") == 12                 # 64 items / 16 per batch × 3 epochs
    assert sorted(d.name for d in root.iterdir() if not d.name.startswith(".")) == ["r"]    # nothing set aside


def test_a_killed_run_given_other_parameters_is_kept_aside_not_deleted(tmp_path, capsys):
    "Run again with other parameters, the killed run's folder (and its checkpoints) is kept as r.failed-1."
    from contrastive_nb.runs import run_notebook
    nb = write_notebook(tmp_path / "nb.ipynb", 'seed = 0\nout_dir = "."', "open('metrics.json', 'w').write('{}')")
    root = tmp_path / "runs"
    killed = root / ".r.partial-1-2"
    (killed / "checkpoints").mkdir(parents=True)
    (killed / "checkpoints" / "ckpt-000000005.pt").write_bytes(b"weights")
    (killed / "parameters.json").write_text(json.dumps({"notebook": str(nb), "parameters": {"seed": 9}}))
    run_notebook(nb, "r", {"seed": 1}, root=root)
    assert (root / "r.failed-1" / "checkpoints" / "ckpt-000000005.pt").read_bytes() == b"weights"   # was: deleted
    assert "resuming" not in capsys.readouterr().out                    # not resumed: other parameters


def test_a_sweep_resumes_its_killed_runs_instead_of_deleting_them(tmp_path):
    "Today's code removes a killed sweep run's partial folder (checkpoints included) and starts it from update 0."
    from contrastive_nb.runs import load_sweep, sweep_runs
    nb = write_notebook(tmp_path / "nb.ipynb", 'seed = 0\nout_dir = "."',
                        "import json; json.dump({'acc': 1.0}, open('metrics.json', 'w'))")
    (tmp_path / "s.yaml").write_text("notebook: nb.ipynb\nname: s\nseeds: [0]\n")
    name = sweep_runs(load_sweep(tmp_path / "s.yaml"))[0][0]
    killed = tmp_path / "runs" / "s" / f".{name}.partial-1-2"          # as a SIGKILL leaves it
    (killed / "checkpoints").mkdir(parents=True)
    (killed / "checkpoints" / "latest.json").write_text('{"updates": 7}')
    (killed / "parameters.json").write_text(json.dumps(
        {"notebook": str(nb.resolve()), "parameters": {"seed": 0, "out_dir": "."}}))
    p = subprocess.run(CLI + ["sweep", str(tmp_path / "s.yaml"), "--root", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=600, env=cli_env(), cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert f"resuming run '{name}' from update 7" in p.stdout, p.stdout
    assert (tmp_path / "runs" / "s" / name / "checkpoints" / "latest.json").exists()    # the killed run's, kept
