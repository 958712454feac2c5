"""Files read back are checked before they are trusted: split manifests (range, structure, disjoint, whole groups,
unedited), embedding tables (broken pandas metadata, values beyond float32), Orange .tab files (not UTF-8, truncated
against the wheel's RECORD), the fastText cache (garbage, wrong shape, NaN), checkpoints that verify but lack keys.
Each refusal is one sentence naming the file; nothing ends in a traceback or a silently wrong number."""
import json

import numpy as np
import pandas as pd
import pytest
import torch

CLEAR = (ValueError, FileNotFoundError)


def _one_line(e, *names):
    return isinstance(e, CLEAR) and "\n" not in str(e) and all(n in str(e) for n in names)


def test_split_manifests_are_checked_on_load(tmp_path):
    from contrastive_nb.data import load_split_manifest, save_split_manifest
    y = np.repeat(np.arange(3), 10)
    good = save_split_manifest(tmp_path / "m.json", y, {"train": np.arange(20), "test": np.arange(20, 30)})
    m = json.loads(good.read_text())
    cases = {"negative": lambda m: m["splits"]["train"].append(-30),            # test item 0... as -N: a leak
             "moved": lambda m: m["splits"]["train"].append(m["splits"]["test"].pop()),
             "huge": lambda m: m["splits"]["test"].append(10 ** 6),
             "params": lambda m: m.update(params="x"), "nosplits": lambda m: m.pop("splits"),
             "list": None}
    for name, change in cases.items():
        bad = json.loads(json.dumps(m))
        if change is None:
            bad = [1, 2]
        else:
            change(bad)
        p = tmp_path / f"{name}.json"; p.write_text(json.dumps(bad))
        with pytest.raises(CLEAR) as e:
            load_split_manifest(p, y)
        assert _one_line(e.value, str(p)), (name, e.value)


def test_a_text_split_keeps_groups_whole(tmp_path):
    from contrastive_nb.data import _splits_sha256
    from contrastive_nb.text import TextTags, corpus_split
    data = TextTags([f"text number {i} about {i // 3}" for i in range(60)], [["a"]] * 60, "toy", {},
                    [f"g{i // 3}" for i in range(60)])
    man = tmp_path / "split.json"
    sp = corpus_split(data, man, near_duplicate=None)
    m = json.loads(man.read_text())
    moved = int(sp["test"][0])
    m["splits"]["test"].remove(moved); m["splits"]["train"].append(moved)
    m["splits_sha256"] = _splits_sha256(m["splits"])               # edited with care: only the groups tell
    man.write_text(json.dumps(m))
    with pytest.raises(ValueError) as e:
        corpus_split(data, man, near_duplicate=None)
    assert _one_line(e.value, str(man), "has texts in both"), e.value


def test_embedding_tables_with_broken_metadata_or_huge_values_are_named(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from contrastive_nb.evaluate import load_embedding_table, save_embedding_table
    t = pd.DataFrame({"id": [0, 1], "embedding": [np.zeros(3, np.float32), np.ones(3, np.float32)]})
    tbl = pa.Table.from_pandas(t, preserve_index=False)
    for name, change in [("index", lambda m: m.update(index_columns=["gone"])),
                         ("dtype", lambda m: m["columns"][0].update(numpy_type="garbage"))]:
        meta = json.loads(tbl.schema.metadata[b"pandas"]); change(meta)
        p = tmp_path / f"{name}.parquet"
        pq.write_table(tbl.replace_schema_metadata({b"pandas": json.dumps(meta).encode()}), p)
        with pytest.raises(ValueError) as e:
            load_embedding_table(p)
        assert _one_line(e.value, str(p)), e.value
    big = t.copy(); big.at[1, "embedding"] = np.array([0.0, 1e300, 0.0])
    p = save_embedding_table(big, tmp_path / "big.parquet")
    with pytest.raises(ValueError) as e:
        load_embedding_table(p)
    assert _one_line(e.value, str(p), "beyond float32's range") and "NaN" not in str(e.value), e.value


def test_a_tab_file_that_is_not_utf8_is_named(tmp_path):
    from contrastive_nb.text import read_orange_tab
    p = tmp_path / "x.tab"
    p.write_bytes("Category\tText\nd\tstring\nclass\t\ngold\tcaf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError) as e:
        read_orange_tab(p)
    assert _one_line(e.value, str(p), "line 4"), e.value


def test_a_bad_fasttext_cache_is_trained_again_not_returned(tmp_path):
    from contrastive_nb.text import Vocab, train_word_vectors
    toks = [["gold", "price", "rose"], ["coffee", "price", "fell"]] * 20
    voc = Vocab.build(toks, min_count=1)
    good = train_word_vectors(toks, voc, dim=4, epochs=1, cache_dir=tmp_path)
    cache = next(tmp_path.glob("fasttext-*.npy"))
    for bad in [np.zeros((2, 4), np.float32), np.full((len(voc), 4), np.nan, np.float32), None]:
        if bad is None:
            cache.write_bytes(b"garbage")
        else:
            np.save(cache.with_suffix(""), bad)                       # np.save adds .npy
        with pytest.warns(UserWarning, match="training them again"):
            got = train_word_vectors(toks, voc, dim=4, epochs=1, cache_dir=tmp_path)
        assert got.shape == good.shape and np.isfinite(got).all() and np.array_equal(got, good)


def test_a_checkpoint_that_verifies_but_lacks_keys_is_refused_by_name(tmp_path):
    from contrastive_nb.checkpoint import CheckpointError, save_checkpoint, _check_resumable, load_checkpoint
    save_checkpoint({"format": 3, "model": {"w": torch.zeros(2)}}, tmp_path, 1)
    st = load_checkpoint(tmp_path)                                  # its checksum verifies
    with pytest.raises(CheckpointError) as e:
        _check_resumable(st, tmp_path, {}, {}, 1)
    assert "verifies but lacks" in str(e.value) and "config_sha256" in str(e.value), e.value
