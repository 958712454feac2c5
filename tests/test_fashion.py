"""Fashion-MNIST as a first-class dataset: the loader on the real files (Debian's
dataset-fashion-mnist, which `make setup` installs where apt is available), its one-sentence error
when the files are absent, and the published SuNCEt sweep on it (nbs/results/suncet_fashion/:
provenance, the random-init arm, the figures; its completeness is tests/test_published.py's)."""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contrastive_nb.data import FASHION_MNIST_DIRS, as_tensor_dataset, fashion_mnist
from contrastive_nb.protocol import long_table
from helpers import ROOT

PUBLISHED = ROOT / "nbs" / "results" / "suncet_fashion"


def _installed() -> bool:
    return any((Path(d) / "t10k-labels-idx1-ubyte.gz").is_file() for d in FASHION_MNIST_DIRS)


needs_files = pytest.mark.skipif(
    not _installed() and shutil.which("apt-get") is None,
    reason="Debian's dataset-fashion-mnist is not installed and there is no apt-get to install it",
)


@needs_files
def test_the_loader_reads_the_real_files():
    te = fashion_mnist("test")  # the smaller split: the training split's code path
    assert len(te) == 10_000 and te.data.shape[1:] == (28, 28)
    assert str(te.data.dtype) == "torch.uint8"
    assert np.bincount(te.targets).tolist() == [1000] * 10
    assert te.classes[te.targets[0]] == "Ankle boot"  # the first test image, as published
    t = as_tensor_dataset(te, size=14)
    assert tuple(t.images.shape) == (10_000, 1, 14, 14)
    assert 0 <= float(t.images.min()) <= float(t.images.max()) <= 1


def test_absent_files_are_one_sentence_naming_the_package(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        fashion_mnist("train", root=tmp_path, system_dirs=[tmp_path / "debian"])
    msg = str(e.value)
    assert "apt-get install dataset-fashion-mnist" in msg and "FashionMNIST/raw/" in msg
    assert msg.count(". ") == 0 and msg.endswith("."), msg  # one sentence


def test_the_published_sweep_is_on_fashion_mnist_with_its_figures_and_size_choice():
    # its completeness (every run of the sweep file, every arm of the notebook) is test_published's
    prov = json.loads((PUBLISHED / "provenance.json").read_text())
    assert {"commit", "date", "versions", "machine"} <= set(prov) and prov["runs"]["ok"] >= 10
    assert prov["parameters"]["dataset"] == "fashion_mnist"
    res = pd.read_parquet(PUBLISHED / "results.parquet")
    long = long_table(res[res["status"] == "ok"], "results")
    assert set(long["dataset"]) == {"fashion_mnist"} and 0.1 in set(long["labeled_fraction"].round(4))
    assert "random_init" in set(long["arm"]) and long.groupby(["labeled_fraction", "arm"])["seed"].nunique().min() >= 5
    for name in ("accuracy_vs_compute.png", "sweep_summary.png"):
        png = (PUBLISHED / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, name
    choice = json.loads((PUBLISHED / "choice.json").read_text())
    assert choice["threads"] == 1 and {"side", "n_train", "headroom"} <= set(choice["chosen"])


def test_the_published_coarse_to_fine_study_has_provenance_and_five_seeds():
    spread = ROOT / "nbs" / "results" / "spread_fashion"
    prov = json.loads((spread / "provenance.json").read_text())
    assert prov["parameters"]["dataset"] == "fashion_mnist" and {"commit", "date"} <= set(prov)
    models = pd.read_parquet(spread / "transfer_models.parquet")
    assert models.groupby("loss")["seed"].nunique().min() >= 5
    assert {"random_init", "ss", "sc", "spread"} <= set(models["loss"])
