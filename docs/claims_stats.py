"""State the verdicts of the published claims tables by the current rule, from their saved statistics.

    PYTHONPATH=$PWD python docs/claims_stats.py          # rewrite the tables whose verdicts differ from the rule
    PYTHONPATH=$PWD python docs/claims_stats.py --check  # only list them; exit status 1 when some differ

Every `claims*.parquet` under nbs/results holds, per row, the statistics of `evaluate.claim_verdicts` (`n`, `diff`,
`t_low`, `t_high`, `p`, `mde`) and the verdict they gave, worded `agrees` / `disagrees` / `not distinguishable here…`.
When the rule's wording changes, the verdicts are recomputed from those columns and nothing is re-run. On
2026-11-27 the change was what a "not distinguishable" row rules out: its t interval, not its mde. `p_holm` must come
out unchanged (the statistics are the same). `verdict` is rewritten, the `verdicts` count in the metrics.json beside
the table is recounted, and provenance.json records the rewrite. `tests/test_published.py` fails on a published
table whose verdicts are not the rule's.
"""
import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from contrastive_nb.core import atomic_write_json, atomic_write_parquet
from contrastive_nb.evaluate import claim_verdicts
from contrastive_nb.runs import git_commit

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "nbs" / "results"


def restated(claims: pd.DataFrame) -> pd.DataFrame:
    "The table with `p_holm` and `verdict` recomputed by `claim_verdicts` from its saved statistics."
    new = claim_verdicts(claims.drop(columns=["p_holm", "verdict"]), positive="agrees", negative="disagrees",
                         claim="verdict")
    np.testing.assert_allclose(new["p_holm"], claims["p_holm"], rtol=0, atol=1e-12)
    return new[list(claims.columns)]


def _short(verdicts: pd.Series) -> pd.Series:
    "The verdict without its explanation: agrees, disagrees or not distinguishable here."
    return verdicts.str.replace(r"(:| after).*", "", regex=True)


def _record(table: Path, claims: pd.DataFrame, changed: int):
    "Recount the verdicts in metrics.json and note the rewrite in provenance.json."
    mpath, ppath = table.parent / "metrics.json", table.parent / "provenance.json"
    if mpath.exists():
        m = json.loads(mpath.read_text())
        if "verdicts" in m:
            m["verdicts"] = _short(claims["verdict"]).value_counts().to_dict()
            atomic_write_json(mpath, m)
    prov = json.loads(ppath.read_text())
    prov.setdefault("verdicts_restated", []).append({
        "by": "docs/claims_stats.py", "commit": git_commit(ROOT), "date": _dt.date.today().isoformat(),
        "file": table.name, "rows_changed": changed,
        "how": "p_holm and verdict recomputed by evaluate.claim_verdicts from the saved n, diff, t_low, t_high,"
               " p and mde; nothing re-run",
    })
    atomic_write_json(ppath, prov)


def main(write: bool) -> int:
    stale = 0
    for table in sorted(RES.rglob("claims*.parquet")):
        old = pd.read_parquet(table)
        new = restated(old)
        changed = int((old["verdict"] != new["verdict"]).sum())
        print(f"{table.relative_to(ROOT)}: {len(new)} rows, {changed} verdicts differ from the rule")
        stale += changed > 0
        if write and changed:
            atomic_write_parquet(table, new)
            _record(table, new, changed)
    return 1 if stale and not write else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="list only; write nothing")
    sys.exit(main(write=not ap.parse_args().check))
