"""The tutorials are experiments run by papermill; here each runs as its CPU-sized twin (tiny parameters)."""
import json

import pandas as pd

from helpers import ROOT
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


def test_spread_strata_twin(tmp_path):
    run = run_notebook(TUT / "spread_strata.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(seeds=[0], epochs=2, clf_epochs=2, noise_levels=[0.2], coreset_fractions=[0.5],
                                       coreset_runs=1, coreset_sizes=[0.3, 0.6], coreset_updates=4,
                                       strata_reduce="pca", max_strata=3))
    m = json.loads((run / "metrics.json").read_text())
    for loss in ["ss", "sc", "spread"]:
        assert 0.1 < m[f"{loss}/coarse_to_fine"] <= 1 and 0.4 < m[f"{loss}/end_model"] <= 1
        assert -1 <= m[f"{loss}/mean_pairwise_cos"] <= 1
    # the supervised losses pull each coarse class together more than SimCLR does
    assert m["sc/mean_pairwise_cos"] > m["ss/mean_pairwise_cos"]
    worst = pd.read_parquet(run / "worst_group.parquet")
    assert len(worst) == 5 and worst["worst-group acc"].between(0, 1).all()
    assert worst["strata F1 (rare)"].dropna().between(0, 1).all() and worst["strata F1 (rare)"].notna().sum() == 3
    noise = pd.read_parquet(run / "noise.parquet")
    assert len(noise) == 2 * (1 + 2) and noise["accuracy"].between(0, 1).all()
    cores = pd.read_parquet(run / "coresets.parquet")
    assert sorted(cores["size"].unique()) == [0.3, 0.6] and cores["method"].nunique() == 3
    for name in ["fig2_tsne_centre_similarity.png", "coresets.png", "transfer.parquet"]:
        assert (run / name).exists(), name


def test_cless_longtail_twin(tmp_path):
    run = run_notebook(TUT / "cless_longtail.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(packages=["sklearn"], min_tag_count=20, max_len=32, seeds=[0, 1], dim=16,
                                       fasttext_epochs=2, widths=[16, 24], pseudo_labels=[8], pretrain_epochs=1,
                                       pretrain_fractions=[0.5, 1.0], labeled_pool=64, fewshot_fractions=[0.5, 1.0],
                                       finetune_epochs=1, plm_epochs=1, plm_max_len=16))
    m = json.loads((run / "metrics.json").read_text())
    assert m["main_width"] in (16, 24) and m["main_pseudo_labels"] == 8 and m["tags"] > 20
    res = pd.read_parquet(run / "results.parquet")
    assert res["ap_micro"].between(0, 1).all() and res["ap_macro"].between(0, 1).all()
    # 2 widths x 1 amount x 2 seeds; 2 fractions x 2 seeds; 2 label fractions x 3 models x 2 seeds
    assert res.section.value_counts().to_dict() == {"fig4_left": 4, "fig4_right": 4, "fig5": 12}
    f5 = res[res.section == "fig5"]
    assert set(f5.model) == {"CLESS pretrained", "CLESS no pretraining", "PLM"}
    assert sorted(f5.labeled_texts.unique()) == [32, 64]
    plm = f5[f5.model == "PLM"]
    assert (plm.trainable_params < plm.params / 2).all()       # top 2 of 6 blocks and the head
    bins = pd.read_parquet(run / "ap_per_bin.parquet")
    assert set(bins.model) == {"CLESS pretrained", "CLESS no pretraining", "PLM", "CLESS zero-shot", "ZeroR"}
    assert bins.groupby(["model", "label_fraction", "seed"]).size().eq(5).all()      # five frequency bins each
    assert set(m["claims"]) and all(isinstance(v, bool) for v in m["claims"].values())
    for name in ["fig4_zero_shot.png", "fig5_few_shot.png", "fig6_ap_per_bin.png"]:
        assert (run / name).stat().st_size > 10_000, name


def test_csslm_fewshot_twin(tmp_path):
    run = run_notebook(TUT / "csslm_fewshot.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(k_shots=[2], n_dev=5, n_test=10, corpus_size=120, max_len=16, epochs=2,
                                       batch_size=4, retrieved=2, retrieved_sizes=[2, 3], ablation_levels=["d"]))
    m = json.loads((run / "metrics.json").read_text())
    assert m["classes"] == ["numpy", "scipy", "sklearn", "torch"]
    res = pd.read_parquet(run / "results.parquet")
    assert res["test_acc"].between(0, 1).all() and res["dev_acc"].between(0, 1).all()
    # 4 methods; 2 sizes x 2 methods; [D] + [D+C]
    assert res.section.value_counts().to_dict() == {"table2": 4, "fig4": 4, "table4": 2}
    css = res[res.method.str.startswith("css") & (res.section == "table2")]
    assert css["P same class"].between(0, 1).all() and css["P in-domain"].between(0, 1).all()
    assert sorted(res[res.section == "fig4"].retrieved.unique()) == [2, 3]
    assert set(m["claims"]) and all(isinstance(v, bool) for v in m["claims"].values())
    for method in ["standard", "scf", "css_lm"]:
        t = pd.read_parquet(run / f"embeddings_{method}.parquet")
        assert len(t) == 40 and {"id", "split", "label", "embedding", "method", "text"} <= set(t.columns)
    for name in ["fig4_retrieved_size.png", "fig5_tsne.png"]:
        assert (run / name).stat().st_size > 10_000, name
