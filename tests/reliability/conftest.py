"""The uninterrupted reference runs the scenarios compare against."""
import pytest

from scenario import run_many, worker_cmd


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    "Uninterrupted runs, made once: seed 0 with 0 and 2 loader workers (and seed 0 again, and seed 1)."
    root = tmp_path_factory.mktemp("reference")
    dirs = {"w0": root / "w0", "w2": root / "w2", "w0-again": root / "w0-again", "seed1": root / "seed1"}
    cmds = [worker_cmd(dirs["w0"]), worker_cmd(dirs["w2"], "--workers", 2), worker_cmd(dirs["w0-again"]),
            worker_cmd(dirs["seed1"], "--seed", 1)]
    for p, (k, d) in zip(run_many(cmds), dirs.items()):
        assert p.returncode == 0, f"reference run {k} failed:\n{p.stderr[-3000:]}"
    return dirs
