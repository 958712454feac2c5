"""Helpers for the reliability scenarios (imported as `scenario`): run `worker.py` in fresh processes (two at a time), compare runs."""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.py"


def worker_cmd(run_dir, *args, torchrun: int | None = None, max_restarts: int = 0) -> list:
    base = [sys.executable]
    if torchrun:
        base += ["-m", "torch.distributed.run", "--nproc-per-node", str(torchrun), "--max-restarts", str(max_restarts),
                 "--standalone", "--monitor-interval", "0.5"]
    run_dir = Path(run_dir)
    return base + [str(WORKER), "--run-dir", str(run_dir), "--out", str(run_dir / "out"), *map(str, args)]


def env():
    e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    e.pop("WORLD_SIZE", None)
    return e


def run(cmd, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env())


def run_many(cmds, timeout=240) -> list:
    "Run the commands two at a time (this machine has 2 cores); results in order."
    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(lambda c: run(c, timeout), cmds))


def result(run_dir, rank=0) -> dict:
    return json.loads((Path(run_dir) / "out" / f"result-rank{rank}.json").read_text())


def final_state(run_dir) -> dict:
    from contrastive_nb.checkpoint import load_checkpoint
    return load_checkpoint(Path(run_dir) / "checkpoints")


def assert_identical(a, b, path="state"):
    "Recursive bitwise equality of two checkpoint states (tensors with torch.equal)."
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), f"{path} differs"
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            assert_identical(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_identical(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


TRAJECTORY = ["model", "optimizer", "scheduler", "scaler", "epoch", "step", "updates", "labeled_batches", "ledger",
              "step_log", "config_sha256", "data"]


def assert_same_run(run_a, run_b, draws=True, ranks=1):
    "Same weights, optimiser/schedule/scaler state, per-update losses and batch ids, history; same RNG afterwards."
    a, b = final_state(run_a), final_state(run_b)
    for k in TRAJECTORY:
        assert_identical(a[k], b[k], k)
    strip = lambda hs: [{k: v for k, v in h.items() if k != "seconds"} for h in hs]
    assert strip(a["history"]) == strip(b["history"])
    if draws:
        for r in range(ranks):
            assert result(run_a, r)["draws"] == result(run_b, r)["draws"], f"rank {r}: RNG draws after fit differ"


def write_notebook(path, parameters: str, body: str) -> Path:
    "A notebook with a `parameters` cell (`parameters`: its source) and one more code cell (`body`)."
    import nbformat
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return Path(path)


def cli_env():
    "The scenarios' environment with this Python's folder first on PATH (the notebook kernel is this Python)."
    e = env()
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e["PATH"]
    return e
