"""`publish_sweep` never deletes what it did not write and changes nothing in DEST until everything is read and
checked (issue 46): a provenance.json naming a user's file, `..`, a JSON list or `write_provenance`'s mapping; a
publish killed anywhere leaves DEST all-old or all-new once the next publish has run, and no `.publish-*` leftovers;
a special file among a run's outputs is refused, not read for ever; run files edited after the run are refused;
the digest of every run file read and of every file published is recorded."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenario import env, write_notebook

from contrastive_nb.core import atomic_write_json
from contrastive_nb.runs import publish_sweep, run_notebook


def _sweep(tmp_path, acc=0.5):
    nb = tmp_path / "nb.ipynb"
    if not nb.exists():
        write_notebook(nb, 'seed = 0\nout_dir = "."', "pass")
    sf = tmp_path / "s.yaml"
    sf.write_text("notebook: nb.ipynb\nname: s\nseeds: [0, 1]\n")
    for seed in (0, 1):
        d = tmp_path / "runs" / "s" / f"seed-{seed}"
        d.mkdir(parents=True, exist_ok=True)
        atomic_write_json(d / "parameters.json", {"notebook": str(nb), "parameters": {"seed": seed, "out_dir": "."}})
        atomic_write_json(d / "status.json", {"status": "ok", "seconds": 1.0, "commit": "abc1234"})
        atomic_write_json(d / "metrics.json", {"acc": acc + seed})
    return sf


def _files(dest: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(dest.iterdir())}


def _publish(tmp_path, dest):
    return publish_sweep(tmp_path / "s.yaml", dest, root=tmp_path / "runs")


def test_a_users_file_named_in_provenance_is_never_deleted(tmp_path):
    sf, dest = _sweep(tmp_path), tmp_path / "dest"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    (dest / "provenance.json").write_text(json.dumps({"sweep": "s.yaml", "files": ["notes.txt"]}))
    with __import__("warnings").catch_warnings(record=True) as w:
        __import__("warnings").simplefilter("always")
        _publish(tmp_path, dest)
    assert (dest / "notes.txt").read_text() == "mine"          # today's code deletes it
    assert any("notes.txt" in str(x.message) for x in w)       # left, with a warning saying why


@pytest.mark.parametrize("prov, says", [
    ({"files": [".."]}, "plain file names"),
    ({"files": ["../outside.txt"]}, "plain file names"),
    (["a", "list"], "holds a JSON list"),
    ({"files": {"bench.csv": {"script": "b.py"}}}, "write_provenance"),
    ({"files": ["results.parquet"], "notebook": "t.ipynb"}, "not a sweep's provenance"),   # a tutorial's results
])
def test_a_provenance_it_cannot_use_is_refused_before_dest_changes(tmp_path, prov, says):
    sf, dest = _sweep(tmp_path), tmp_path / "dest"
    dest.mkdir()
    (tmp_path / "outside.txt").write_text("keep")
    (dest / "results.parquet").write_bytes(b"old table")
    (dest / "provenance.json").write_text(json.dumps(prov))
    before = _files(dest)
    with pytest.raises(ValueError, match=says):
        _publish(tmp_path, dest)
    assert _files(dest) == before and (tmp_path / "outside.txt").read_text() == "keep"


def test_a_file_in_the_way_or_edited_after_publishing_is_refused(tmp_path):
    sf, dest = _sweep(tmp_path), tmp_path / "dest"
    dest.mkdir()
    (dest / "summary.csv").write_text("a user's own table")            # no publish wrote it
    with pytest.raises(ValueError, match="summary.csv is in the way"):
        _publish(tmp_path, dest)
    assert (dest / "summary.csv").read_text() == "a user's own table"
    (dest / "summary.csv").unlink()
    _publish(tmp_path, dest)
    (dest / "summary.csv").write_text("edited by hand")
    with pytest.raises(ValueError, match="summary.csv was edited after it was published"):
        _publish(tmp_path, dest)
    assert (dest / "summary.csv").read_text() == "edited by hand"


def test_digests_of_run_files_and_published_files_are_recorded(tmp_path):
    sf, dest = _sweep(tmp_path), tmp_path / "dest"
    prov = _publish(tmp_path, dest)
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    run = tmp_path / "runs" / "s" / "seed-1"
    assert prov["runs"]["sha256"]["seed-1"]["metrics.json"] == sha(run / "metrics.json")
    assert prov["sha256"]["results.parquet"] == sha(dest / "results.parquet")
    assert json.loads((dest / "provenance.json").read_text())["sha256"] == prov["sha256"]


def test_a_run_file_edited_after_the_run_is_refused(tmp_path):
    "A real run records its files' digests in status.json as it ends; a score edited afterwards is not published."
    nb = write_notebook(tmp_path / "nb.ipynb", 'seed = 0\nout_dir = "."',
                        "import json; json.dump({'acc': 0.5}, open('metrics.json', 'w'))")
    _sweep(tmp_path)
    for seed in (0, 1):
        (tmp_path / "runs" / "s" / f"seed-{seed}" / "status.json").unlink()
        os.rename(tmp_path / "runs" / "s" / f"seed-{seed}", tmp_path / f"old-{seed}")
    run_notebook(nb, "seed-0", {"seed": 0}, root=tmp_path / "runs" / "s")
    os.rename(tmp_path / "old-1", tmp_path / "runs" / "s" / "seed-1")
    atomic_write_json(tmp_path / "runs" / "s" / "seed-1" / "status.json",
                      json.loads((tmp_path / "runs" / "s" / "seed-0" / "status.json").read_text()) | {"outputs": {}})
    (tmp_path / "runs" / "s" / "seed-0" / "metrics.json").write_text('{"acc": 999}')
    with pytest.raises(ValueError, match="seed-0/metrics.json was changed or removed after its run ended"):
        _publish(tmp_path, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_a_special_file_among_run_outputs_is_refused_not_read_for_ever(tmp_path):
    "A FIFO (no writer) blocks a plain read for ever; a link to /dev/zero reads for ever (see 00_core's check)."
    _sweep(tmp_path)
    m = tmp_path / "runs" / "s" / "seed-0" / "metrics.json"
    m.unlink()
    os.mkfifo(m)
    code = ("import sys; from pathlib import Path; from contrastive_nb.runs import publish_sweep\n"
            "try:\n    publish_sweep(sys.argv[1], sys.argv[2], root=sys.argv[3])\n"
            "except ValueError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.yaml"), str(tmp_path / "dest"),
                        str(tmp_path / "runs")], capture_output=True, text=True, timeout=120, env=env())
    assert "metrics.json is not a regular file" in p.stdout, p.stdout + p.stderr[-2000:]


KILL = """
import os, signal, sys
from contrastive_nb.runs import publish_sweep
real, calls, at = os.replace, [0], int(sys.argv[4])
def replace(a, b):
    calls[0] += 1
    if calls[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(a, b)
os.replace = replace
publish_sweep(sys.argv[1], sys.argv[2], root=sys.argv[3])
"""


def test_a_publish_killed_anywhere_ends_all_old_or_all_new_after_the_next(tmp_path):
    """os.replace calls of a publish: 3 tables into the sweep folder, the staged provenance, the journal, then the
    three files into DEST (results.parquet, summary.csv, provenance.json). Killed at the journal or between the moves,
    the next publish (its first step, `_finish_publish`) leaves DEST all-old or all-new and no hidden leftovers."""
    from contrastive_nb.runs import _finish_publish
    sf, dest = _sweep(tmp_path, acc=0.1), tmp_path / "dest"
    _publish(tmp_path, dest)
    old = _files(dest)
    _sweep(tmp_path, acc=0.7)
    new_dest = tmp_path / "new"
    _publish(tmp_path, new_dest)
    new = _files(new_dest)
    assert old != new
    args = [sys.executable, "-c", KILL, str(sf), str(dest), str(tmp_path / "runs")]
    outcomes = []
    for at in (5, 6, 7):          # the journal's write, the first and the second file moved in
        for p in dest.iterdir():
            p.unlink() if p.is_file() else __import__("shutil").rmtree(p)
        for k, v in old.items():
            (dest / k).write_bytes(v)
        p = subprocess.run(args + [str(at)], capture_output=True, text=True, timeout=120, env=env(), cwd=tmp_path)
        assert p.returncode == -9, p.stderr[-2000:]
        _finish_publish(dest)
        got = _files(dest)
        assert got in (old, new), (at, sorted(got))
        outcomes.append("old" if got == old else "new")
    assert outcomes == ["old", "new", "new"], outcomes     # before / after the journal
