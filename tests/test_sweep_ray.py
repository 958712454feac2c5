"""`contrastive-nb sweep --backend ray` hands its runs to an existing Ray cluster: a local Ray head on loopback."""
import contextlib
import json
import socket
import shutil
import subprocess
import tempfile

import pytest

from helpers import BIN, tool
from test_sweep import TINY, write_sweep


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


START_TRIES = 3


@pytest.fixture
def ray_head(env):
    """A Ray head on loopback. On a loaded machine (load 12-15 on a fresh clone's `make test`) `ray start` has failed
    to bring its head up in time, so the timeouts are long and a failed start is retried, each try on a fresh port and
    temp dir with the failed head's processes stopped first; the reasons of every failed try are kept for the message."""
    # a loaded machine starts the dashboard agent slowly: give the raylet longer than its 15 s to see it, and the
    # GCS client longer than its 60 s to reach the GCS
    e = {**env, "RAY_USAGE_STATS_ENABLED": "0", "RAY_agent_register_timeout_ms": "120000",
         "RAY_gcs_server_request_timeout_seconds": "180"}
    ray, reasons, started = str(BIN / "ray"), [], None
    for _ in range(START_TRIES):
        port = _free_port()
        short = tempfile.mkdtemp(prefix="ray", dir="/tmp")      # Ray's unix sockets need a path under 107 bytes
        try:
            r = subprocess.run([ray, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                                "--num-cpus=2", "--num-gpus=0", "--include-dashboard=false", "--disable-usage-stats",
                                f"--temp-dir={short}"], env=e, capture_output=True, text=True, timeout=300)
            ok, why = r.returncode == 0, (r.stdout[-1500:] + r.stderr[-1500:])
        except subprocess.TimeoutExpired:
            ok, why = False, "`ray start` took over 300 s"
        if ok:
            started = short
            break
        reasons.append(why)       # a raylet that timed out leaves the GCS and agents running: stop them first
        _stop_head(short)
        shutil.rmtree(short, ignore_errors=True)
    assert started, f"the Ray head did not start in {START_TRIES} tries:\n" + "\n---\n".join(reasons)
    try:
        yield f"127.0.0.1:{port}", e
    finally:
        _stop_head(started)
        shutil.rmtree(started, ignore_errors=True)


def _stop_head(temp_dir: str):
    "Stop this head's processes only (each names its temp dir), not every Ray process on a shared machine."
    import psutil
    mine = [p for p in psutil.process_iter(["cmdline"]) if temp_dir in " ".join(p.info["cmdline"] or [])]
    for p in mine:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    _, alive = psutil.wait_procs(mine, timeout=5)          # the ones that ignore SIGTERM are killed below
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()


def test_sweep_on_local_ray_cluster(tmp_path, ray_head):
    address, e = ray_head
    sweep = write_sweep(tmp_path / "sweep.yaml", {"labeled_fraction": [0.1]}, name="r", parallel=2)
    r = subprocess.run([tool("contrastive-nb"), "sweep", str(sweep), "--root", str(tmp_path / "runs"),
                        "--backend", "ray", "--ray-address", address], cwd=tmp_path, env=e, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "(ray)" in r.stdout
    st = json.loads((tmp_path / "runs" / "r" / "sweep_status.json").read_text())
    assert st["runs"] == {"labeled_fraction-0.1_seed-0": "ok", "labeled_fraction-0.1_seed-1": "ok"}
    for run in st["runs"]:
        assert json.loads((tmp_path / "runs" / "r" / run / "metrics.json").read_text())["epochs"] == TINY["epochs"]
