"""Faults around checkpoints and numbers: a process SIGKILLed while writing a checkpoint or `latest.json`; a
corrupt or truncated newest checkpoint; NaN/Inf in a loss or a gradient; a resume with changed settings or data,
or from an old format; a checkpoint that carries code instead of tensors. Each ends in a state that loads, with
the cause named, and (where it can resume) a run bitwise identical to the uninterrupted one."""
import json
import os
import pickle
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from scenario import assert_same_run, env, final_state, result, run, run_many, worker_cmd

from contrastive_nb.checkpoint import CheckpointError, load_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def _ckpt(d, u) -> Path:
    return Path(d) / "checkpoints" / f"ckpt-{u:09d}.pt"


def test_killed_while_writing_a_checkpoint_or_latest_leaves_the_previous_one_and_resumes_bitwise(reference, tmp_path):
    "Two runs at once: one stalls inside the write of ckpt-8.pt, one inside the write of latest.json that names it."
    runs = {what: tmp_path / what for what in ("checkpoint", "latest")}
    procs = {what: subprocess.Popen(worker_cmd(d, "--checkpoint-every", 4, "--slow-save", what, "--slow-save-at", 8),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env())
             for what, d in runs.items()}
    t0 = time.time()
    for what, d in runs.items():
        while not (d / "out" / "saving").exists():
            assert procs[what].poll() is None, f"{what}: ended before the stalled write:\n{procs[what].stderr.read()[-3000:]}"
            assert time.time() - t0 < 120, f"{what}: the stalled write never started"
            time.sleep(0.05)
        procs[what].send_signal(signal.SIGKILL)
    for what, p in procs.items():
        p.communicate(timeout=30)
        assert p.returncode == -9, what
    for what, d in runs.items():
        ck = d / "checkpoints"
        assert list(ck.glob(".*.tmp")), f"{what}: the killed write should have left its temporary file behind"
        assert load_checkpoint(ck)["updates"] == 4, what       # strict: latest.json names a complete file
        if what == "latest":                                    # ckpt-8 itself was complete, but never named
            assert _ckpt(d, 8).exists() and json.loads((ck / "latest.json").read_text())["updates"] == 4
    for (what, d), q in zip(runs.items(), run_many([worker_cmd(d) for d in runs.values()])):
        assert q.returncode == 0, (what, q.stderr[-3000:])
        assert not list((d / "checkpoints").glob(".*.tmp")), "stale temporary files are cleaned when the run starts"
        assert_same_run(reference["w0"], d)


def test_a_non_finite_loss_or_gradient_stops_with_the_update_term_and_batch_named(tmp_path):
    runs = {kind: tmp_path / kind for kind in ("loss", "inf-loss", "grad")}
    procs = run_many([worker_cmd(d, "--checkpoint-every", 4, "--nan", kind, "--nan-at", 6) for kind, d in runs.items()])
    for (kind, d), p in zip(runs.items(), procs):
        assert p.returncode == 3, (kind, p.stderr[-3000:])
        r = result(d)
        assert r["status"] == "nonfinite" and r["update"] == 6, kind
        assert "update 6" in r["message"] and "nt_xent" in r["message"] and r["term"].startswith("nt_xent"), r
        says = {"loss": "loss term 'nt_xent' is nan", "inf-loss": "loss term 'nt_xent' is inf",
                "grad": "non-finite gradient"}[kind]
        assert says in r["message"], r["message"]
        assert len(r["batch_ids"]["unlabeled"]) == 64 and len(r["batch_ids"]["labeled"]) == 10
        assert str(r["batch_ids"]["unlabeled"][:3])[1:-1] in r["message"]      # the ids are in the message itself
        st = load_checkpoint(d / "checkpoints")             # the last good checkpoint, untouched
        assert st["updates"] == 4 and not _ckpt(d, 6).exists() and not _ckpt(d, 8).exists()
        assert all(torch.isfinite(v).all() for v in st["model"].values())


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    "A run killed after update 10 with checkpoints every 4 (so at 4 and 8); copied per test."
    d = tmp_path_factory.mktemp("interrupted") / "run"
    assert run(worker_cmd(d, "--checkpoint-every", 4, "--kill-at", 10)).returncode == -9
    return d


def _copy(src: Path, dst: Path) -> Path:
    import shutil
    shutil.copytree(src, dst)
    return dst


def test_a_corrupt_newest_checkpoint_is_named_then_skipped_with_a_warning(reference, interrupted, tmp_path):
    runs = {damage: _copy(interrupted, tmp_path / damage) for damage in ("bit-flip", "truncate")}
    for damage, d in runs.items():
        newest = _ckpt(d, 8)
        data = bytearray(newest.read_bytes())
        if damage == "bit-flip":
            data[len(data) // 2] ^= 0x01
        else:
            data = data[: len(data) // 3]
        newest.write_bytes(bytes(data))
        with pytest.raises(CheckpointError) as e:
            load_checkpoint(d / "checkpoints")
        assert newest.name in str(e.value) and "checksum" in str(e.value), damage
    for (damage, d), q in zip(runs.items(), run_many([worker_cmd(d) for d in runs.values()])):
        assert q.returncode == 0, (damage, q.stderr[-3000:])
        assert "skipped checkpoint" in q.stderr and _ckpt(d, 8).name in q.stderr and _ckpt(d, 4).name in q.stderr
        assert_same_run(reference["w0"], d)                # resumed from update 4: the same run in the end


def test_a_changed_setting_or_dataset_is_refused_with_the_reason(interrupted, tmp_path):
    a, b = _copy(interrupted, tmp_path / "lr"), _copy(interrupted, tmp_path / "data")
    before = {d: sorted(p.name for p in (d / "checkpoints").iterdir()) for d in (a, b)}
    pa, pb = run_many([worker_cmd(a, "--lr", 0.3), worker_cmd(b, "--subset", 1000)])
    assert pa.returncode == 4 and pb.returncode == 4, (pa.stderr[-2000:], pb.stderr[-2000:])
    assert "configuration changed" in result(a)["message"] and "lr: 0.2 -> 0.3" in result(a)["message"]
    assert "refusing to resume" in result(b)["message"]
    assert "dataset differs" in result(b)["message"] or "labeled_sampler" in result(b)["message"]
    for d in (a, b):                                        # nothing was overwritten
        assert sorted(p.name for p in (d / "checkpoints").iterdir()) == before[d]
        assert final_state(d)["updates"] == 8


def test_a_changed_model_views_or_transform_is_refused_naming_the_change(interrupted, tmp_path):
    "Same shapes, another trajectory: ReLU -> Tanh, dropout 0 -> 0.5, other views, a dataset transform."
    changes = {"activation": (["--activation", "tanh"], """modules['encoder.net.2']: "ReLU()" -> "Tanh()\""""),
               "dropout": (["--dropout", 0.5], "modules['encoder.net.3']: \"Dropout(p=0.0, inplace=False)\" -> "
                                               "\"Dropout(p=0.5, inplace=False)\""),
               "views": (["--views-noise", 0.1], "views: \"Views(noise=0.05)\" -> \"Views(noise=0.1)\""),
               "transform": (["--scale", 0.5], "transforms['unlabeled']: null -> \"Scale(factor=0.5)\"")}
    dirs = {k: _copy(interrupted, tmp_path / k) for k in changes}
    for (k, (args, says)), p in zip(changes.items(), run_many([worker_cmd(dirs[k], *a) for k, (a, _) in changes.items()])):
        assert p.returncode == 4, (k, p.stderr[-2000:])
        msg = result(dirs[k])["message"]
        assert "configuration changed" in msg and says in msg, (k, msg)
        assert final_state(dirs[k])["updates"] == 8, k                    # nothing was overwritten


def test_a_checkpoint_cut_before_its_sidecar_restarts_or_resumes_bitwise(reference, tmp_path):
    "Killed after the .pt is in place, before its sidecar: the first checkpoint (update 4) or a later one (8)."
    runs = {u: tmp_path / f"cut-{u}" for u in (4, 8)}
    for p in run_many([worker_cmd(d, "--checkpoint-every", 4, "--cut-sidecar-at", u) for u, d in runs.items()]):
        assert p.returncode == -9, p.stderr[-2000:]
    for u, d in runs.items():
        assert _ckpt(d, u).exists() and not _ckpt(d, u).with_suffix(".json").exists()
    says = {4: "the run starts again from update 0", 8: "removed ['ckpt-000000008.pt']"}
    for (u, d), q in zip(runs.items(), run_many([worker_cmd(d) for d in runs.values()])):
        assert q.returncode == 0, (u, q.stderr[-3000:])
        assert says[u] in q.stderr, (u, q.stderr[-2000:])
        assert_same_run(reference["w0"], d)


def _rewrite(ckpt_dir: Path, path: Path, data: bytes):
    "Replace a checkpoint's bytes and record their true checksum, as an attacker with write access could."
    import hashlib
    path.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    for meta_path in (path.with_suffix(".json"), ckpt_dir / "latest.json"):
        meta = json.loads(meta_path.read_text())
        if meta["path"] == path.name:
            meta["sha256"], meta["bytes"] = sha, len(data)
            meta_path.write_text(json.dumps(meta))


def test_an_old_checkpoint_format_is_refused(interrupted, tmp_path):
    d = _copy(interrupted, tmp_path / "old")
    ck = d / "checkpoints"
    for u in (4, 8):
        st = torch.load(_ckpt(d, u), weights_only=True)
        st["format"] = 1
        import io
        buf = io.BytesIO(); torch.save(st, buf)
        _rewrite(ck, _ckpt(d, u), buf.getvalue())
    p = run(worker_cmd(d))
    assert p.returncode == 4, p.stderr[-2000:]
    assert "has format 1" in result(d)["message"] and "new run folder" in result(d)["message"]


class _Payload:
    "Unpickling this runs a command: what a checkpoint from an untrusted source can carry."
    def __init__(self, marker): self.marker = str(marker)
    def __reduce__(self): return (os.system, (f"touch {self.marker}",))


def test_a_checkpoint_carrying_code_is_never_executed(interrupted, tmp_path):
    d = _copy(interrupted, tmp_path / "foreign")
    ck, marker = d / "checkpoints", tmp_path / "code-ran"
    evil = _ckpt(d, 8)
    _rewrite(ck, evil, pickle.dumps({"model": _Payload(marker)}))
    with pytest.raises(CheckpointError) as e:               # the checksum matches: the loader itself must refuse
        load_checkpoint(ck)
    assert evil.name in str(e.value) and "safely" in str(e.value)
    # torch.save's zip format with the same payload
    torch.save({"model": _Payload(marker)}, evil)
    _rewrite(ck, evil, evil.read_bytes())
    with pytest.raises(CheckpointError):
        load_checkpoint(ck)
    p = run(worker_cmd(d))                                  # resuming skips it (named) and goes on from update 4
    assert p.returncode == 0, p.stderr[-3000:]
    assert evil.name in p.stderr and "could not be loaded safely" in p.stderr
    assert not marker.exists(), "the checkpoint's code ran"


def test_the_library_loads_only_tensors():
    "Every torch.load call in the library passes weights_only=True (found by parsing, not by grep)."
    import ast
    calls = []
    for f in sorted((ROOT / "contrastive_nb").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"):
                safe = any(k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                           for k in node.keywords)
                calls.append((f.name, node.lineno, safe))
    assert calls, "expected torch.load calls to check"
    assert all(safe for _, _, safe in calls), [c for c in calls if not c[2]]


def test_exported_weights_are_safetensors_and_a_pickle_is_not_accepted_as_weights(tmp_path):
    from safetensors import safe_open
    from contrastive_nb.checkpoint import export_weights, load_weights
    model = torch.nn.Linear(4, 3)
    path = export_weights(model, tmp_path / "model.safetensors", {"run": "test"})
    with safe_open(str(path), "pt") as f:                   # a safetensors header and tensors, nothing else
        assert set(f.keys()) == {"weight", "bias"} and f.metadata() == {"run": "test"}
    assert not path.read_bytes().startswith((b"PK", b"\x80"))  # neither torch's zip nor a raw pickle
    other = load_weights(torch.nn.Linear(4, 3), path)
    assert torch.equal(other.weight, model.weight)
    marker = tmp_path / "code-ran"
    torch.save({"weight": _Payload(marker)}, tmp_path / "evil.safetensors")
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        load_weights(torch.nn.Linear(4, 3), tmp_path / "evil.safetensors")
    assert not marker.exists()
