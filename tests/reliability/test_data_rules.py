"""Data that must never be silently misread: CSV labels renumbered by one `nan`, empty or `2.0` cell; one image of
another size that only fails in the batch collation, after checkpoints were written; and the same data copied,
touched or reached by another path refused as "the dataset differs" when a run resumes."""
import csv
import os
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from torchvision.transforms import ToTensor

from contrastive_nb import data, train
from contrastive_nb.data import check_dataset, csv_image_dataset, image_folder_dataset
from contrastive_nb.models import ContrastiveModel
from contrastive_nb.checkpoint import CheckpointError
from contrastive_nb.train import Checkpointing, LossTerm, RuntimeOptions, fit


def _png(path, value=0, size=8):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size, size, 3), value, np.uint8)).save(path)
    return path


def _images(root, n=4):
    for k in range(n):
        _png(root / f"{k}.png", 30 * k)
    return root


# ---------------------------------------------------------------- CSV labels

def test_labels_written_by_pandas_with_a_missing_value_are_not_renumbered(tmp_path):
    _images(tmp_path)
    df = pd.DataFrame({"image": [f"{k}.png" for k in range(4)], "label": [0, np.nan, 2, 10]})
    df.to_csv(tmp_path / "labels.csv", index=False)                 # writes 0.0, (empty), 2.0, 10.0
    assert (tmp_path / "labels.csv").read_text().splitlines()[1:3] == ["0.png,0.0", "1.png,"]
    with pytest.raises(ValueError) as e:
        csv_image_dataset(tmp_path / "labels.csv")
    assert "labels.csv have no label in column 'label' (line 3: '')" in str(e.value) and "unlabeled=True" in str(e.value)
    ds = csv_image_dataset(tmp_path / "labels.csv", unlabeled=True)   # the explicit meaning: an unlabeled item
    assert ds.targets.tolist() == [0, -1, 2, 10] and ds.classes == [0, 2, 10]
    assert check_dataset(ds, allow_unlabeled=True) == 4
    with pytest.raises(ValueError, match="labels.csv line 3: -1"):
        check_dataset(ds)
    df.dropna().to_csv(tmp_path / "floats.csv", index=False)         # 0.0, 2.0, 10.0: the integers 0, 2, 10
    ds = csv_image_dataset(tmp_path / "floats.csv")
    assert ds.targets.tolist() == [0, 2, 10] and ds.classes == [0, 2, 10]
    assert csv_image_dataset(tmp_path / "floats.csv", classes=11).targets.tolist() == [0, 2, 10]
    assert csv_image_dataset(tmp_path / "floats.csv", classes=[str(c) for c in range(11)]).targets.tolist() == [0, 2, 10]


@pytest.mark.parametrize("cell, says", [("nan", "no label in column 'label' (line 3: 'nan')"),
                                        ("NA", "no label in column 'label' (line 3: 'NA')"),
                                        ("2.5", "not integer class ids (line 3: '2.5')"),
                                        ("cat", "mixes class ids (line 2: '0') and names (line 3: 'cat')")])
def test_a_label_that_is_not_a_class_id_names_its_line(tmp_path, cell, says):
    _images(tmp_path)
    with open(tmp_path / "labels.csv", "w", newline="") as f:
        csv.writer(f).writerows([["image", "label"], ["0.png", "0"], ["1.png", cell], ["2.png", "10"]])
    with pytest.raises(ValueError) as e:
        csv_image_dataset(tmp_path / "labels.csv")
    assert says in str(e.value)


# ---------------------------------------------------------------- every item's shape, before training

class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(16))
        self.feature_dim = 16
    def forward(self, x): return self.net(x)


def _model():
    torch.manual_seed(0)
    m = ContrastiveModel(Encoder(), torch.nn.Linear(16, 8))
    m(torch.zeros(2, 3, 8, 8))                                       # materialise the lazy layer for 8×8 inputs
    return m


def _fit(ds, run_dir, stop_after_epoch=None, **kw):
    return fit(
        _model(),
        ds,
        [LossTerm("nt_xent")],
        lambda x: x,
        epochs=2,
        batch_size=4,
        checkpoints=Checkpointing(run_dir, stop_after_epoch=stop_after_epoch),
        runtime=RuntimeOptions(device="cpu", progress=False),
        **kw,
    )


def test_one_image_of_another_size_is_refused_before_training_naming_the_file(tmp_path):
    root = tmp_path / "images"
    for c in ("a", "b"):
        _images(root / c, 3)
    tiny = _png(root / "b" / "9.png", 255, size=1)                  # sorted last: the first items look fine
    ds = image_folder_dataset(root, transform=ToTensor())
    with pytest.raises(ValueError) as e:
        _fit(ds, tmp_path / "run")
    assert str(tiny) in str(e.value) and "gives (3, 1, 1)" in str(e.value) and "(3, 8, 8)" in str(e.value)
    assert "Resize" in str(e.value)
    assert not (tmp_path / "run" / "checkpoints").exists() or not list((tmp_path / "run" / "checkpoints").iterdir())


# ---------------------------------------------------------------- the same data moved, touched, reached another way

def _folder_dataset(root):
    return image_folder_dataset(root, transform=ToTensor())


def test_the_same_data_copied_touched_or_reached_another_way_has_the_same_fingerprint(tmp_path):
    root = tmp_path / "images"
    for c in ("a", "b"):
        _images(root / c, 3)
    fp = data.dataset_fingerprint(_folder_dataset(root))
    shutil.copytree(root, tmp_path / "moved", copy_function=shutil.copy2)          # cp -a
    assert data.dataset_fingerprint(_folder_dataset(tmp_path / "moved")) == fp
    for p in (tmp_path / "moved").rglob("*.png"):                                   # touch
        os.utime(p)
    assert data.dataset_fingerprint(_folder_dataset(tmp_path / "moved")) == fp
    here = os.getcwd()
    try:
        os.chdir(tmp_path / "moved")
        assert data.dataset_fingerprint(_folder_dataset("../images/b/../../images")) == fp   # another relative path
    finally:
        os.chdir(here)
    with open(tmp_path / "moved" / "b" / "1.png", "r+b") as f:                      # one byte changed in place,
        f.seek(-5, 2); b = f.read(1); f.seek(-5, 2); f.write(bytes([b[0] ^ 1]))      # size and path unchanged
    assert data.dataset_fingerprint(_folder_dataset(tmp_path / "moved")) != fp
    os.rename(root / "b" / "2.png", root / "a" / "2b.png")                          # one item relabelled
    assert data.dataset_fingerprint(_folder_dataset(root)) != fp


def test_a_run_resumes_on_the_same_data_moved_and_refuses_changed_data(tmp_path):
    "The engine fingerprints content (data.dataset_fingerprint): a moved, touched copy resumes; changed data does not."
    root = tmp_path / "images"
    for c in ("a", "b"):
        _images(root / c, 3)
    history = _fit(_folder_dataset(root), tmp_path / "run", stop_after_epoch=1)
    assert len(history) == 1
    shutil.copytree(root, tmp_path / "moved", copy_function=shutil.copy2)
    for p in (tmp_path / "moved").rglob("*.png"):
        os.utime(p)
    changed = tmp_path / "changed"
    shutil.copytree(root, changed)
    _png(changed / "a" / "0.png", 200)
    with pytest.raises(CheckpointError, match="dataset differs"):
        _fit(_folder_dataset(changed), tmp_path / "run")
    history = _fit(_folder_dataset(tmp_path / "moved"), tmp_path / "run")      # resumes: epoch 2 only
    assert [h["epoch"] for h in history] == [1, 2]
