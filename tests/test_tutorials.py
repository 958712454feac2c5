"""The tutorials are experiments run by papermill; here each runs as its CPU-sized twin (tiny parameters)."""
import json

import pandas as pd

from conftest import ROOT
from contrastive_nb.runs import run_notebook

TUT = ROOT / "nbs" / "tutorials"


def test_suncet_digits_twin(tmp_path):
    run = run_notebook(TUT / "suncet_digits.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(epochs=3, eval_every=1, suncet_off_epoch=1, finetune_epochs=1, warmup_epochs=0,
                                       simclr_batch=256, suncet_unlabeled_batch=256, items_per_class=4))
    m = json.loads((run / "metrics.json").read_text())
    assert m["epochs"] == 3 and 0.1 < m["simclr/final_probe_top1"] <= 1 and 0.1 < m["simclr+suncet/final_probe_top1"] <= 1
    # SuNCEt switched off after epoch 1: its labeled forward is charged in epoch 1 only
    h = json.loads((run / "histories.json").read_text())["simclr+suncet"]
    lab = [r["flops/labeled:suncet/forward"] for r in h]
    assert lab[0] > 0 and lab[0] == lab[1] == lab[2]
    assert h[1]["loss/suncet"] is None and h[0]["loss/suncet"] > 0
    for name in ["accuracy_vs_compute.png", "tsne.png", "split.json", "histories.json",
                 "simclr/checkpoints/latest.json", "simclr+suncet/history.json"]:
        assert (run / name).exists(), name
    t = pd.read_parquet(run / "embeddings_simclr_suncet.parquet")
    assert len(t) == 360 and {"id", "split", "label", "embedding"} <= set(t.columns)
