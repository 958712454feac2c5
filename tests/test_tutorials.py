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


def _check_claims(claims: pd.DataFrame):
    "Every claim is a paired comparison whose verdict follows from its two intervals."
    assert len(claims) and claims["verdict"].isin(["agrees", "disagrees", "not distinguishable here"]).all()
    for _, r in claims.iterrows():
        assert r["t low"] <= r["A − B"] + 1e-12 and r["A − B"] <= r["t high"] + 1e-12
        above, below = min(r["t low"], r["boot low"]) > 0, max(r["t high"], r["boot high"]) < 0
        assert r["verdict"] == ("agrees" if above else "disagrees" if below else "not distinguishable here"), r["claim"]


def test_cless_longtail_twin(tmp_path):
    # the second corpus (docstrings, split by source file) at toy size; the default (Reuters R52) is the committed run
    run = run_notebook(TUT / "cless_longtail.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(dataset="docstrings", packages=["sklearn"], min_tag_count=20, max_words=24,
                                       eval_cap=60, seeds=[0, 1], dim=16, fasttext_epochs=2, configs=[[16, 8], [24, 8]],
                                       pretrain_epochs=1, pretrain_fractions=[0.5, 1.0], labeled_pool=32,
                                       fewshot_fractions=[0.5, 1.0], finetune_epochs=1, finetune_batch=16))
    m = json.loads((run / "metrics.json").read_text())
    assert m["dataset"] == "docstrings" and m["main_width"] in (16, 24) and m["main_pseudo_labels"] == 8 and m["tags"] > 20
    assert m["cpu_seconds"] > 0 and m["plm_truncated_share"] == 0.0          # the PLM reads every word CLESS reads
    # the split manifest pins the corpus's content hash, and no source file is in two splits
    manifest = json.loads((run / "split.json").read_text())
    assert manifest["params"]["corpus_sha256"] == m["fingerprint"]["corpus"]
    from contrastive_nb.text import docstring_corpus
    corpus = docstring_corpus(["sklearn"], min_tag_count=20)
    assert corpus.fingerprint() == m["fingerprint"]["corpus"]
    files = {k: {corpus.groups[i] for i in v} for k, v in manifest["splits"].items()}
    assert not files["train"] & files["test"] and not files["train"] & files["dev"] and not files["dev"] & files["test"]
    res = pd.read_parquet(run / "results.parquet")
    assert res["ap_micro"].between(0, 1).all() and res["ap_macro"].between(0, 1).all()
    # 4 zero-shot baselines x 2 seeds; 2 set-ups x 2 seeds; 2 fractions x 2 seeds; 2 label fractions x 3 models x 2 seeds
    assert res.section.value_counts().to_dict() == {"zero_shot": 8, "fig4_left": 4, "fig4_right": 4, "fig5": 12}
    zs = res[res.section == "zero_shot"]
    assert set(zs.model) == {"ZeroR", "tag-word overlap", "fastText cosine", "MiniLM cosine"}
    assert zs.groupby("model").ap_micro.nunique().eq(1).all()                  # training-free: the same every seed
    right = res[res.section == "fig4_right"]
    assert (right.epochs * right.pretrain_fraction).eq(1).all()                 # equal updates: epochs x share is constant
    f5 = res[res.section == "fig5"]
    assert set(f5.model) == {"CLESS pretrained", "CLESS no pretraining", "PLM"} and sorted(f5.labeled_texts.unique()) == [16, 32]
    assert f5.groupby(["seed", "label_fraction"]).updates.nunique().eq(1).all()  # the same number of updates for all three
    plm = f5[f5.model == "PLM"]
    assert (plm.trainable_params < plm.params / 2).all()                       # top 2 of 6 blocks and the head
    bins = pd.read_parquet(run / "ap_per_bin.parquet")
    assert {"CLESS pretrained", "CLESS no pretraining", "PLM", "CLESS zero-shot", "MiniLM cosine", "ZeroR"} <= set(bins.model)
    claims = pd.read_parquet(run / "claims.parquet")
    _check_claims(claims)
    assert {"zero-shot CLESS beats MiniLM cosine", "zero-shot CLESS beats tag-word overlap"} <= set(claims.claim)
    assert claims.claim.str.contains("retains more AP").any() and claims.claim.str.contains("bin 4").any()
    for name in ["fig4_zero_shot.png", "fig5_few_shot.png", "fig6_ap_per_bin.png"]:
        assert (run / name).stat().st_size > 10_000, name


def test_csslm_fewshot_twin(tmp_path):
    run = run_notebook(TUT / "csslm_fewshot.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(k_shot=2, splits=[0, 1], n_dev=4, n_test=10, corpus_size=40, in_domain=0.25,
                                       other_corpora=["guardian-headlines", "rotten_tomatoes-plots"], other_per_source=20,
                                       max_len=16, epochs=2, batch_size=4, retrieved_sizes=[2, 3]))
    m = json.loads((run / "metrics.json").read_text())
    assert m["classes"] == ["fresh", "rotten"] and m["retrieved_chosen"] in (2, 3)
    assert set(m["fingerprints"]) == {"rotten_tomatoes", "guardian-headlines", "rotten_tomatoes-plots"}
    res = pd.read_parquet(run / "results.parquet")
    assert res["test_acc"].between(0, 1).all() and res["dev_acc"].between(0, 1).all()
    grid = res[res.section == "size_grid"]
    assert sorted(grid.retrieved) == [2, 3] and grid.split.eq(0).all()
    assert m["retrieved_chosen"] == grid.loc[grid.dev_acc.idxmax(), "retrieved"]   # chosen on dev
    t2 = res[res.section == "table2"]
    arms = {"Standard", "SCF", "Standard [D][C]", "SCF [D][C]", "CSS-LM-ST", "CSS-LM", "CSS-LM all-N"}
    assert set(t2.arm) == arms and t2.groupby("arm").split.nunique().eq(2).all() and len(t2) == 14
    assert not t2[t2.arm.isin(["Standard", "SCF"])].special_tokens.any() and t2[~t2.arm.isin(["Standard", "SCF"])].special_tokens.all()
    css = t2[t2.arm.str.startswith("CSS")]
    assert css.retrieved.eq(m["retrieved_chosen"]).all()
    assert css["P same class"].between(0, 1).all() and css["P in-domain"].between(0, 1).all()
    claims = pd.read_parquet(run / "claims.parquet")
    _check_claims(claims)
    assert claims.splits.eq(2).all() and {"CSS-LM beats Standard fine-tuning (Table 2)", "CSS-LM beats SCF (Table 2)"} <= set(claims.claim)
    for arm in ["standard", "scf", "css_lm"]:
        t = pd.read_parquet(run / f"embeddings_{arm}.parquet")
        assert len(t) == 20 and {"id", "split", "label", "embedding", "method", "text"} <= set(t.columns)
    for name in ["fig4_retrieved_size.png", "fig5_tsne.png"]:
        assert (run / name).stat().st_size > 10_000, name
