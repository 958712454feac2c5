"""Two commands at once: two `contrastive-nb run --name X`, two `contrastive-nb sweep` of one file. Each run name and
each sweep has a lock; the second command is refused with a sentence (or waits, `--wait`); a partial folder is never
removed (a killed run's is resumed by its next run); no finished run is ever hidden or deleted; `sweep_status.json` tells the truth.
And a sweep's `name` cannot leave `--root`."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from scenario import cli_env, write_notebook

CLI = str(Path(sys.executable).parent / "contrastive-nb")

# waits for the file `gate` (when given) so the test decides when the run ends; then writes its metrics
BODY = """import json, os, time
deadline = time.time() + 240
while gate and not os.path.exists(gate) and time.time() < deadline:
    time.sleep(0.2)
json.dump({"seed": seed, "tag": tag}, open("metrics.json", "w"))"""


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    return write_notebook(tmp_path_factory.mktemp("nb") / "gated.ipynb",
                          'seed = 0\ngate = ""  # a file to wait for\ntag = "a"', BODY)


def _until(predicate, what, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _popen(*args, cwd):
    return subprocess.Popen([CLI, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(), cwd=cwd)


def _one_sentence(stderr):
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("contrastive-nb: error:") and "Traceback" not in stderr


def _main(capsys, *args):
    "`contrastive-nb ARGS` in this process (another process than the command under test): (exit status, stderr)."
    from contrastive_nb.cli import main
    capsys.readouterr()
    rc = main(list(map(str, args)))
    return rc, capsys.readouterr().err


def test_two_runs_with_one_name_the_second_is_refused_and_the_first_is_kept(notebook, tmp_path, capsys):
    runs, gate = tmp_path / "runs", tmp_path / "gate"
    first = _popen("run", notebook, "--name", "x", "--root", runs, "-p", "gate", gate, cwd=tmp_path)
    try:
        _until(lambda: list(runs.glob(".x.partial-*")), "the first run's partial folder")
        rc, err = _main(capsys, "run", notebook, "--name", "x", "--root", runs)
        assert rc == 2 and _one_sentence(err) and "in progress in another process" in err, err
        assert list(runs.glob(".x.partial-*")), "the second command touched the first run's partial folder"
    finally:
        gate.touch()
        out, err = first.communicate(timeout=240)
    assert first.returncode == 0, err[-3000:]
    assert json.loads((runs / "x" / "status.json").read_text())["status"] == "ok"
    assert sorted(p.name for p in runs.iterdir()) == [".locks", "x"]             # nothing hidden, nothing extra
    rc, err = _main(capsys, "run", notebook, "--name", "x", "--root", runs)        # afterwards: the name is taken
    assert rc == 2 and "already exists" in err


def test_two_sweeps_of_one_file_lose_nothing(notebook, tmp_path, capsys):
    from concurrent.futures import ThreadPoolExecutor
    from filelock import FileLock
    from contrastive_nb.runs import run_sweep
    runs, gate = tmp_path / "runs", tmp_path / "gate"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"notebook": str(notebook), "name": "s", "parameters": {"gate": str(gate)},
                                     "grid": {"tag": ["b"]}, "seeds": [0, 1], "parallel": 2, "retries": 0}))
    out = runs / "s"
    (out / ".dead.partial-999999-1").mkdir(parents=True)           # left by a killed run: its owner is gone
    (out / ".alive.partial-999998-1").mkdir()                       # a run in progress in another process (this one)
    (out / ".locks").mkdir()
    alive = FileLock(str(out / ".locks" / "alive.lock"))
    alive.acquire()
    first = _popen("sweep", sweep, "--root", runs, cwd=tmp_path)
    log = []
    try:
        _until(lambda: len(list(out.glob(".tag-b_seed-*.partial-*"))) == 2, "both runs of the first sweep to start")
        # a killed run's partial folder is kept (issue 46): the next run of that name resumes in it
        assert (out / ".dead.partial-999999-1").exists(), "the partial folder of a killed run was deleted"
        assert (out / ".alive.partial-999998-1").exists(), "a partial folder whose owner is alive was deleted"
        partials = sorted(p.name for p in out.glob(".tag-b_seed-*.partial-*"))
        rc, err = _main(capsys, "sweep", sweep, "--root", runs)
        assert rc == 2 and _one_sentence(err), err
        assert "already running in another process" in err and "--wait" in err
        assert sorted(p.name for p in out.glob(".tag-b_seed-*.partial-*")) == partials
        status = json.loads((out / "sweep_status.json").read_text())
        assert status["pending"] == ["tag-b_seed-0", "tag-b_seed-1"] and status["failed"] == []
        pool = ThreadPoolExecutor(1)
        waiting = pool.submit(run_sweep, sweep, runs, log=log.append, wait=True)       # a third sweep, with --wait
        _until(lambda: log, "the waiting sweep to say it waits")
        assert "waiting: sweep 's' is already running" in log[0] and not waiting.done()
    finally:
        gate.touch()
        o1, e1 = first.communicate(timeout=240)
    assert first.returncode == 0, o1[-2000:] + e1[-2000:]
    assert waiting.result(timeout=240) == {"tag-b_seed-0": "skipped", "tag-b_seed-1": "skipped"}
    assert "2 already done, running 0" in log[-1]                   # it waited, then found nothing missing
    alive.release()
    status = json.loads((out / "sweep_status.json").read_text())
    assert status["runs"] == {"tag-b_seed-0": "skipped", "tag-b_seed-1": "skipped"} and status["failed"] == []
    for s in (0, 1):                                                # both runs finished, visible, with their values
        run = out / f"tag-b_seed-{s}"
        assert json.loads((run / "status.json").read_text())["status"] == "ok"
        assert json.loads((run / "metrics.json").read_text()) == {"seed": s, "tag": "b"}
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [
        ".alive.partial-999998-1", ".dead.partial-999999-1", ".locks"]
    assert not list(out.glob("*.failed-*"))


def test_a_sweep_name_cannot_leave_the_root(notebook, tmp_path):
    from contrastive_nb.cli import main
    runs = tmp_path / "a" / "b" / "runs"
    for name, says in [("../../escape", "no path separators"), (str(tmp_path / "abs"), "no path separators"),
                       (".hidden", "must not start with '.'"), ("n" * 300, "300 bytes long")]:
        sweep = tmp_path / "sweep.yaml"
        sweep.write_text(yaml.safe_dump({"notebook": str(notebook), "name": name, "seeds": [0]}))
        assert main(["sweep", str(sweep), "--root", str(runs)]) == 2, name
        (tmp_path / "escape").mkdir(exist_ok=True)
    assert not (tmp_path / "a" / "escape").exists() and not (tmp_path / "abs").exists()
    assert not any((tmp_path / "escape").iterdir())
    assert not runs.exists() or not any(runs.iterdir())
    for name in ["../x", str(tmp_path / "abs"), ".hidden", "n" * 300]:          # the same rule for a run's --name
        assert main(["run", str(notebook), "--name", name, "--root", str(runs)]) == 2, name
    assert not runs.exists() or not any(runs.iterdir())
