"""Digests of what the text modules compute: run before and after a restructuring of `text` (or of the rooms it
re-exports, `text_data` and `text_corpora`); equal lines mean the same corpora, splits, word ids, word vectors,
sentence embeddings and dev-selected training, bit for bit.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/text_digests.py > before.txt   # then after, and diff

Everything is imported from `contrastive_nb.text`, as the tutorials import it. Each line: what was computed, then
the corpus's content hash (`TextTags.fingerprint`) or sha256 of the arrays, 12 hex digits each. Offline; about half
a minute on one core (the package corpora, sklearn's docstring corpus, fastText on 500 of its texts, all-MiniLM-L6-v2
on 32 texts, three epochs of `fit_on_dev`)."""
import hashlib
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

import contrastive_nb.text as T


def _sha(x) -> str:
    if isinstance(x, torch.Tensor):
        x = x.detach().numpy()
    if isinstance(x, np.ndarray):
        return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:12]
    return hashlib.sha256(repr(x).encode()).hexdigest()[:12]


def corpora() -> T.TextTags:
    "Print the package corpora's and the docstring corpus's digests; return the docstring corpus."
    for name, (_, _, splits) in T.TEXT_DATASETS.items():
        print(name, {s: T.load_text_dataset(name, s).meta["sha256"] for s in splits})
    with tempfile.TemporaryDirectory() as tmp:
        small = T.docstring_corpus(["sklearn"], min_tag_count=10, cache_dir=tmp)
    print("docstrings", small.fingerprint(), len(small))
    print("corpus_split", {k: _sha(v) for k, v in T.corpus_split(small, seed=0).items()})
    print("TextTags.split", {k: _sha(v) for k, v in small.split(seed=3).items()})
    return small


def words(small: T.TextTags):
    "Print the digests of the word ids, the label ids and targets, and fastText vectors of `small`."
    toks = small.token_lists()
    voc = T.Vocab.build(toks, min_count=2, always=[w for t in small.tag_names() for w in T.tag_words(t)])
    print("vocab", _sha(voc.words), "encode_texts", _sha(T.encode_texts(small, voc)), "labels",
          _sha(T.encode_labels(small.tag_names(), voc)), _sha(T.label_matrix(small, small.tag_names())))
    with tempfile.TemporaryDirectory() as tmp:
        print("fasttext", _sha(T.train_word_vectors(toks[:500], voc, dim=16, epochs=2, cache_dir=tmp)))


def models(small: T.TextTags):
    "Print the digests of MiniLM's sentence embeddings and of a small `fit_on_dev` run."
    tok, enc = T.load_plm()
    with torch.no_grad():
        print("plm_embeddings", _sha(T.plm_embeddings(enc, T.plm_features(tok, enc, small.texts[:32], 32))))
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 2)
    x = torch.randn(64, 4)
    y = (x[:, 1] > 0).long()
    r = T.fit_on_dev(m, torch.optim.SGD(m.parameters(), lr=0.1), 64, 3, 16, np.random.default_rng(0),
                     lambda i: F.cross_entropy(m(x[i]), y[i]),
                     lambda mm: {"acc": float((mm(x).argmax(1) == y).float().mean())}, "acc")
    history = [{k: v for k, v in h.items() if "second" not in k} for h in r["history"]]
    print("fit_on_dev", r["best_epoch"], _sha(history), _sha(torch.cat([p.flatten() for p in m.parameters()])))


if __name__ == "__main__":
    small = corpora()
    words(small)
    models(small)
