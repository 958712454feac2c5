"""Bring the published claims tables up to the project's statistics without re-training (issue 30).

    PYTHONPATH=$PWD python docs/claims_stats.py          # rewrite the tables, then print what changed
    PYTHONPATH=$PWD python docs/claims_stats.py --check  # only print

Every `claims*.parquet` under nbs/results gets the columns of `evaluate.claim_verdicts`: `n`, `diff`, `t_low`,
`t_high`, `p` (paired t-test), `p_holm` (Holm over the table's rows), `mde` (80% power, two-sided alpha 0.05), with
the bootstrap columns emptied below 10 pairs and the verdict recomputed by the rule (agrees / disagrees only when
p_holm < 0.05 and the t interval is on that side; otherwise "not distinguishable here: effects larger than <mde>
are ruled out").

Where the numbers come from, per table:
- csslm_fewshot/claims.parquet: recomputed from the per-split scores in results.parquet (the rows of section
  "table2", paired by split), the way the tutorial computes them; the saved difference and t interval must agree.
- cless_longtail/claims.parquet: its pairs are assembled by the tutorial from results.parquet and ap_per_bin.parquet
  with the run's parameters (set-ups, fractions, bins); rather than re-implement that selection, the sd of each
  row's differences is recovered exactly from its saved 95% t interval, sd = half-width * sqrt(n) / t(0.975, n-1),
  and p and mde follow from (n, diff, sd). The rows that compare the zero-shot model with the training-free
  baselines are checked against results.parquet directly.
The metrics.json beside each table gets its `verdicts` count recomputed, and provenance.json records the rewrite.

nbs/results/suncet_fractions/ (the SuNCEt sweep) saves no claims table: its claims are computed from results.parquet
by `protocol.sweep_claims` where they are shown (the suncet_digits tutorial, the README), so they carry the new
columns once those are re-executed. It had no provenance.json: one is written from what is recorded — the commit
that last wrote results.parquet (git log) and the runs' own columns — with what was not recorded marked unknown.
"""
import argparse
import datetime as _dt
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from contrastive_nb.core import atomic_write_json, atomic_write_parquet
from contrastive_nb.evaluate import BOOT_MIN_PAIRS, claim_verdicts, paired_difference, t_summary

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "nbs" / "results"
STATS = ["n", "diff", "sd", "t_low", "t_high", "p", "mde"]


def _finish(claims: pd.DataFrame, rows: list) -> pd.DataFrame:
    "The saved table with the new statistics, the bootstrap emptied below 10 pairs and the verdict recomputed."
    out = claims.drop(columns=[c for c in STATS + ["p_holm"] if c in claims]).copy()
    out = pd.concat([out.reset_index(drop=True), pd.DataFrame(rows, columns=STATS)], axis=1)
    small = out["n"] < BOOT_MIN_PAIRS
    out.loc[small, ["boot low", "boot high"]] = np.nan
    return claim_verdicts(out, positive="agrees", negative="disagrees", claim="verdict")


def csslm(claims: pd.DataFrame) -> pd.DataFrame:
    "csslm_fewshot: every row recomputed from the per-split scores of results.parquet (section table2)."
    res = pd.read_parquet(RES / "csslm_fewshot" / "results.parquet")
    t2 = res[res.section == "table2"]
    rows = []
    for _, r in claims.iterrows():
        wide = t2[t2.arm.isin([r.A, r.B])].pivot(index="split", columns="arm", values=r.metric)
        d = paired_difference(wide[r.A].to_numpy(), wide[r.B].to_numpy())
        assert d["n"] == r.splits, (r.claim, d["n"], r.splits)
        for new, old in [("diff", "A − B"), ("t_low", "t low"), ("t_high", "t high")]:
            assert math.isclose(d[new], r[old], abs_tol=1e-12), (r.claim, new, d[new], r[old])
        rows.append([d[k] for k in STATS])
    return _finish(claims, rows)


def sd_from_interval(n: int, low: float, high: float, confidence: float = 0.95) -> float:
    "The sd of n paired differences whose Student-t interval at `confidence` is [low, high]."
    if n < 2:
        return math.nan
    return (high - low) / 2 * math.sqrt(n) / float(stats.t.ppf(0.5 + confidence / 2, n - 1))


def cless(claims: pd.DataFrame) -> pd.DataFrame:
    "cless_longtail: sd recovered from each row's saved t interval; zero-shot rows checked on results.parquet."
    res = pd.read_parquet(RES / "cless_longtail" / "results.parquet")
    m = json.loads((RES / "cless_longtail" / "metrics.json").read_text())
    main = f"CLESS w{m['main_width']} pl{m['main_pseudo_labels']}"
    rows, checked = [], 0
    for _, r in claims.iterrows():
        n = int(r.seeds)
        sd = sd_from_interval(n, r["t low"], r["t high"])
        rows.append([n, r["A − B"], sd, *t_summary(n, r["A − B"], sd).values()])
        if r.A == "CLESS zero-shot" and r.claim.startswith("zero-shot CLESS beats"):
            a = res[(res.section == "fig4_left") & (res.model == main)].set_index("seed")[r.metric]
            b = res[(res.section == "zero_shot") & (res.model == r.B)].set_index("seed")[r.metric]
            seeds = a.index.intersection(b.index)
            diffs = (a[seeds] - b[seeds]).to_numpy()
            assert len(diffs) == n and math.isclose(diffs.std(ddof=1), sd, rel_tol=1e-9), r.claim
            checked += 1
    assert checked, "no zero-shot row could be checked against results.parquet"
    return _finish(claims, rows)


def _short(verdicts: pd.Series) -> pd.Series:
    "The verdict without its explanation: agrees, disagrees or not distinguishable here."
    return verdicts.str.replace(r"(:| after).*", "", regex=True)


def _record(folder: Path, how: str, claims: pd.DataFrame, write: bool, commit: str | None):
    "Recount the verdicts in metrics.json and note the rewrite in provenance.json."
    mpath, ppath = folder / "metrics.json", folder / "provenance.json"
    m, prov = json.loads(mpath.read_text()), json.loads(ppath.read_text())
    m["verdicts"] = _short(claims["verdict"]).value_counts().to_dict()
    prov["statistics_rewritten"] = {
        "by": "docs/claims_stats.py", "commit": commit, "date": _dt.date.today().isoformat(),
        "files": ["claims.parquet", "metrics.json (verdicts only)"], "how": how,
    }
    if write:
        atomic_write_json(mpath, m)
        ppath.write_text(json.dumps(prov, indent=1, ensure_ascii=False) + "\n")


def sweep_provenance(write: bool) -> dict:
    "provenance.json of nbs/results/suncet_fractions from git log and results.parquet (the runs are not re-run)."
    folder = RES / "suncet_fractions"
    rel = folder.relative_to(ROOT)
    log = subprocess.run(["git", "log", "-1", "--format=%H%x09%ad%x09%s", "--date=short", "--",
                          str(rel / "results.parquet")], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit, date, subject = log.split("\t", 2)
    res = pd.read_parquet(folder / "results.parquet")
    params = sorted(c for c in res.columns if c.startswith("param/"))
    prov = {
        "notebook": "nbs/tutorials/suncet_digits.ipynb",
        "sweep": "nbs/tutorials/suncet_fractions.yaml",
        "parameters": {c[len("param/"):]: sorted(res[c].unique().tolist()) for c in params},
        "commit": None,
        "date": date,
        "files": sorted(p.name for p in folder.iterdir() if p.name != "provenance.json"),
        "left_out_over_1MiB": [],
        "runs": {"total": len(res), "status": res["status"].value_counts().to_dict(),
                 "seconds_per_run_recorded": [round(float(res.seconds.min())), round(float(res.seconds.max()))]},
        "source": {"published_by_commit": commit[:7], "commit_subject": subject,
                   "code_commit_of_the_runs": "unknown (not recorded in results.parquet)",
                   "machine": "unknown (not recorded)", "torch_threads": "unknown (not recorded)"},
        "provenance_written": {"by": "docs/claims_stats.py", "date": _dt.date.today().isoformat(),
                               "note": "written afterwards from git log and results.parquet; nothing was re-run"},
    }
    if write:
        (folder / "provenance.json").write_text(json.dumps(prov, indent=1, ensure_ascii=False) + "\n")
    return prov


def main(write: bool):
    # the code that rewrites, described before anything is written
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or None
    jobs = {
        "csslm_fewshot": (csslm, "recomputed from the per-split scores in results.parquet (section table2)"),
        "cless_longtail": (cless, "sd of each row recovered from its saved 95% t interval; p, mde from (n, diff, sd);"
                                  " zero-shot rows checked against results.parquet"),
    }
    for name, (fn, how) in jobs.items():
        folder = RES / name
        old = pd.read_parquet(folder / "claims.parquet")
        new = fn(old)
        if write:
            atomic_write_parquet(folder / "claims.parquet", new)
        _record(folder, how, new, write, commit)
        changed = (old["verdict"] != _short(new["verdict"])).sum()
        print(f"{name}: {len(new)} rows, {int((new.p < 0.05).sum())} with p < 0.05, "
              f"{int((new.p_holm < 0.05).sum())} with Holm p < 0.05; verdicts "
              f"{_short(new['verdict']).value_counts().to_dict()} ({changed} changed)")
    prov = sweep_provenance(write)
    print(f"suncet_fractions/provenance.json: published by {prov['source']['published_by_commit']} on"
          f" {prov['date']}, {prov['runs']['total']} runs {prov['runs']['status']}")
    others = sorted(p.relative_to(ROOT) for p in RES.rglob("claims*.parquet") if p.parent.name not in jobs)
    assert not others, f"claims tables this script does not know: {others}"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print only; write nothing")
    main(write=not ap.parse_args().check)
