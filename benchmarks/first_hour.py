"""A newcomer's first hour, timed: a fresh clone of this checkout's HEAD, then the README's setup and its two commands.

    python benchmarks/first_hour.py                 # clone HEAD into a temporary folder; time make setup, run, test
    python benchmarks/first_hour.py --skip-test     # setup and run only

Each command runs as a newcomer runs it, from the fresh clone's root with a clean environment except PATH and HOME
(the machine's CPU count is what it is; nothing is pinned). Writes `--out` (default
`nbs/results/first_hour/timings.json`), from which the README states the two commands' times, and records the file's
provenance (the commit measured is the clone's). Not a test: the README's times come from here, never typed.
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


def timed(cmd: list, cwd: Path, log: Path) -> dict:
    "Run `cmd` in `cwd`, its output into `log`; its seconds, exit status and the pytest counts it printed."
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TERM") if k in os.environ}
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.time() - t0
    text = log.read_text(errors="replace")
    counts = {k: sum(int(n) for n in re.findall(rf"(\d+) {k}\b", text)) for k in ("passed", "failed", "skipped")}
    return {"command": " ".join(cmd), "seconds": round(seconds, 1), "returncode": rc, "pytest": counts}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-test", action="store_true", help="time setup and `make run` only")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its logs (printed)")
    ap.add_argument("--out", default=str(ROOT / "nbs" / "results" / "first_hour" / "timings.json"))
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from contrastive_nb.runs import run_environment, write_provenance

    work = Path(tempfile.mkdtemp(prefix="first-hour-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    env = run_environment(clone)  # the commit measured: the clone's HEAD
    steps = [("setup", ["make", "setup"]), ("run", ["make", "run"])] + ([] if a.skip_test else [("test", ["make", "test"])])
    out = {"what": "a fresh clone: make setup, then make run, then make test (the README's order)",
           "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "cpus": os.cpu_count(), "steps": {}}
    for name, cmd in steps:
        r = out["steps"][name] = timed(cmd, clone, work / f"{name}.log")
        print(f"{name}: {r['seconds']:.0f} s, exit {r['returncode']}, pytest {r['pytest']}", flush=True)
        if r["returncode"] != 0:
            print((work / f"{name}.log").read_text(errors="replace")[-3000:], file=sys.stderr)
            break
    ok = all(r["returncode"] == 0 for r in out["steps"].values()) and len(out["steps"]) == len(steps)
    if ok:  # a failed command is printed, not published
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
