"""What is published under nbs/results is what the code says it is: every results folder has its provenance, every
claims table carries the statistics of `evaluate.claim_verdicts` with the verdicts its rule gives them, and every
published sweep holds exactly the runs its sweep file asks for, all finished, with every arm of its notebook. A sweep
that disagrees with its notebook or sweep file fails either way, and says which it is: STALE (the notebook or file
changed after the sweep ran: the message names every sweep to re-run, its commands and its recorded cost) or WRONG
(they have not changed: the artefact disagrees with the code that made it)."""
import json
from pathlib import Path
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from contrastive_nb.evaluate import BOOT_MIN_PAIRS, min_detectable_effect, t_summary
from contrastive_nb.protocol import long_table
from contrastive_nb.runs import load_sweep, sweep_runs
from helpers import ROOT, TUT, tutorial_arms

RES = ROOT / "nbs" / "results"
sys.path.insert(0, str(ROOT / "docs"))
from claims_stats import metrics_families, restated, restated_family  # noqa: E402

FOLDERS = sorted(p for p in RES.iterdir() if p.is_dir() and not p.name.startswith("."))
CLAIMS = sorted(RES.rglob("claims*.parquet"))
# a sweep's folder: its results.parquet has a row per run and seed (whatever its provenance says)
SWEEPS = sorted(p.parent for p in RES.glob("*/results.parquet")
                if "param/seed" in pd.read_parquet(p, columns=None).columns)
STATS = ["n", "diff", "t_low", "t_high", "p", "p_holm", "mde", "verdict"]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_results_folder_has_provenance(folder):
    prov = json.loads((folder / "provenance.json").read_text())
    data = sorted(p.name for p in folder.iterdir() if p.suffix in (".json", ".parquet", ".csv")
                  and p.name != "provenance.json")
    if isinstance(prov.get("files"), dict):  # one entry per file (benchmarks)
        assert sorted(prov["files"]) == sorted(set(data) & set(prov["files"])) and set(data) <= set(prov["files"]), (
            f"{folder.name}: files without an entry: {sorted(set(data) - set(prov['files']))}")
        entries = prov["files"].values()
    else:
        entries = [prov]
    for e in entries:
        assert "commit" in e and "date" in e, e
        assert e.get("script") or e.get("notebook") or e.get("sweep"), e
    text = json.dumps(prov)
    assert str(ROOT).lstrip("/") not in text and "/home/" not in text, "a path of the machine that wrote it"


def test_the_architecture_page_lists_every_published_folder():
    "The map is the truth: a results folder published after the page ran must send the page to be re-executed."
    nb = json.loads((ROOT / "nbs" / "architecture.ipynb").read_text())
    shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) + "".join(o.get("text", ""))
                    for c in nb["cells"] for o in c.get("outputs", []))
    missing = [f.name for f in FOLDERS if f"`{f.name}/`" not in shown]
    assert not missing, f"nbs/architecture.ipynb does not list {missing}: run `make notebooks NB=nbs/architecture.ipynb`"


@pytest.mark.parametrize("table", CLAIMS, ids=lambda p: p.parent.name)
def test_claims_tables_carry_the_statistics_and_the_rules_verdicts(table):
    claims = pd.read_parquet(table)
    assert len(claims) and set(STATS) <= set(claims.columns)
    np.testing.assert_array_equal(claims["verdict"], restated(claims)["verdict"])
    small = claims["n"] < BOOT_MIN_PAIRS
    assert claims.loc[small, [c for c in claims if c.startswith("boot")]].isna().all().all()
    # the saved interval, p and mde are what (n, diff, sd) give, the mde at the verdict's level: Holm's
    # most stringent, 0.05/m over the family's m distinct tests (a repeated row is one test)
    m = len(claims.loc[claims["p"].notna(), ["n", "diff", "sd", "p"]].drop_duplicates())
    for _, r in claims.iterrows():
        t = t_summary(int(r["n"]), r["diff"], r["sd"], tests=m)
        np.testing.assert_allclose([r[k] for k in t], list(t.values()), rtol=1e-9, atol=1e-12,
                                   err_msg=r.get("claim", ""))


METRICS = sorted(p for p in RES.glob("*/metrics.json") if metrics_families(json.loads(p.read_text())))


@pytest.mark.parametrize("path", METRICS, ids=lambda p: p.parent.name)
def test_claims_families_in_metrics_carry_the_rules_mde_and_verdicts(path):
    "The families a tutorial saved in its metrics.json: the same rule, the mde at 0.05/m of the family."
    for name, (t, col) in metrics_families(json.loads(path.read_text())).items():
        np.testing.assert_array_equal(t[col], restated_family(t, col)[col], err_msg=name)
        # m distinct tests: a repeated row (e.g. two baselines with identical scores) is one test, as Holm counts it
        m = len(t.loc[t["p"].notna(), ["n", "diff", "t_low", "t_high", "p"]].drop_duplicates())
        for _, r in t.iterrows():
            sd = (r.t_high - r.t_low) / 2 * np.sqrt(r.n) / stats.t.ppf(0.975, r.n - 1)
            want = min_detectable_effect(sd, int(r.n), 0.05 / m)
            np.testing.assert_allclose(r["mde"], want, rtol=1e-9, err_msg=f"{name}: {r[col]}")


def _at_commit(commit: str, path: str) -> str | None:
    "The text of the repository file `path` at `commit`, or None where git does not have it."
    r = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def _rerun(notebook: str) -> str:
    """Every published sweep made from `notebook`: the commands that re-run and re-publish it and what its runs cost
    as recorded (the run seconds in its provenance.json), then the total."""
    lines, runs, seconds = [], 0, 0.0
    for folder in SWEEPS:
        prov = json.loads((folder / "provenance.json").read_text())
        if prov.get("notebook") != notebook:
            continue
        secs = prov["runs"]["seconds"]
        runs, seconds = runs + len(secs), seconds + sum(secs.values())
        figures = f" --figures {prov['figures']}" if prov.get("figures") else ""
        lines.append(f"  contrastive-nb sweep {prov['sweep']} && contrastive-nb publish {prov['sweep']} "
                     f"nbs/results/{folder.name}{figures}   # {len(secs)} runs, {sum(secs.values()) / 3600:.1f} h "
                     "recorded")
    return "\n".join(lines + [f"  in all {runs} runs, {seconds / 3600:.1f} h of recorded run time "
                               "(provenance.json `runs.seconds`)"])


def _stale_or_wrong(folder, prov: dict, problem: str, source: str, stale: bool | None) -> str:
    """The failure message of a published sweep that disagrees with its `source` file: `stale` True (the file changed
    after the sweep's commit), False (it did not: wrong) or None (git does not know the commit)."""
    if stale:
        return (f"{folder.name} is STALE, not wrong: {source} changed after the sweep ran at {prov['commit']}, and "
                f"{problem}. Re-run and re-publish every sweep made from {prov['notebook']}:\n"
                + _rerun(prov["notebook"]))
    if stale is None:
        return (f"{folder.name}: {problem}; stale or wrong cannot be told (commit {prov['commit']} is not in this "
                "repository's history). If the code changed since, re-run:\n" + _rerun(prov["notebook"]))
    return (f"{folder.name} is WRONG: {source} already asked for this when the sweep ran at {prov['commit']}, "
            f"yet {problem}: the published artefact disagrees with the code that made it (edited by hand, or published "
            "from other runs); re-publish it from its runs, or find what changed it")


def _sweep_spec(text: str) -> tuple:
    "(name, seeds, grid) of a sweep file's text."
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "sweep.yaml"
        f.write_text(text)
        spec = load_sweep(f)
    return spec["name"], spec["seeds"], spec["grid"]


def _sweep_params(text: str) -> dict:
    "The fixed parameters of a sweep file's text."
    import yaml
    return (yaml.safe_load(text) or {}).get("parameters") or {}


@pytest.mark.parametrize("folder", SWEEPS, ids=lambda p: p.name)
def test_published_sweeps_hold_every_run_of_their_sweep_file(folder):
    prov = json.loads((folder / "provenance.json").read_text())
    spec = load_sweep(ROOT / prov["sweep"])
    if (spec["name"], spec["seeds"], spec["grid"]) != (prov["name"], prov["seeds"], prov["grid"]):
        then = _at_commit(prov["commit"], prov["sweep"])
        pytest.fail(_stale_or_wrong(folder, prov, "its name, seeds or grid differ from the file's",
                                    prov["sweep"], None if then is None else
                                    _sweep_spec(then) != (spec["name"], spec["seeds"], spec["grid"])))
    res = pd.read_parquet(folder / "results.parquet")
    assert sorted(res["run"]) == sorted(n for n, _ in sweep_runs(spec)) and (res["status"] == "ok").all()
    assert prov["commit"] and prov["runs"]["ok"] == len(res) and all(
        isinstance(s, (int, float)) and s > 0 for s in prov["runs"]["seconds"].values())
    for k, v in spec["parameters"].items():  # the file's fixed parameters are what every run had
        if f"param/{k}" not in res:  # a parameter the file sets now, which its runs were not given
            then = _at_commit(prov["commit"], prov["sweep"])
            pytest.fail(_stale_or_wrong(folder, prov, f"it sets `{k}`, which the published runs were not given",
                                        prov["sweep"], None if then is None else k not in _sweep_params(then)))
        if not isinstance(v, (list, dict)):
            assert (res[f"param/{k}"] == v).all(), k
    name = prov["notebook"].split("/")[-1]
    arms = {a["arm"] for a in tutorial_arms(name)} if (TUT / name).exists() else set()
    if "results/" in "".join(res.columns):
        long = long_table(res, "results")
        missing = sorted(arms - set(long["arm"]))
        if missing:
            then = _at_commit(prov["commit"], prov["notebook"])
            pytest.fail(_stale_or_wrong(folder, prov, f"its `arms` cell now has arms {missing} the sweep lacks",
                                        prov["notebook"], None if then is None else
                                        bool(set(missing) - {a["arm"] for a in tutorial_arms(name, then)})))
        seeds = long.groupby([c for c in long.columns if c in spec["grid"]] + ["arm"])["seed"].nunique()
        assert seeds.min() == len(spec["seeds"]), seeds.to_dict()
        assert long["test_top1"].notna().all() and not long["test_top1"].map(math.isinf).any()
    for f in prov["files"]:
        assert (folder / f).exists(), f


def test_a_sweep_lacking_a_new_arm_is_called_stale_with_what_to_rerun_and_a_disagreeing_one_wrong():
    "Both messages, on the published SuNCEt sweep's provenance (cheap: no run is read)."
    folder = RES / "suncet_fashion"
    prov = json.loads((folder / "provenance.json").read_text())
    made_from = [json.loads((f / "provenance.json").read_text()) for f in SWEEPS]
    made_from = [p for p in made_from if p.get("notebook") == prov["notebook"]]
    assert len(made_from) >= 2, "the SuNCEt tutorial makes two published sweeps"
    stale = _stale_or_wrong(folder, prov, "its `arms` cell now has arms ['new_arm'] the sweep lacks",
                            prov["notebook"], True)
    assert "suncet_fashion is STALE, not wrong" in stale and "['new_arm']" in stale
    for p in made_from:                 # every sweep of that notebook, its commands and its recorded hours
        hours = f"{len(p['runs']['seconds'])} runs, {sum(p['runs']['seconds'].values()) / 3600:.1f} h recorded"
        assert f"contrastive-nb sweep {p['sweep']} && contrastive-nb publish {p['sweep']}" in stale and hours in stale
    total = sum(sum(p["runs"]["seconds"].values()) for p in made_from) / 3600
    assert f"in all {sum(len(p['runs']['seconds']) for p in made_from)} runs, {total:.1f} h" in stale
    wrong = _stale_or_wrong(folder, prov, "its `arms` cell now has arms ['x'] the sweep lacks", prov["notebook"],
                            False)
    assert "suncet_fashion is WRONG" in wrong and "contrastive-nb sweep" not in wrong
    # which one is decided from git: the arms at the sweep's commit are the notebook's arms then; a clone without
    # that commit (a shallow checkout) cannot tell, and says so
    then = _at_commit(prov["commit"], prov["notebook"])
    if then is not None:
        assert {a["arm"] for a in tutorial_arms("suncet_digits", then)} >= set(
            pd.read_parquet(folder / "results.parquet").filter(like="results/").columns.str.split("/").str[1])
    assert "stale or wrong cannot be told" in _stale_or_wrong(folder, prov, "x", prov["notebook"], None)


def _manifest(path):
    "A split manifest: its parameters and its index sets."
    d = json.loads(path.read_text())
    return d["params"], {k: np.asarray(v, dtype=np.int64) for k, v in d["splits"].items()}


def _seed_of(path, prefix):
    return int(path.stem.removeprefix(prefix))


def _fixed_seed(params):
    "The seed of a manifest's one test draw: the worst-group digits' `split_seed`, else `test_seed`."
    return params.get("split_seed", params.get("test_seed"))


@pytest.mark.parametrize("name", ["suncet_digits", "spread_strata", "spread_fashion"])
def test_published_tuning_and_search_seeds_never_saw_a_reported_test_image(name):
    """Select on validation, report test once: the seeds that tune an arm or search a setting train and select on
    no image that a reported seed is tested on (a test set drawn per seed put some of them there). Every seed the
    metrics name must have its manifest: a missing one fails, it is not skipped."""
    folder, m = RES / name, json.loads((RES / name / "metrics.json").read_text())
    if name == "suncet_digits":
        pairs = [("tuning_split.json", ["split.json"], ("labeled", "unlabeled", "val"))]
    else:
        reported = sorted({*m["seeds"], *(m["noise_seeds"] if "noise/claims" in m else [])})  # studies that ran
        on_disk = {_seed_of(p, "split_seed") for p in folder.glob("split_seed*.json")}
        # the searches' seeds as the metrics record them (older runs: every manifest that is not a reported seed's)
        searched = sorted({m["tuning_seed"], *m.get("noise_search_seeds", [])} | (on_disk - set(reported)))
        assert m["tuning_seed"] not in reported and not set(searched) & set(reported)
        pairs = [(f"split_seed{s}.json", [f"split_seed{r}.json" for r in reported], ("train", "val"))
                 for s in searched]
        wg_reported = m["worst_group_seeds"] if "worst_group/strength" in m else []  # the study ran
        wg_disk = {_seed_of(p, "spurious_split_seed") for p in folder.glob("spurious_split_seed*.json")}
        wg_searched = sorted(set(m.get("strength_seeds", [])) | (wg_disk - set(wg_reported)))
        assert bool(wg_searched) == bool(wg_reported) and not set(wg_searched) & set(wg_reported), (wg_searched,
                                                                                                     wg_reported)
        pairs += [(f"spurious_split_seed{s}.json", [f"spurious_split_seed{r}.json" for r in wg_reported], ("val",))
                  for s in wg_searched]
    assert pairs
    for search, tested, parts in pairs:
        params, sp = _manifest(folder / search)  # a manifest named but missing fails here
        assert _fixed_seed(params) is not None, f"{name}/{search}: no fixed test seed recorded"
        seen = np.concatenate([sp[k] for k in parts])
        for t in tested:
            t_params, t_sp = _manifest(folder / t)
            assert _fixed_seed(t_params) == _fixed_seed(params), (search, t)
            leak = np.intersect1d(seen, t_sp["test"]).size
            assert not leak, f"{name}: {search} trains or selects on {leak} test images of {t}"


@pytest.mark.parametrize("name", ["suncet_fractions", "suncet_fashion"])
def test_published_sweeps_tuned_once_on_a_seed_that_shares_their_one_test_set(name):
    """A sweep's runs keep no manifests; their results say what the check above needs: one fixed test seed for every
    run, a tuning seed that is never reported, a study stored for the sweep (not tuned in memory by each run), and
    the same tuned values in every run of a setting."""
    d = pd.read_parquet(RES / name / "results.parquet")
    for k in ("test_seed", "tuning_seed", "seed"):
        assert k in d and d[k].notna().all(), f"{name}: no `{k}` recorded in every run"
    assert d["test_seed"].nunique() == 1, f"{name}: runs with different test sets {sorted(d['test_seed'].unique())}"
    assert not set(d["tuning_seed"]) & set(d["seed"]), f"{name}: a tuning seed is also a reported seed"
    stored = [c for c in d if c.startswith("tuning/") and c.endswith("/storage")]
    assert stored and all((d[c] != "memory").all() for c in stored), f"{name}: tuned in memory by each run"
    chosen = [c for c in d if c.startswith("tuning/") and ("/chosen/" in c or c.endswith("/setting"))]
    assert chosen, f"{name}: no tuned choices recorded"
    for c in chosen:
        per = d.groupby("param/labeled_fraction")[c].agg(lambda v: v.astype(str).nunique())
        assert (per == 1).all(), f"{name}: {c} differs between the seeds of a fraction: {per.to_dict()}"
