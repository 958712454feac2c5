"""The tutorials are experiments run by papermill; here each runs as its CPU-sized twin (tiny parameters)."""
import json
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import ROOT, tutorial_arms
from contrastive_nb.data import load_split_manifest
from contrastive_nb.evaluate import holm
from contrastive_nb.runs import run_notebook

TUT = ROOT / "nbs" / "tutorials"



def test_suncet_digits_twin(tmp_path):
    spec = {a["arm"]: a for a in tutorial_arms("suncet_digits")}
    ARMS = list(spec)
    PRETRAINED = [a for a in ARMS if spec[a]["pretrained"]]
    BASELINES = [a for a in ARMS if spec[a]["baseline"]]
    (METHOD,) = [a for a in ARMS if not spec[a]["baseline"]]
    assert METHOD == "simclr+suncet" and {"simclr_matched_batch", "simclr_flop_matched", "random_init"} <= set(ARMS)
    run = run_notebook(TUT / "suncet_digits.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(epochs=2, suncet_off_epoch=1, finetune_updates=4, supervised_updates=4, warmup_epochs=0,
                                       simclr_batch=512, suncet_unlabeled_batch=512, items_per_class=2, probe_Cs=[1.0],
                                       finetune_lr=[0.05, 0.2], thresholds=[0.5, 0.9], sweep_dir="none",
                                       explorer_layout="pca", tuning_storage="tuning.sqlite"))
    m = json.loads((run / "metrics.json").read_text())
    # the same tuning budget for every arm with a space, on a seed that is not reported; the chosen values lie in
    # the arm's space and are the best of its trials on validation
    tun = m["tuning"]
    assert list(tun) == ARMS and m["tuning_seed"] != m["seed"]
    for a in ARMS:
        t = tun[a]
        assert t["space"] == spec[a]["space"] and t["trials"] == (4 if spec[a]["space"] else 0), a
        assert set(t["chosen"]) == set(spec[a]["space"]) and t["seed"] == m["tuning_seed"], a
        if spec[a]["space"]:
            assert len(t["tried"]) == 4 and t["value"] == max(x["value"] for x in t["tried"]), a
            assert t["chosen"] in [x["params"] for x in t["tried"] if x["value"] == t["value"]], a
    assert tun["simclr+suncet"]["chosen"]["temperature"] in (0.2, 0.5, 1.0)
    # the tuning seed's split shares the reported seed's test set and trains or selects on none of its images
    rep, tun_sp = (load_split_manifest(run / f) for f in ("split.json", "tuning_split.json"))
    assert m["test_seed"] == 0 and np.array_equal(rep["test"], tun_sp["test"])
    assert not np.intersect1d(np.concatenate([tun_sp[k] for k in ("labeled", "unlabeled", "val")]), rep["test"]).size
    assert 0.1 <= tun["simclr+suncet"]["chosen"]["lr"] <= 2.0
    # a resumed sweep reads the stored trials back: tuning again from the run's storage runs no trial (an
    # objective that fails) and chooses the same values
    from contrastive_nb.tuning import tune_arms
    def never(*_):
        raise AssertionError("a stored study was tuned again")
    again = tune_arms(never, {a: spec[a]["space"] for a in ARMS}, trials=4, seed=m["tuning_seed"],
                      storage=f"sqlite:///{run / 'tuning.sqlite'}",
                      study_prefix=f"suncet-{tun[METHOD]['setting']}-")
    assert all(again[a]["chosen"] == tun[a]["chosen"] for a in ARMS)
    assert m["target_split"] == "val" and m["arms"] == ARMS and m["strongest_baseline"] in BASELINES
    assert m["arm_spec"] == list(spec.values())
    res = m["results"]
    for a in ARMS:
        assert 0 <= res[a]["val_top1"] <= 1 and 0 <= res[a]["test_top1"] <= 1, a
    # the plateau: the first epoch of the arm's validation curve within the tolerance of its best, no later than the
    # selected (best) epoch
    curves = json.loads((run / "histories.json").read_text())["curves"]
    for a in ARMS:
        c, tol = curves[a], m["plateau_tolerance"]
        best = max(r["val_top1"] for r in c)
        first = [r["epoch"] for r in c if r["val_top1"] >= best - tol][0]
        assert res[a]["plateau_epoch"] == first <= res[a]["selected_epoch"], a
        assert 0 <= res[a]["flops_after_plateau"] <= 1, a
    # the split: four disjoint parts (checked on reading) that cover the dataset; validation and test are untouched by training
    split = load_split_manifest(run / "split.json", require=["labeled", "unlabeled", "val", "test"])
    assert sum(len(v) for v in split.values()) == 1797 and m["n_val"] == len(split["val"]) and m["n_test"] == len(split["test"])
    # validation selection: each pre-trained arm's selected epoch is the first maximum of its validation curve, and the
    # curves start at the shared random init (epoch 0, no FLOPs), which is the random-init arm's validation probe
    curves = json.loads((run / "histories.json").read_text())["curves"]
    for a in PRETRAINED:
        c = curves[a]
        assert c[0]["epoch"] == 0 and c[0]["flops"] == 0 and c[0]["val_top1"] == res["random_init"]["val_probe_top1"]
        assert res[a]["selected_epoch"] == max(c, key=lambda r: r["val_top1"])["epoch"], a
        assert res[a]["val_probe_top1"] == max(r["val_top1"] for r in c), a
    # matched budget: SimCLR at the SuNCEt run's unlabeled batch makes exactly its updates
    assert res["simclr_matched_batch"]["pretrain_updates"] == res["simclr+suncet"]["pretrain_updates"]
    # App. C: fine-tuning FLOPs (both learning rates tried) are in every trained arm's total
    for a in PRETRAINED:
        assert res[a]["finetune_flops"] > 0 and res[a]["finetune_lr"] in (0.05, 0.2) and res[a]["finetune_augment"] in ("basic", "none")
        assert res[a]["total_flops"] == res[a]["pretrain_flops"] + res[a]["finetune_flops"]
    assert res["supervised_only"]["pretrain_flops"] == 0 < res["supervised_only"]["total_flops"]
    assert set(m["compute_saved"]) == set(BASELINES)
    assert set(m["reach"]) == set(ARMS) and all(set(v) == {"0.5", "0.9"} for v in m["reach"].values())
    # SuNCEt switched off after epoch 1: its labeled forward is charged in epoch 1 only
    # the FLOP-matched arm: the whole number of its epochs (FLOPs per epoch measured on the ledger) whose FLOPs come
    # nearest the pre-training FLOPs of the arm it matches, within the stated tolerance
    matched = [a for a in ARMS if spec[a]["flops_of"]]
    assert matched and set(m["flop_match"]) == set(matched)
    for a in matched:
        f, target = m["flop_match"][a], res[spec[a]["flops_of"]]["pretrain_flops"]
        assert f["target_flops"] == target and f["flops"] == res[a]["pretrain_flops"] == f["epochs"] * f["flops_per_epoch"]
        assert res[a]["pretrain_epochs"] == f["epochs"] == max(1, round(target / f["flops_per_epoch"]))
        assert abs(f["gap"]) <= f["tolerance"] and abs(f["flops"] - target) <= f["flops_per_epoch"] / 2
    # the labeled-only selection: each probed arm's epoch is the first maximum of its curve of the probe
    # cross-validated inside the labeled images (no validation label), its test score a probe with the chosen C;
    # the fine-tuned baseline runs App. A's recipe without any choice, to its last epoch
    cv_curves = json.loads((run / "histories.json").read_text())["cv_curves"]
    for a in ARMS:
        r = res[a]
        assert 0 <= r["test_labeled_only_top1"] <= 1, a
        if spec[a]["final"] == "finetune":
            assert r.get("labeled_only_C") is None
            continue
        assert r["cv_folds"] == 5 and r["labeled_only_C"] == 1.0 and 0 <= r["cv_top1"] <= 1, a
        if spec[a]["pretrained"]:
            c = cv_curves[a]
            assert c[0]["epoch"] == 0 and c[0]["cv_top1"] == cv_curves[PRETRAINED[0]][0]["cv_top1"]
            assert r["cv_top1"] == max(x["cv_top1"] for x in c), a
            assert r["labeled_only_epoch"] == max(c, key=lambda x: x["cv_top1"])["epoch"], a
        else:
            assert r["labeled_only_epoch"] == 0 and r["cv_top1"] == cv_curves[PRETRAINED[0]][0]["cv_top1"]
    h = json.loads((run / "histories.json").read_text())["histories"]["simclr+suncet"]
    lab = [r["flops/labeled:suncet/forward"] for r in h]
    assert lab[0] > 0 and lab[0] == lab[1] and h[1]["loss/suncet"] is None and h[0]["loss/suncet"] > 0
    arms = pd.read_parquet(run / "arms.parquet")
    assert arms["arm"].tolist() == ARMS
    for name in ["accuracy_vs_compute.png", "reach.parquet", "compute_saved.parquet",
                 "checkpoints/simclr+suncet/checkpoints/latest.json", "weights/simclr_suncet.safetensors"]:
        assert (run / name).exists(), name
    t = pd.read_parquet(run / "embeddings_simclr_suncet.parquet")
    assert len(t) == m["n_test"] and {"id", "split", "label", "embedding"} <= set(t.columns)
    assert set(t["id"]) == set(split["test"].tolist())


def _digit_folder(root, n=300, every=5):
    """`n` digit PNGs as a user's folder: every `every`-th ten in labeled/d<k>/ (class names that are not the
    label ids), the rest in unlabeled/ (flat)."""
    from PIL import Image
    from sklearn.datasets import load_digits
    d = load_digits()
    for i in range(n):
        part = f"labeled/d{d.target[i]}" if (i // 10) % every == 0 else "unlabeled"
        (root / part).mkdir(parents=True, exist_ok=True)
        Image.fromarray((d.images[i] * 255 / 16).astype(np.uint8)).save(root / part / f"{i}.png")
    return root


def test_spread_strata_twin(tmp_path):
    """The twin runs on the digits as a user's folder of PNGs (classes n0..n9, 100 unlabeled images, which this study
    leaves out) with its coarse classes from a mapping file: the bundled sets' path is the executed notebook's."""
    arms = tutorial_arms("spread_strata")
    study = lambda name: [a for a in arms if a["study"] == name]
    folder = _digit_folder(tmp_path / "digits", n=1797, every=1)
    for p in sorted((folder / "labeled").rglob("*.png"), key=lambda p: int(p.stem))[-100:]:
        (folder / "unlabeled").mkdir(exist_ok=True)
        p.rename(folder / "unlabeled" / p.name)
    mapping = tmp_path / "coarse.json"
    mapping.write_text(json.dumps({f"d{k}": "small" if k < 5 else "big" for k in range(10)}))
    run = run_notebook(TUT / "spread_strata.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(dataset=f"folder:{folder}", coarse=str(mapping), seeds=[0, 1], worst_group_seeds=[0], noise_seeds=[0], coreset_seeds=[0], epochs=2,
                                       select_every=1, clf_epochs=2, probe_draws=1, probe_Cs=[1.0], strength_seeds=[100],
                                       strength_grid=[[0.5, 0.2], [1.0, 0.0]], strength_margin=0.0, noise_grid=[0.4, 0.8],
                                       noise_search_seeds=[100], coreset_fractions=[0.5], coreset_runs=1,
                                       coreset_sizes=[0.3, 0.6], coreset_updates=4, max_strata=3, train_limit=300,
                                       strata_reduce="pca"))
    m = json.loads((run / "metrics.json").read_text())
    assert m["target_split"] == "val" and m["arms"] == arms      # the run used the arms cell's list
    assert m["strength_seeds"] == [100] and m["noise_search_seeds"] == [100]   # the searches' seeds, recorded
    for s in {a["study"] for a in arms}:                        # one method per study, unique arm names
        names = [a["arm"] for a in study(s)]
        assert len(set(names)) == len(names) and [a["role"] for a in study(s)].count("method") == 1, s
    for seed in (0, 1):                       # each seed's split: disjoint (checked on reading)
        load_split_manifest(run / f"split_seed{seed}.json", require=["train", "val", "test"])
    transfer = study("transfer")
    probes = pd.read_parquet(run / "transfer_probes.parquet")
    # 2 seeds x the transfer arms (random init included) x 2 spaces (h, z) x 4 label shares x 1 draw
    assert len(probes) == 2 * len(transfer) * 2 * 4 and set(probes["space"]) == {"h", "z"}
    assert set(probes["loss"]) == {a["loss"] for a in transfer}
    assert probes["val_top1"].between(0, 1).all() and probes["test_top1"].between(0, 1).all()
    assert sorted(probes["fraction"].unique()) == [0.01, 0.02, 0.1, 1.0]   # 1.0: the full-label probe
    full = probes[probes["fraction"] == 1.0]                    # every training label: the whole train part
    assert (full["labeled"] == 300).all() and (probes[probes["fraction"] < 1]["labeled"] < 300).all()
    # the same budget for every trained arm, on a seed that is not reported; the reported runs use the choice
    tuning = m["tuning"]
    assert m["tuning_seed"] not in m["seeds"] and set(tuning) == {a["arm"] for a in transfer}
    for a in transfer:
        r = tuning[a["arm"]]
        assert r["space"] == a["space"] and r["trials"] == (4 if a["space"] else 0) and r["seed"] == m["tuning_seed"]
        assert len(r["tried"]) == r["trials"] and r["distinct"] == r["trials"]        # a range: no repeats
        assert all(a["space"][k]["float"][0] <= v <= a["space"][k]["float"][1] for k, v in r["chosen"].items())
        assert r["value"] == (max(t["value"] for t in r["tried"]) if a["space"] else None)
    models = pd.read_parquet(run / "transfer_models.parquet")
    assert models["mean_pairwise_cos"].between(-1, 1).all()
    for a in transfer:
        rows = models[models["loss"] == a["loss"]]
        # one epoch rule: the untrained network is the random-init row only; every trained arm keeps its last
        assert (rows["selected_epoch"] == (0 if a["select"] is None else 2)).all(), a["arm"]
        for k, v in tuning[a["arm"]]["chosen"].items():
            assert (rows[f"tuned_{k}"] == v).all(), (a["arm"], k)
    assert any(k.startswith("coarse_to_fine/h/1%/spread_minus_") for k in m)
    # worst-group: the strength search stops at the first strength that qualifies (the oracle's validation gap at
    # least the margin, 0 here, in every search seed, then some first stage's rare-strata F1 on validation below 1);
    # first stages are scored exactly where the gap is clear (one column per recovered arm's loss)
    search = pd.read_parquet(run / "strength_search.parquet")
    strength = [m["worst_group/strength"]["tint"], m["worst_group/strength"]["jitter"]]
    f1_cols = [c for c in search.columns if c.startswith("rare_f1_val/")]
    assert f1_cols == [f"rare_f1_val/{a['loss']}" for a in study("worst_group") if a["groups"] == "recovered"]
    clear = search.groupby(["tint", "jitter"], sort=False)["gap"].transform("min") >= 0
    assert search[f1_cols].notna().all(axis=1).eq(clear).all()
    assert search.loc[clear, f1_cols].stack().between(0, 1).all()
    tried = [(list(k), bool(g.gap.min() >= 0 and g[f1_cols].mean().min() < 1))
             for k, g in search.groupby(["tint", "jitter"], sort=False)]
    if m["worst_group/strength"]["criterion_met"]:             # the first that qualifies, and the search stopped
        assert tried[-1] == (strength, True) and not any(q for _, q in tried[:-1])
    else:                                                       # none qualified: the whole grid was tried
        assert len(tried) == 2 and not any(q for _, q in tried) and strength in ([0.5, 0.2], [1.0, 0.0])
    worst = pd.read_parquet(run / "worst_group.parquet")
    wg = study("worst_group")
    assert sorted(worst["arm"]) == sorted(a["arm"] for a in wg)
    assert worst["test_worst_group"].between(0, 1).all() and worst["test_worst_group"].le(worst["test_average"]).all()
    recovered = worst[worst["groups"] == "recovered"]
    assert len(recovered) == sum(a["groups"] == "recovered" for a in wg) and recovered["rare_f1"].notna().all()
    assert recovered["rare_f1_val"].between(0, 1).all() and worst["rare_f1"].notna().sum() == len(recovered)
    # the first stage keeps its last epoch (validation, whose background is independent, would favour the untrained
    # network and give L_SC and L_spread one and the same groups)
    assert (recovered["stage1_epoch"] == 2).all()
    # noise: the rate comes from the search (on its own seeds), the study runs clean / noisy / corrected at it
    rate = m["noise/rate"]["rate"]                              # criterion met or not, the rate is one of the grid
    nsearch = pd.read_parquet(run / "noise_search.parquet")
    assert rate in (0.4, 0.8) and set(nsearch["noise"]) <= {0.4, 0.8} and set(nsearch["seed"]) == {100}
    noise = pd.read_parquet(run / "noise.parquet")
    assert len(noise) == len(study("noise")) * 3 and set(noise["condition"]) == {"clean", "noisy", "corrected"}
    assert set(noise["noise"]) == {0.0, rate} and noise["test_top1"].between(0, 1).all()
    assert sum("(the premise)" in r["claim"] for r in m["noise/claims"]) == len(study("noise"))
    cores = pd.read_parquet(run / "coresets.parquet")
    assert sorted(cores["size"].unique()) == [0.3, 0.6] and set(cores["method"]) == {a["arm"] for a in study("coresets")}
    for name in ["fig2_tsne_centre_similarity.png", "coresets.png", "strata_f1.parquet"]:
        assert (run / name).exists(), name
    # the explorer's table: L_spread's test projections with class names, coarse classes (from the mapping) and files
    emb = pd.read_parquet(run / "embeddings_spread_test.parquet")
    split0 = load_split_manifest(run / "split_seed0.json", require=["train", "val", "test"])
    assert len(emb) == 300 and set(emb["id"]) <= set(split0["test"].tolist())        # train_limit of the test part
    assert (emb["class_name"] == "d" + emb["label"].astype(str)).all()
    assert (emb["coarse"] == np.where(emb["label"] < 5, "small", "big")).all()
    assert all(Path(p).parent.name == c and Path(p).is_file() for p, c in zip(emb["path"], emb["class_name"]))


def _check_claims(claims: pd.DataFrame):
    """Every claim is a paired comparison with the statistics of `evaluate.claim_verdicts` (t interval, p, Holm over
    the table, mde) whose verdict follows the rule; no bootstrap interval below 10 pairs."""
    assert len(claims) and {"n", "diff", "t_low", "t_high", "p", "p_holm", "mde"} <= set(claims.columns)
    # Holm over the distinct tests: a repeated row (the same n, diff, interval and p) counts once and shares its p_holm
    key = claims[["n", "diff", "t_low", "t_high", "p"]].astype(float).round(12).fillna(-1.0)
    first = ~key.duplicated()
    np.testing.assert_allclose(claims.loc[first, "p_holm"], holm(claims.loc[first, "p"]), rtol=0, atol=1e-12)
    assert (claims.groupby([key[c] for c in key])["p_holm"].nunique(dropna=False) == 1).all()
    for _, r in claims.iterrows():
        assert r["t_low"] <= r["diff"] + 1e-12 and r["diff"] <= r["t_high"] + 1e-12
        sig = r["p_holm"] < 0.05
        expect = ("agrees" if sig and r["t_low"] > 0 else "disagrees" if sig and r["t_high"] < 0
                  else f"not distinguishable here: effects outside the 95% interval [{r['t_low']:+.3g}, {r['t_high']:+.3g}] are ruled out"
                  if r["t_low"] <= 0 <= r["t_high"] else "not distinguishable here after Holm's adjustment")
        assert r["verdict"].startswith(expect), (r["claim"], r["verdict"])
        assert r["n"] >= 10 or (np.isnan(r["boot low"]) and np.isnan(r["boot high"])), r["claim"]


def test_cless_longtail_twin(tmp_path):
    # the second corpus (docstrings, split by source file) at toy size; the default (Reuters R52) is the committed run
    run = run_notebook(TUT / "cless_longtail.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(dataset="docstrings", packages=["sklearn"], min_tag_count=20, max_words=24,
                                       eval_cap=60, seeds=[0, 1], dim=16, fasttext_epochs=2, widths=[16, 24],
                                       pseudo_labels=[8], pretrain_epochs=2, pretrain_fractions=[0.5, 1.0],
                                       labeled_pool=32, fewshot_fractions=[0.5, 1.0], finetune_epochs=1,
                                       finetune_batch=16))
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
    # 7 zero-shot baselines (ZeroR, random, class prior, tag-word overlap and counts, fastText, MiniLM) and CLESS
    # x 2 seeds; 2 fractions x 2 seeds; 2 label fractions x 3 models x 2 seeds
    assert res.section.value_counts().to_dict() == {"zero_shot": 16, "fig4_right": 4, "fig5": 12}
    zs = res[res.section == "zero_shot"]
    assert set(zs.model) == {"ZeroR", "random", "class prior", "tag-word overlap", "tag-word counts + prior",
                             "fastText cosine", "MiniLM cosine", "CLESS zero-shot"}
    fixed = zs[~zs.model.isin(["random", "CLESS zero-shot"])]
    assert fixed.groupby("model").ap_micro.nunique().eq(1).all()               # training-free: the same every seed
    assert zs[zs.model == "random"].ap_micro.nunique() == 2                     # the random scorer draws per seed
    # the same tuning budget for every arm with a knob, on a seed that is not reported, chosen on dev; the reported
    # seeds ran the chosen values
    tuning = m["tuning"]
    assert set(tuning) == set(zs.model) - {"CLESS zero-shot"} | {"CLESS zero-shot", "CLESS pretrained",
                                                                   "CLESS no pretraining", "PLM"}
    assert {a: r["trials"] for a, r in tuning.items() if r["space"]} == dict.fromkeys(
        ["CLESS zero-shot", "CLESS pretrained", "CLESS no pretraining", "PLM"], 4)
    assert all(r["trials"] == 0 for r in tuning.values() if not r["space"]) and {r["seed"] for r in tuning.values()} == {100}
    assert m["tuning_seed"] == 100
    # finite spaces drawn without replacement: all 2 zero-shot configurations, 4 distinct of the others' 4 and 9
    assert {a: r["distinct"] for a, r in tuning.items() if r["space"]} == {
        "CLESS zero-shot": 2, "CLESS pretrained": 4, "CLESS no pretraining": 4, "PLM": 4}
    for a, r in tuning.items():
        if r["space"]:
            assert r["value"] == max(t["value"] for t in r["tried"]) and r["chosen"] in [t["params"] for t in r["tried"]]
    assert [m["main_width"], m["main_pseudo_labels"]] == [tuning["CLESS zero-shot"]["chosen"][k] for k in ("width", "pseudo_labels")]
    assert zs[zs.model == "CLESS zero-shot"].width.eq(m["main_width"]).all()
    right = res[res.section == "fig4_right"]
    assert (right.epochs * right.pretrain_fraction).eq(2).all()                 # equal updates: epochs x share is constant
    f5 = res[res.section == "fig5"]
    assert set(f5.model) == {"CLESS pretrained", "CLESS no pretraining", "PLM"} and sorted(f5.labeled_texts.unique()) == [16, 32]
    assert f5.groupby(["seed", "label_fraction"]).updates.nunique().eq(1).all()  # the same number of updates for all three
    plm = f5[f5.model == "PLM"]
    assert (plm.trainable_params < plm.params / 2).all()                       # top 2 of 6 blocks and the head
    bins = pd.read_parquet(run / "ap_per_bin.parquet")
    assert {"CLESS pretrained", "CLESS no pretraining", "PLM", "CLESS zero-shot", "MiniLM cosine", "ZeroR"} <= set(bins.model)
    claims = pd.read_parquet(run / "claims.parquet")
    _check_claims(claims)
    assert {"zero-shot CLESS beats ZeroR", "zero-shot CLESS beats random", "zero-shot CLESS beats MiniLM cosine",
            "zero-shot CLESS beats tag-word overlap", "zero-shot CLESS beats class prior",
            "zero-shot CLESS beats tag-word counts + prior"} <= set(claims.claim)
    # no comparison twice in the family: the class prior's AP macro is ZeroR's, so it is compared on AP micro only
    assert not claims.duplicated(["claim", "metric"]).any()
    assert set(claims[claims.claim == "zero-shot CLESS beats class prior"].metric) == {"ap_micro"}
    assert claims.claim.str.contains("retains more AP").any() and claims.claim.str.contains("bin 4").any()
    for name in ["fig4_zero_shot.png", "fig5_few_shot.png", "fig6_ap_per_bin.png"]:
        assert (run / name).stat().st_size > 10_000, name
    _ends_in_the_explorer(run / "cless_longtail.ipynb")


def _rotten_tomatoes_file(path, per_class: int):
    "A `text,label` CSV of your own, written from the bundled rotten_tomatoes reviews (`per_class` texts each)."
    import csv
    from contrastive_nb.text import load_text_dataset
    rt, rows = load_text_dataset("rotten_tomatoes", "train"), []
    for c in ("fresh", "rotten"):
        rows += [(t, c) for t, g in zip(rt.texts, rt.tags) if g == [c]][:per_class]
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "label"), *rows])
    return dict(rows)


def test_csslm_fewshot_twin(tmp_path):
    # the task is a `text,label` CSV of your own (`-p task csv:PATH`); the bundled default is the committed run
    given = _rotten_tomatoes_file(tmp_path / "reviews.csv", 30)
    spec = tutorial_arms("csslm_fewshot")         # name → method, special tokens, settings, search space
    arms = list(spec)                             # the twin runs every arm, CSS-LM-ST included
    run = run_notebook(TUT / "csslm_fewshot.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(task=f"csv:{tmp_path / 'reviews.csv'}", k_shot=2, splits=[0, 1], n_dev=4,
                                       n_test=10, corpus_size=40, in_domain=0.25, arms=arms, pool_size=0,
                                       other_corpora=["guardian-headlines", "rotten_tomatoes-plots"], other_per_source=20,
                                       max_len=16, epochs=3, patience=1, batch_size=4, retrieved_sizes=[2, 3]))
    m = json.loads((run / "metrics.json").read_text())
    assert m["classes"] == ["fresh", "rotten"] and m["retrieved_chosen"] in (2, 3)
    assert set(m["fingerprints"]) == {"reviews.csv", "guardian-headlines", "rotten_tomatoes-plots"}
    assert m["n_test"] == 20 and m["n_dev"] == 8                       # per class, drawn from the file
    # the same budget for every arm, on a split that is not reported; `retrieved_sizes` replaced the k choices
    tuning = m["tuning"]
    assert set(tuning) == set(arms) and m["tuning_split"] not in m["splits"]
    for a in arms:
        t = tuning[a]
        # every space holds at least 4 configurations: a draw without replacement tries 4 distinct ones
        assert t["trials"] == 4 and t["seed"] == m["tuning_split"] and t["distinct"] == 4, a
        assert set(t["space"]) == set(spec[a]["space"]) and set(t["chosen"]) == set(t["space"]), a
        assert t["value"] == max(x["value"] for x in t["tried"]), a          # chosen on dev
        if "k" in t["space"]:
            assert t["space"]["k"] == {"choice": [2, 3]} and t["chosen"]["k"] in (2, 3), a
    res = pd.read_parquet(run / "results.parquet")
    tune = res[res.section == "tuning"]
    assert tune.split.eq(m["tuning_split"]).all() and tune.test_acc.isna().all()   # tuning never sees test
    assert tune.groupby("arm").size().to_dict() == {a: tuning[a]["distinct"] for a in arms}
    t2 = res[res.section == "table2"]
    assert t2["test_acc"].between(0, 1).all() and t2["dev_acc"].between(0, 1).all()
    assert set(t2.arm) == set(arms) and t2.groupby("arm").split.nunique().eq(2).all() and len(t2) == 2 * len(arms)
    assert (t2.special_tokens == t2.arm.map(lambda a: spec[a]["tokens"])).all()
    assert (t2.method == t2.arm.map(lambda a: spec[a]["method"])).all()
    for a in arms:                                # the reported splits run each arm's chosen values
        rows, c = t2[t2.arm == a], tuning[a]["chosen"]
        assert rows.lr.eq(c["lr"]).all() and rows.head_lr.eq(c["head_lr"]).all(), a
        assert rows.retrieved.eq(c.get("k", 0)).all(), a
    # one early-stopping rule: a run ends `patience` (1) epochs after its best one, or at `epochs`
    assert ((t2.epochs_run == t2.best_epoch + 1) | (t2.epochs_run == 3)).all()
    assert (t2.stopped_early == (t2.epochs_run < 3)).all()
    # patience counts only above chance (the dev set's majority share: 4 of 8 here), the same for every arm:
    # a run learned iff its best dev accuracy exceeded it, and one that never did ran every epoch
    assert m["patience_from"] == 0.5
    assert (t2.learned == (t2.dev_acc > m["patience_from"])).all() and (t2[~t2.learned].epochs_run == 3).all()
    for a in arms:                                # "did not learn", counted on the reported splits only
        assert m[f"{a}/no_learning_runs"] == int((~t2[t2.arm == a].learned).sum()), a
    css = t2[t2.arm.str.startswith("CSS")]
    assert css["P same class"].between(0, 1).all() and css["P in-domain"].between(0, 1).all()
    assert m["retrieval/same_class_share"] == css[css.arm == "CSS-LM"]["P same class"].mean()
    assert m["retrieval/in_domain_share"] == css[css.arm == "CSS-LM"]["P in-domain"].mean()
    claims = pd.read_parquet(run / "claims.parquet")
    _check_claims(claims)
    assert claims.splits.eq(2).all() and {"CSS-LM beats Standard fine-tuning (Table 2)", "CSS-LM beats SCF (Table 2)",
                                          "CSS-LM beats the controlled Standard (same input, the loss alone differs)",
                                          "CSS-LM beats CSS-LM-ST (Table 2)"} <= set(claims.claim)
    for arm in ["standard", "scf", "css_lm"]:
        t = pd.read_parquet(run / f"embeddings_{arm}.parquet")
        assert len(t) == 20 and {"id", "split", "label", "class_name", "embedding", "method", "text"} <= set(t.columns)
        # class names follow the label ids, and each test text carries the class the file gave it
        assert (t["class_name"] == np.array(m["classes"])[t["label"]]).all()
        kept = [(x, c) for x, c in zip(t.text, t.class_name) if x in given]   # texts of ≤ 200 characters are whole
        assert len(kept) > 10 and all(given[x] == c for x, c in kept)
    for name in ["fig4_retrieved_size.png", "fig5_tsne.png"]:
        assert (run / name).stat().st_size > 10_000, name
    _ends_in_the_explorer(run / "csslm_fewshot.ipynb")


def _ends_in_the_explorer(notebook):
    "The tutorial's last cell opens the explorer: headless, its static figure (a plotly figure) is the output."
    last = json.loads(notebook.read_text())["cells"][-1]
    assert "Explorer(" in "".join(last["source"]), "the last cell does not open the explorer"
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in last["outputs"]), last["outputs"]


def test_cless_longtail_own_file(tmp_path):
    # `-p dataset jsonl:PATH`: a `text,tags` file of your own (tags a list), written from the bundled Reuters R52
    import random
    from contrastive_nb.text import load_text_dataset
    r52 = load_text_dataset("reuters-r52", "train")
    pick = random.Random(0).sample(range(len(r52)), 240)
    (tmp_path / "news.jsonl").write_text("".join(json.dumps({"text": r52.texts[i], "tags": r52.tags[i]}) + "\n"
                                                 for i in pick))
    run = run_notebook(TUT / "cless_longtail.ipynb", "own", root=tmp_path, timeout=600,
                       parameters=dict(dataset=f"jsonl:{tmp_path / 'news.jsonl'}", max_words=16, seeds=[0, 1], dim=8,
                                       fasttext_epochs=1, widths=[8], pseudo_labels=[4], pretrain_epochs=1, pretrain_fractions=[1.0],
                                       labeled_pool=24, fewshot_fractions=[0.5, 1.0], finetune_epochs=1,
                                       finetune_batch=12))
    m = json.loads((run / "metrics.json").read_text())
    assert m["fingerprint"]["file"] == "news.jsonl" and m["texts"] == 240
    assert m["train"] + m["dev"] + m["test"] <= 240 and m["test"] > 10          # 80/10/10, near-duplicates dropped
    manifest = json.loads((run / "split.json").read_text())
    assert manifest["params"]["corpus_sha256"] == m["fingerprint"]["corpus"]     # the split is pinned to the file
    assert sum(m["bins"]) == m["tags"]                                           # every training tag in one bin
    t = pd.read_parquet(run / "embeddings_cless.parquet")
    assert len(t) == m["test"] and {"label", "class_name", "tags", "freq_bin", "text"} <= set(t.columns)
    given = {i: r52.tags[j] for i, j in enumerate(pick)}
    # each text's class is one of the tags the file gave it (the most frequent kept), or none
    assert all(c == "(no tag)" or c in given[i] for i, c in zip(t.id, t.class_name))
    assert ((t.label == -1) == (t.class_name == "(no tag)")).all() and t.freq_bin.between(-1, 4).all()
    _check_claims(pd.read_parquet(run / "claims.parquet"))
    _ends_in_the_explorer(run / "cless_longtail.ipynb")


def test_label_audit_twin(tmp_path):
    run = run_notebook(TUT / "label_audit.ipynb", "twin", root=tmp_path, timeout=600,
                       parameters=dict(epochs=1, seeds=[0, 1, 2], n_pick=10))
    m = json.loads((run / "metrics.json").read_text())
    assert m["n_train"] == 1437 and m["flips_per_seed"] == 144 and m["seeds"] == [0, 1, 2]
    res = pd.read_parquet(run / "results.parquet")
    flips, probe = res[res.part == "flips"], res[res.part == "probe"]
    assert flips.found.between(0, 1).all() and set(flips.arm) == {"suspected_label_errors", "random order"}
    assert len(probe) == 9 and probe.top1.between(0, 1).all() and probe.classes_covered.between(1, 10).all()
    assert m["flips_found_mean"] == flips[flips.arm == "suspected_label_errors"].found.mean()
    claims = pd.read_parquet(run / "claims.parquet")
    _check_claims(claims)
    assert len(claims) == 3 and claims.n.eq(3).all()
