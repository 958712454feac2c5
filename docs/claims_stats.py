"""State the verdicts and powers of the published claims tables by the current rule, from their saved statistics.

    PYTHONPATH=$PWD python docs/claims_stats.py          # rewrite the tables that differ from the rule
    PYTHONPATH=$PWD python docs/claims_stats.py --check  # only list them; exit status 1 when some differ

Every `claims*.parquet` under nbs/results holds, per row, the statistics of `evaluate.claim_verdicts` (`n`, `diff`,
`sd`, `t_low`, `t_high`, `p`) with the `p_holm`, `mde` and verdict they gave, worded `agrees` / `disagrees` / `not
distinguishable here…`; a tutorial's metrics.json may hold further families (`worst_group/claims`, `noise/claims`,
the `coarse_to_fine/…` entries), worded `reproduced` / `reversed` / …. When the rule changes, those columns are
recomputed from the saved statistics and nothing is re-run. On 2026-11-27 the changes were what a "not
distinguishable" row rules out (its t interval, not its mde) and, for issue 43, the `mde` at the verdict's level
(Holm's most stringent level α/m over the family's m distinct tests) with a repeated row counted once in m (the
CLESS table held zero-shot CLESS against ZeroR and against the class prior, both 1/52 on AP macro, twice). `p` and
the interval are kept as saved. `p_holm`, `mde` and the verdict are rewritten, the `verdicts` count in the
metrics.json beside the table is recounted, and provenance.json records the rewrite. `tests/test_published.py` fails
on a published table or family that is not the rule's.
"""
import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from contrastive_nb.core import atomic_write_json, atomic_write_parquet
from contrastive_nb.evaluate import claim_verdicts, t_summary
from contrastive_nb.runs import git_commit

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "nbs" / "results"
RULED = ["p_holm", "mde", "verdict"]  # what the rule gives; the rest is the saved statistics


def restated(claims: pd.DataFrame) -> pd.DataFrame:
    "The table with `p_holm`, `mde` and `verdict` recomputed by `claim_verdicts` from its saved statistics."
    new = claim_verdicts(claims.drop(columns=RULED), positive="agrees", negative="disagrees", claim="verdict")
    return new[list(claims.columns)]


def metrics_families(m: dict) -> dict:
    """The claims families a metrics.json holds: name → (rows as a frame, the wording's column). The
    `coarse_to_fine/…` entries (one family, as the tutorial adjusted them) save no `n`: it is the number of
    `seeds`, checked against the saved p."""
    fams = {k: (pd.DataFrame(m[k]), "verdict" if "verdict" in m[k][0] else "claim")
            for k in ("worst_group/claims", "noise/claims") if m.get(k)}
    ctf = [k for k in m if k.startswith("coarse_to_fine/")]
    if ctf:
        t = pd.DataFrame([m[k] for k in ctf], index=ctf).assign(n=len(m["seeds"]))
        q = pd.DataFrame([t_summary(r.n, r["diff"], _sd(r)) for _, r in t.iterrows()], index=ctf)
        np.testing.assert_allclose(q["p"], t["p"], rtol=1e-6, err_msg="coarse_to_fine: n is not len(seeds)")
        fams["coarse_to_fine"] = (t, "claim")
    return fams


def _sd(r) -> float:
    "The differences' sd from a row's 95% t interval (its half-width is t(0.975, n − 1)·sd/√n)."
    from scipy import stats
    return (r.t_high - r.t_low) / 2 * np.sqrt(r.n) / stats.t.ppf(0.975, r.n - 1)


def restated_family(t: pd.DataFrame, col: str) -> pd.DataFrame:
    "A metrics.json family with `p_holm`, `mde` and its wording (`col`) recomputed by `claim_verdicts`."
    new = claim_verdicts(t.drop(columns=["p_holm", "mde", col]), claim=col)
    return new[list(t.columns)]


def _short(verdicts: pd.Series) -> pd.Series:
    "The verdict without its explanation: agrees, disagrees or not distinguishable here."
    return verdicts.str.replace(r"(:| after).*", "", regex=True)


def _differs(old: pd.DataFrame, new: pd.DataFrame, cols) -> int:
    "Rows where a ruled column changed (numbers beyond rounding, wordings at all)."
    diff = np.zeros(len(old), bool)
    for c in cols:
        a, b = old[c].to_numpy(), new[c].to_numpy()
        if c in ("p_holm", "mde"):
            a, b = a.astype(float), b.astype(float)
            diff |= ~(np.isclose(a, b, rtol=1e-9, atol=1e-12) | (np.isnan(a) & np.isnan(b)))
        else:
            diff |= a != b
    return int(diff.sum())


def _record(folder: Path, what: str, changed: int, verdicts=None):
    "Recount the verdicts in metrics.json (when given) and note the rewrite in provenance.json."
    mpath, ppath = folder / "metrics.json", folder / "provenance.json"
    if verdicts is not None and mpath.exists():
        m = json.loads(mpath.read_text())
        if "verdicts" in m:
            m["verdicts"] = _short(verdicts).value_counts().to_dict()
            atomic_write_json(mpath, m)
    prov = json.loads(ppath.read_text())
    prov.setdefault("verdicts_restated", []).append({
        "by": "docs/claims_stats.py", "commit": git_commit(ROOT), "date": _dt.date.today().isoformat(),
        "file": what, "rows_changed": changed,
        "how": "p_holm, mde (at Holm's alpha/m over the family's distinct tests) and verdict recomputed by"
               " evaluate.claim_verdicts from the saved n, diff, sd (or t interval), t_low, t_high and p;"
               " nothing re-run",
    })
    atomic_write_json(ppath, prov)


def main(write: bool) -> int:
    stale = 0
    for table in sorted(RES.rglob("claims*.parquet")):
        old = pd.read_parquet(table)
        new = restated(old)
        changed = _differs(old, new, RULED)
        print(f"{table.relative_to(ROOT)}: {len(new)} rows, {changed} differ from the rule")
        stale += changed > 0
        if write and changed:
            atomic_write_parquet(table, new)
            _record(table.parent, table.name, changed, new["verdict"])
    for mpath in sorted(RES.glob("*/metrics.json")):
        m = json.loads(mpath.read_text())
        for name, (old, col) in metrics_families(m).items():
            new = restated_family(old, col)
            changed = _differs(old, new, ["p_holm", "mde", col])
            print(f"{mpath.relative_to(ROOT)} {name}: {len(new)} rows, {changed} differ from the rule")
            stale += changed > 0
            if write and changed:
                m = json.loads(mpath.read_text())
                for i, (key, r) in enumerate(new.iterrows()):
                    entry = m[key] if name == "coarse_to_fine" else m[name][i]
                    entry.update({"p_holm": float(r.p_holm), "mde": float(r.mde), col: r[col]})
                atomic_write_json(mpath, m)
                _record(mpath.parent, f"metrics.json {name}", changed)
    return 1 if stale and not write else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="list only; write nothing")
    sys.exit(main(write=not ap.parse_args().check))
