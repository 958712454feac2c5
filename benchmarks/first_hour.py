"""A newcomer's first hour, timed: a fresh clone of this checkout's HEAD, then the README's setup and its two commands.

    python benchmarks/first_hour.py                 # clone HEAD into a temporary folder; time make setup, run, test
    python benchmarks/first_hour.py --skip-test     # setup and run only

Each command runs as a newcomer runs it, from the fresh clone's root with a clean environment except PATH and HOME
(the machine's CPU count is what it is; nothing is pinned). What this machine already had is recorded beside the
times, not hidden: pip's cache (the CUDA build of torch is large), Chromium and Debian's dataset-fashion-mnist (the
setup and `make test` install them where missing), and the load average. Writes `--out` (default
`nbs/results/first_hour/timings.json`), from which the README states the two commands' times, and records the file's
provenance: the commit measured is the clone's, the versions those of the clone's own `.venv`. Not a test: the
README's times come from here, never typed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pytest_counts(text: str) -> dict:
    """passed / failed / skipped / errors of the last pytest summary line in `text` (`make test` runs pytest twice:
    a sync check first, then the whole suite, which includes that file again)."""
    lines = [l for l in text.splitlines() if re.search(r"\d+ (passed|failed|error)", l) and re.search(r" in [\d.]+s", l)]
    last = lines[-1] if lines else ""
    return {k: sum(int(n) for n in re.findall(rf"(\d+) {k}\b", last)) for k in ("passed", "failed", "skipped", "errors")}


def already_here() -> dict:
    "What this machine had before the setup ran: pip's cache, Chromium, Fashion-MNIST, the load average."
    pip_cache = Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"))
    size = sum(f.stat().st_size for f in pip_cache.rglob("*") if f.is_file()) if pip_cache.exists() else 0
    return {"pip_cache_mb": round(size / 2**20), "chromium": Path("/usr/bin/chromium").exists(),
            "dataset_fashion_mnist": Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").exists(),
            "load_average_1min": round(os.getloadavg()[0], 2)}


def timed(cmd: list, cwd: Path, log: Path) -> dict:
    "Run `cmd` in `cwd`, its output into `log`; its seconds, exit status and the pytest counts it printed."
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TERM") if k in os.environ}
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.time() - t0
    text = log.read_text(errors="replace")
    return {"command": " ".join(cmd), "seconds": round(seconds, 1), "returncode": rc, "pytest": pytest_counts(text),
            "load_average_1min_after": round(os.getloadavg()[0], 2)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-test", action="store_true", help="time setup and `make run` only")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its logs (printed)")
    ap.add_argument("--out", help="default: nbs/results/first_hour/timings.json (with --skip-test: required)")
    a = ap.parse_args(argv)
    if a.out is None:
        if a.skip_test:
            ap.error("with --skip-test pass --out: the default file holds the full measurement the README reads")
        a.out = str(ROOT / "nbs" / "results" / "first_hour" / "timings.json")
    sys.path.insert(0, str(ROOT))
    from contrastive_nb.runs import git_commit, write_provenance

    work = Path(tempfile.mkdtemp(prefix="first-hour-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    head = git_commit(clone)  # the commit measured, taken before anything runs in the clone
    if head is None:
        sys.exit(f"git could not name the commit of the clone {clone}")
    before = already_here()
    steps = [("setup", ["make", "setup"]), ("run", ["make", "run"])] + ([] if a.skip_test else [("test", ["make", "test"])])
    out = {"what": "a fresh clone: make setup, then make run, then make test (the README's order)",
           "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "cpus": os.cpu_count(), "already_here": before, "steps": {}}
    out["caches"] = (f"pip's cache {before['pip_cache_mb']} MB"
                     + ", Chromium" * before["chromium"] + ", dataset-fashion-mnist" * before["dataset_fashion_mnist"]
                     + " already on the machine")
    for name, cmd in steps:
        r = out["steps"][name] = timed(cmd, clone, work / f"{name}.log")
        print(f"{name}: {r['seconds']:.0f} s, exit {r['returncode']}, pytest {r['pytest']}", flush=True)
        if r["returncode"] != 0:
            print((work / f"{name}.log").read_text(errors="replace")[-3000:], file=sys.stderr)
            break
    ok = all(r["returncode"] == 0 for r in out["steps"].values()) and len(out["steps"]) == len(steps)
    if ok:  # a failed command is printed, not published
        # where it was measured: the clone's commit and its own .venv's versions (not this interpreter's)
        probe = ("import json; from contrastive_nb.runs import run_environment; "
                 "print(json.dumps(run_environment('.')))")
        env = json.loads(subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", probe], cwd=clone,
                                        capture_output=True, text=True, check=True).stdout) | {"commit": head}
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(a.out).with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        os.replace(tmp, a.out)
        write_provenance(a.out, {"script": "benchmarks/first_hour.py",
                                 "arguments": {"skip_test": a.skip_test}}, env)
        print(f"wrote {a.out} (commit {env['commit']})")
    if a.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
