"""Execute the notebooks in place and check that their saved outputs are current (`make notebooks`).

    python docs/notebooks.py run [NOTEBOOK ...] [--lib | --tutorials]   # execute in place (default: every notebook)
    python docs/notebooks.py check [NOTEBOOK ...]                       # exit 1 when outputs are missing or stale

How a notebook is executed:
* a library notebook (`nbs/*.ipynb`, `index` included): top to bottom in a fresh kernel (nbclient), in `nbs/`, with
  `CONTRASTIVE_NB_HEADLESS=1` (explorers save their static image) and this checkout first on `PYTHONPATH`; cells
  that `nbdev_test` skips (`#| slow`, `#| cuda` — the `tst_flags` of settings.ini — `#| eval: false`) are skipped
  and saved without outputs.
* a tutorial (`nbs/tutorials/*.ipynb`): at its defaults with papermill through `contrastive_nb.runs.run_notebook`,
  i.e. as `contrastive-nb run` does, into `runs/notebooks/<name>-<time>/`; the executed notebook is written back in
  place, and the inputs of its results tables — every top-level `*.json`, `*.csv` and `*.parquet` of the run folder
  up to 1 MiB, except embedding tables and the run's own bookkeeping — are copied into `nbs/results/<name>/`
  with a `provenance.json`.

Its saved widget state is dropped unless an output shows a widget (its keys are random model ids: kept, it
would change on every execution). Then the notebook is cleaned as `nbdev_clean` cleans it, and every executed
code cell gets the cell metadata

    "executed": {"code": <hash of this cell's code and of every executed code cell above it>,
                 "outputs": <hash of its outputs>}

(16 hex digits of SHA-256 each; `executed` is in `allowed_cell_metadata_keys`, so nbdev_clean keeps it). `check`
recomputes both: a code cell without the record (never executed, or added later), a cell whose code — or the code
of a cell above it — changed since, and outputs that were cleared or edited by hand are each reported by cell.
Prose (Markdown cells) can change freely. The hashes cannot see a change in the library a notebook imports;
re-run `make notebooks` after such a change.

A notebook is written back only when it executed without error and was not edited meanwhile (then nothing is
overwritten and the run says so); a failed run leaves the source untouched.
"""
from __future__ import annotations

import argparse
import configparser
import contextlib
import copy
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
KEY = "executed"
RESULT_SUFFIXES = (".json", ".csv", ".parquet", ".png")  # figures are published beside the tables
RESULT_SKIP = re.compile(r"^(parameters|status)\.json$|^embeddings.*\.parquet$")
RESULT_MAX_BYTES = 1 << 20
_DIRECTIVE = re.compile(r"^\s*#\|\s*(.*?)\s*$")


# ---------------------------------------------------------------- which notebooks, which cells

def settings(root: Path = ROOT) -> configparser.SectionProxy:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(root / "settings.ini")
    return cfg["DEFAULT"]


def all_notebooks(root: Path = ROOT, which: str = "all") -> list[Path]:
    "The notebooks `make notebooks` executes: `lib` (nbs/*.ipynb), `tutorials` (nbs/tutorials/*.ipynb) or `all`."
    nbs = root / settings(root).get("nbs_path", "nbs")
    lib = sorted(p for p in nbs.glob("*.ipynb") if not p.name.startswith(("_", ".")))
    tut = sorted(p for p in nbs.glob("tutorials/*.ipynb") if not p.name.startswith(("_", ".")))
    return {"lib": lib, "tutorials": tut, "all": lib + tut}[which]


def is_tutorial(path: Path) -> bool:
    return path.parent.name == "tutorials"


def directives(source: str) -> dict:
    "The leading `#| ...` lines of a cell: `{'slow': True, 'eval': 'false', ...}`."
    out = {}
    for line in source.splitlines():
        m = _DIRECTIVE.match(line)
        if not m:
            break
        key, sep, value = m.group(1).partition(":")
        out[key.strip()] = value.strip().lower() if sep else True
    return out


def strip_directives(source: str) -> str:
    "The code of a cell without its leading `#| ...` lines (what a reader of the docs or README sees)."
    lines = source.splitlines()
    i = 0
    while i < len(lines) and _DIRECTIVE.match(lines[i]):
        i += 1
    return "\n".join(lines[i:])


def skipped(cell, path: Path, flags: set[str]) -> bool:
    "True for a code cell the runner does not execute: in a library notebook, the cells `nbdev_test` skips."
    if cell.cell_type != "code" or is_tutorial(path):
        return False
    d = directives(cell.source)
    return bool(flags & set(d)) or d.get("eval") == "false" or "nbdev_export" + "(" in cell.source


def _flags(root: Path) -> set[str]:
    return set(settings(root).get("tst_flags", "").split())


# ---------------------------------------------------------------- the record

def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _clean(nb, root: Path) -> None:
    "What `nbdev_clean` does to a notebook, with this project's settings (in place)."
    from nbdev.clean import clean_nb
    s = settings(root)
    clean_nb(nb, clear_all=False, allowed_metadata_keys=s.get("allowed_metadata_keys", "").split(),
             allowed_cell_metadata_keys=s.get("allowed_cell_metadata_keys", "").split(),
             clean_ids=s.get("clean_ids", "True").lower() == "true")


def outputs_hash(outputs) -> str:
    "Hash of a cell's outputs as nbdev_clean leaves them (execution counts and object ids removed)."
    cell = {"cell_type": "code", "source": "", "metadata": {}, "outputs": copy.deepcopy(list(outputs)),
            "execution_count": None}
    from nbdev.clean import _clean_cell_output
    _clean_cell_output(cell, True)
    return _h(json.dumps(cell["outputs"], sort_keys=True, ensure_ascii=False))


def expected_records(nb, path: Path, flags: set[str]) -> list[tuple[int, dict | None]]:
    "For every code cell (index, record it must carry, or None when it is skipped)."
    chain, out = "", []
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        if skipped(c, path, flags):
            out.append((i, None)); continue
        chain = _h(chain + "\0" + c.source)
        out.append((i, {"code": chain, "outputs": outputs_hash(c.get("outputs", []))}))
    return out


def stamp(nb, path: Path, flags: set[str]) -> None:
    "Record, on every executed code cell, the hashes of the code that produced its outputs and of the outputs."
    for i, rec in expected_records(nb, path, flags):
        cell = nb.cells[i]
        if rec is None:
            cell.metadata.pop(KEY, None)
            cell.outputs = []
        else:
            cell.metadata[KEY] = rec


def check(path: Path, root: Path = ROOT) -> list[str]:
    "What is missing or stale in the saved outputs of the notebook at `path` (empty when they are current)."
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    recs = expected_records(nb, path, _flags(root))
    if recs and not any(KEY in nb.cells[i].metadata for i, _ in recs):
        return ["it has never been executed by `make notebooks` (no code cell carries an `executed` record)"]
    problems = []
    for n, (i, want) in enumerate(recs):
        cell, label = nb.cells[i], f"code cell {n + 1} (cell {i + 1}, id {nb.cells[i].get('id', '?')})"
        have = cell.metadata.get(KEY)
        if want is None:
            if cell.get("outputs"):
                problems.append(f"{label} is skipped by `make notebooks` (a test flag) but has saved outputs")
            continue
        if not isinstance(have, dict):
            problems.append(f"{label} was not executed (added after the last `make notebooks`?)")
        elif have.get("code") != want["code"]:
            problems.append(f"{label}: its code, or the code of a cell above it, changed after it was executed")
        elif have.get("outputs") != want["outputs"]:
            problems.append(f"{label}: its outputs differ from the ones it produced (cleared or edited)")
    return problems


# ---------------------------------------------------------------- running

@contextlib.contextmanager
def _kernel_env(root: Path):
    """The environment the kernels inherit: headless explorers, this checkout's library first on PYTHONPATH, this
    Python's tools first on PATH. Restored afterwards."""
    saved = dict(os.environ)
    try:
        os.environ["CONTRASTIVE_NB_HEADLESS"] = "1"
        paths = [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(root)]
        os.environ["PYTHONPATH"] = os.pathsep.join(paths)
        here = os.path.dirname(sys.executable)
        if os.environ.get("PATH", "").split(os.pathsep)[0] != here:
            os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def execute_library_notebook(path: Path, flags: set[str], timeout: int = 1800):
    "Execute `path` top to bottom in a fresh kernel in its folder, skipping the cells `nbdev_test` skips."
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            if skipped(cell, path, flags):
                cell.outputs = []
                return cell
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    nb = nbformat.read(path, as_version=4)
    _Client(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    drop_unshown_widget_state(nb)
    return nb


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_unshown_widget_state(nb) -> None:
    """Drop the notebook's saved widget state when no output shows a widget: nothing reads it, and its
    keys are random model ids, so it would otherwise change on every execution."""
    shown = any(WIDGET_VIEW in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                for o in c.get("outputs", []))
    if not shown:
        nb.metadata.pop("widgets", None)


def execute_tutorial(path: Path, root: Path, timeout: int = 7200):
    "Run the tutorial at its defaults as `contrastive-nb run` does; returns (executed notebook, run folder)."
    from contrastive_nb.runs import run_notebook
    name = f"{path.stem}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run = run_notebook(path, name=name, root=str(root / "runs" / "notebooks"), timeout=timeout, log_output=False)
    nb = nbformat.read(run / path.name, as_version=4)
    # papermill's injected parameters (out_dir = "." here) belong to this run, not to the notebook: committed, they
    # would override the defaults of whoever opens it (a run in JupyterLab would write into nbs/tutorials/). The run's
    # parameters are kept in its folder (parameters.json) and in the results' provenance.json.
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    for c in nb.cells:                      # papermill's per-cell bookkeeping (times, status) is not content
        c.metadata.pop("papermill", None)
        c.metadata.pop("execution", None)
    return nb, run


def stage_results(run: Path, dest: Path, notebook: Path, root: Path) -> tuple[Path | None, list[str]]:
    """Copy the run's results-table inputs, with provenance.json, into a hidden folder beside `dest`; returns it
    (None when the run wrote no results) and the files copied. Nothing is published yet: see `publish`."""
    files, skipped_big = [], []
    for f in sorted(run.iterdir()):
        if not f.is_file() or f.suffix not in RESULT_SUFFIXES or RESULT_SKIP.match(f.name):
            continue
        (skipped_big if f.stat().st_size > RESULT_MAX_BYTES else files).append(f)
    if not files:
        return None, []
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-{os.getpid()}-", dir=dest.parent))
    os.chmod(tmp, 0o755)
    for f in files:
        shutil.copyfile(f, tmp / f.name)
    from contrastive_nb.runs import git_commit
    # where the run ran, as it recorded it before running (commit, versions, machine); else the checkout now
    status = json.loads((run / "status.json").read_text()) if (run / "status.json").exists() else {}
    env = {k: status[k] for k in ("commit", "versions", "machine") if k in status} or {"commit": git_commit(root)}
    params = json.loads((run / "parameters.json").read_text()).get("parameters", {}) if (run / "parameters.json").exists() else {}
    prov = {"notebook": str(notebook.relative_to(root)), "parameters": params, **env,
            "date": _dt.date.today().isoformat(), "seconds": status.get("seconds"), "files": [f.name for f in files],
            "left_out_over_1MiB": [f.name for f in skipped_big]}
    (tmp / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
    return tmp, [f.name for f in files]


def _finish(journal: Path) -> None:
    """Carry a publish recorded in `journal` to its end; every step can be repeated, so a publish killed anywhere
    is finished by the next call: results folder and notebook are replaced together."""
    j = json.loads(journal.read_text())
    new, dest, old = (Path(j[k]) if j[k] else None for k in ("results_new", "results", "results_old"))
    nb_new, nb = Path(j["notebook_new"]), Path(j["notebook"])
    if new is not None and new.exists():
        if dest.exists() and not old.exists():
            os.replace(dest, old)
        os.replace(new, dest)
    if nb_new.exists():
        os.replace(nb_new, nb)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    journal.unlink()


def recover(root: Path = ROOT) -> list[str]:
    """Finish the publishes a killed `run` left (their journals under nbs/results/), and remove staged folders and
    notebooks of processes that are gone; returns what it did."""
    done, results = [], root / "nbs" / "results"
    for journal in sorted(results.glob(".publish-*.json")) if results.exists() else []:
        _finish(journal)
        done.append(f"finished {journal.name}")
    alive = lambda pid: pid == os.getpid() or Path(f"/proc/{pid}").exists()
    leftovers = [p for pat in (".*.new-*", ".*.old-*", ".publish-*.json.tmp") for p in results.glob(pat)] if results.exists() else []
    leftovers += list((root / "nbs").rglob(".*.ipynb.tmp-*"))
    for p in leftovers:
        m = re.search(r"\.(?:new|old|tmp)-(\d+)|-(\d+)\.json\.tmp$", p.name)
        m = m and (m[1] or m[2])
        if m and not alive(int(m)):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            done.append(f"removed {p.name}")
    return done


def publish(path: Path, nb, staged: Path | None, dest: Path) -> None:
    "Replace notebook `path` by `nb` and (when staged) `dest` by the staged results, together, through a journal."
    pid = os.getpid()
    nb_new = path.with_name(f".{path.name}.tmp-{pid}")
    nb_new.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    results = dest.parent
    results.mkdir(parents=True, exist_ok=True)
    journal = results / f".publish-{path.stem}-{pid}.json"
    tmp = journal.with_name(journal.name + ".tmp")
    tmp.write_text(json.dumps({"notebook_new": str(nb_new), "notebook": str(path),
                               "results_new": str(staged) if staged else None, "results": str(dest),
                               "results_old": str(dest.with_name(f".{dest.name}.old-{pid}")) if staged else None}))
    os.replace(tmp, journal)                   # the commit point: from here on the publish is finished, if need be later
    _finish(journal)


def run(path: Path, root: Path = ROOT) -> str:
    """Execute one notebook in place; returns a one-line summary. Raises RuntimeError on failure (source untouched).

    A tutorial's results are staged while it runs and published with the executed notebook, or not at all (a
    notebook edited during its run keeps its edits and the old results)."""
    path = Path(path).resolve()
    if not path.exists() or path.suffix != ".ipynb":
        raise RuntimeError(f"{path}: no such notebook")
    recover(root)
    before = path.read_bytes()
    flags = _flags(root)
    t0 = time.time()
    staged, published = None, None
    dest = root / "nbs" / "results" / path.stem
    try:
        try:
            with _kernel_env(root):
                if is_tutorial(path):
                    nb, run_dir = execute_tutorial(path, root)
                    staged, published = stage_results(run_dir, dest, path, root)
                else:
                    nb = execute_library_notebook(path, flags)
        except Exception as e:                       # the kernel's error names the cell; keep the first lines
            msg = str(e).strip().splitlines()
            raise RuntimeError(f"{path.relative_to(root)} failed: " + " | ".join(msg[:3] + msg[-3:])[:1500]) from e
        _clean(nb, root)
        stamp(nb, path, flags)
        if path.read_bytes() != before:
            raise RuntimeError(f"{path.relative_to(root)} was edited while it executed; neither it nor its results "
                               "were overwritten — run it again")
        publish(path, nb, staged, dest)
        staged = None
    finally:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
    note = f"; results → nbs/results/{path.stem}/ ({', '.join(published)})" if published else ""
    return f"{path.relative_to(root)}: executed in {time.time() - t0:.0f} s{note}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Execute notebooks in place, or check their saved outputs.")
    ap.add_argument("command", choices=["run", "check"])
    ap.add_argument("notebooks", nargs="*", help="notebook paths (default: all of --lib/--tutorials)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--lib", action="store_const", const="lib", dest="which", help="only nbs/*.ipynb")
    g.add_argument("--tutorials", action="store_const", const="tutorials", dest="which", help="only nbs/tutorials/")
    a = ap.parse_args(argv)
    paths = [Path(p).resolve() for p in a.notebooks] or all_notebooks(ROOT, a.which or "all")
    bad = [str(p) for p in paths if not p.exists() or p.suffix != ".ipynb" or ROOT not in p.parents]
    if bad:
        print(f"notebooks: not notebooks of this project: {', '.join(bad)}", file=sys.stderr)
        return 2
    failed = 0
    for p in paths:
        if a.command == "check":
            problems = check(p)
            for msg in problems:
                print(f"{p.relative_to(ROOT)}: {msg}")
            failed += bool(problems)
            continue
        try:
            print(run(p), flush=True)
        except RuntimeError as e:
            print(f"notebooks: {e}", file=sys.stderr, flush=True)
            failed += 1
    if a.command == "check" and not failed:
        print(f"{len(paths)} notebooks: saved outputs are current")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
