"""Resume anywhere: a run SIGKILLed mid-epoch, at an epoch boundary or at the first step of epoch 2 — with 0 and 2
data-loader workers — and resumed in a fresh process ends bitwise identical to the uninterrupted run: weights,
optimiser/schedule/scaler state, the per-update losses, the items of every batch, and the RNG draws afterwards.
Also: two runs with the same seed are identical; another seed differs; loader workers do not change the run."""
import pytest

from scenario import assert_same_run, final_state, result, run_many, worker_cmd

# 1437 digits / batch 64 = 22 updates per epoch, 3 epochs. (checkpoint_every, kill after update, resumes from)
KILLS = {"mid-epoch": (4, 10, 8), "epoch-boundary": (None, 24, 22), "first-step-of-epoch-2": (23, 23, 23)}


def test_same_seed_is_bitwise_identical_and_another_seed_differs(reference):
    assert_same_run(reference["w0"], reference["w0-again"])
    a, b = final_state(reference["w0"]), final_state(reference["seed1"])
    assert not all(__import__("torch").equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert a["step_log"]["ids"] != b["step_log"]["ids"]


def test_loader_workers_do_not_change_the_run(reference):
    assert_same_run(reference["w0"], reference["w2"])


@pytest.mark.parametrize("workers", [0, 2])
def test_killed_anywhere_resumes_bitwise(reference, tmp_path, workers):
    runs = {name: tmp_path / name for name in KILLS}
    killed = run_many([worker_cmd(d, "--workers", workers, *(["--checkpoint-every", KILLS[n][0]] if KILLS[n][0] else []),
                                  "--kill-at", KILLS[n][1]) for n, d in runs.items()])
    for (name, d), p in zip(runs.items(), killed):
        assert p.returncode == -9, f"{name}: expected SIGKILL, got {p.returncode}\n{p.stderr[-2000:]}"
        st = final_state(d)
        assert st["updates"] == KILLS[name][2], (name, st["updates"])
    # where each resumes from: inside epoch 1 (step 8), the boundary (epoch 2, step 0), epoch 2 after its first step
    where = {n: (final_state(d)["epoch"], final_state(d)["step"]) for n, d in runs.items()}
    assert where == {"mid-epoch": (0, 8), "epoch-boundary": (1, 0), "first-step-of-epoch-2": (1, 1)}, where
    resumed = run_many([worker_cmd(d, "--workers", workers) for d in runs.values()])
    for (name, d), p in zip(runs.items(), resumed):
        assert p.returncode == 0, f"{name}: resume failed\n{p.stderr[-3000:]}"
        assert result(d)["status"] == "done"
        assert_same_run(reference["w0"], d)
