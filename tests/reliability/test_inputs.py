"""Bad input is caught before training, with the file, CSV line or class named; and the losses' edge cases under
bf16 autocast give finite values and gradients within tolerance of the literal float64 references, for every loss
term the engine registers."""
import csv

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import ToTensor

from contrastive_nb.data import TensorImageDataset, csv_image_dataset, image_folder_dataset
from contrastive_nb.losses import suncet, supcon
from contrastive_nb.models import ContrastiveModel
from contrastive_nb.reference import ref_suncet, ref_supcon
from contrastive_nb.train import Checkpointing, LossTerm, RuntimeOptions, fit


# ---------------------------------------------------------------- bad input, caught before training

class Encoder(torch.nn.Module):
    def __init__(self, channels=3):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(channels * 8 * 8, 16))
        self.feature_dim = 16
    def forward(self, x): return self.net(x)


def _model(classes=None, channels=3):
    torch.manual_seed(0)
    return ContrastiveModel(Encoder(channels), torch.nn.Linear(16, 8),
                            torch.nn.Linear(16, classes) if classes else None)


def _fit(ds, run_dir, terms=None, model=None):
    return fit(
        model or _model(),
        ds,
        terms or [LossTerm("nt_xent")],
        lambda x: x,
        epochs=1,
        batch_size=4,
        checkpoints=Checkpointing(run_dir),
        runtime=RuntimeOptions(device="cpu", progress=False),
    )


def _png(path, value=0, size=8):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size, size), value, np.uint8)).save(path)
    return path


def _folder(root, per_class=3):
    for c in ("a", "b"):
        for k in range(per_class):
            _png(root / c / f"{k}.png", 40 * k)
    return root


def _refused(run_dir):
    "Nothing was trained or written: no checkpoint, no history."
    return not (run_dir / "checkpoints").exists() or not list((run_dir / "checkpoints").glob("ckpt-*"))


@pytest.mark.parametrize("damage", ["corrupt", "zero-byte"])
def test_a_bad_image_file_stops_the_run_before_it_starts(tmp_path, damage):
    root = _folder(tmp_path / "images")
    bad = root / "b" / "1.png"
    bad.write_bytes(b"" if damage == "zero-byte" else b"\x89PNG\r\n\x1a\n" + b"not an image" * 20)
    ds = image_folder_dataset(root, transform=ToTensor())
    with pytest.raises(ValueError) as e:
        _fit(ds, tmp_path / "run")
    assert str(bad) in str(e.value)
    assert ("empty (0 bytes)" if damage == "zero-byte" else "not a readable image") in str(e.value)
    assert _refused(tmp_path / "run")


def test_an_empty_class_folder_is_named(tmp_path):
    root = _folder(tmp_path / "images")
    (root / "c_empty").mkdir()
    with pytest.raises(FileNotFoundError) as e:
        image_folder_dataset(root, transform=ToTensor())
    assert "c_empty" in str(e.value)


def _csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f); w.writerow(["image", "label"]); w.writerows(rows)
    return path


def test_csv_unknown_label_out_of_range_label_and_missing_path_name_the_line(tmp_path):
    for k in range(3):
        _png(tmp_path / f"{k}.png")
    unknown = _csv(tmp_path / "unknown.csv", [["0.png", "cat"], ["1.png", "bird"], ["2.png", "dog"]])
    with pytest.raises(ValueError) as e:
        csv_image_dataset(unknown, classes=["cat", "dog"])
    assert "line 3: 'bird'" in str(e.value) and "unknown.csv" in str(e.value)
    out_of_range = _csv(tmp_path / "range.csv", [["0.png", "0"], ["1.png", "2"], ["2.png", "7"]])
    with pytest.raises(ValueError) as e:
        csv_image_dataset(out_of_range, classes=3)
    assert "line 4: '7'" in str(e.value)
    missing = _csv(tmp_path / "missing.csv", [["0.png", "0"], ["gone.png", "1"]])
    with pytest.raises(FileNotFoundError) as e:
        csv_image_dataset(missing)
    assert "line 3" in str(e.value) and "gone.png" in str(e.value)


def test_a_label_beyond_the_classifier_is_refused_naming_the_csv_line(tmp_path):
    for k in range(4):
        _png(tmp_path / f"{k}.png", 30 * k)
    path = _csv(tmp_path / "labels.csv", [["0.png", "0"], ["1.png", "1"], ["2.png", "1"], ["3.png", "2"]])
    ds = csv_image_dataset(path, transform=ToTensor())         # labels 0..2; the classifier below has 2 outputs
    with pytest.raises(ValueError) as e:
        _fit(ds, tmp_path / "run", [LossTerm("nt_xent"), LossTerm("ce", loader="unlabeled")], _model(classes=2))
    assert "labels.csv line 5: 2" in str(e.value) and "outside [0, 1]" in str(e.value)
    assert _refused(tmp_path / "run")


def test_wrong_tensor_shapes_are_refused_before_training(tmp_path):
    gray = TensorImageDataset(torch.rand(6, 1, 8, 8), [0, 1] * 3)          # the model expects 3 channels
    with pytest.raises(ValueError) as e:
        _fit(gray, tmp_path / "run")
    assert "(1, 8, 8)" in str(e.value) and "cannot take" in str(e.value)
    assert _refused(tmp_path / "run")
    _png(tmp_path / "big.png", size=10)
    _png(tmp_path / "small.png")
    mixed = csv_image_dataset(_csv(tmp_path / "mixed.csv", [["small.png", "0"], ["big.png", "1"]]), transform=ToTensor())
    with pytest.raises(ValueError) as e:
        _fit(mixed, tmp_path / "run2")
    assert "differ in shape" in str(e.value)
    with pytest.raises(ValueError) as e:                                  # PIL images without a transform
        _fit(csv_image_dataset(tmp_path / "mixed.csv"), tmp_path / "run3")
    assert "ToTensor" in str(e.value)


# ---------------------------------------------------------------- loss edge cases under bf16 autocast

CASES = {   # name: (N items, labels of the N items, temperature, duplicate rows?)
    "singleton-class": (6, [0, 0, 1, 1, 1, 2], 0.1, False),
    "one-label": (6, [3] * 6, 0.1, False),
    "batch-size-1": (1, [0], 0.1, False),
    "duplicate-embeddings": (6, [0, 1, 0, 1, 0, 1], 0.1, True),
    "tau-0.01": (6, [0, 1, 2, 0, 1, 2], 0.01, False),
}
# The loss FUNCTIONS on the N samples of the first view (the papers' M labeled samples), so a singleton class or a
# batch of one leaves anchors without a positive, which they count. fast: (z1, y, tau) → (value, stats).
SINGLE_VIEW = {
    "suncet": (lambda z1, y, tau: suncet(z1, y, tau, return_stats=True), lambda z1, y, tau: ref_suncet(z1, y, tau)),
    "supcon-out": (lambda z1, y, tau: supcon(z1, y, tau, variant="out", return_stats=True),
                   lambda z1, y, tau: ref_supcon(z1, y, tau, "out")),
    "supcon-in": (lambda z1, y, tau: supcon(z1, y, tau, variant="in", return_stats=True),
                  lambda z1, y, tau: ref_supcon(z1, y, tau, "in")),
}


def _term(name, tau):
    "The engine's registered term `name` at temperature `tau` when it has one (its other options at their defaults)."
    import inspect
    from contrastive_nb.train import LOSS_TERMS, LossTerm
    takes = inspect.signature(LOSS_TERMS[name].__init__).parameters
    return LossTerm(name, **({"temperature": tau} if "temperature" in takes else {}))


def _projections(z1, z2, y):
    "What a term sees of a batch: both views, their labels, and the two views taken as classifier logits."
    from contrastive_nb.train import Projections
    return Projections(z1, z2, y, (z1, z2), y)


def test_every_engine_loss_term_has_a_float64_reference():
    "The guard reads the registry: a loss is its function, its term class and one registration naming its reference."
    from contrastive_nb.train import LOSS_TERMS
    missing = sorted(n for n, cls in LOSS_TERMS.items() if getattr(cls, "reference", None) is None)
    assert not missing, (
        f"loss terms registered without a float64 reference: {missing}. Register each with "
        "`@register_loss_term(name, loader=..., supervised=..., reference=lambda term, p: ...)`, the reference "
        "computing the term's value from `p` (a train.Projections in float64) with a literal loop of "
        "contrastive_nb.reference (nbs/03a_reference.ipynb); the edge cases below then run on it")


def _views(n, dup, seed=0):
    "Two views of n items as a bf16 model would produce them (a linear layer under CPU autocast)."
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2 * n, 12, generator=g)
    if dup:
        x[2:n] = x[0]; x[n + 2:] = x[n]            # most rows repeat one of two embeddings
    lin = torch.nn.Linear(12, 8)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(8, 12, generator=g)); lin.bias.zero_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = lin(x)
    assert z.dtype == torch.bfloat16
    return z[:n].detach(), z[n:].detach()


def _engine_terms():
    from contrastive_nb.train import LOSS_TERMS
    return sorted(LOSS_TERMS)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", _engine_terms())
def test_engine_loss_terms_under_bf16_autocast_match_their_registered_reference(case, name):
    "Every registered term, read from the registry: finite value and gradients, within tolerance of its reference."
    n, labels, tau, dup = CASES[case]
    y = torch.tensor(labels)
    b1, b2 = _views(n, dup)
    z1, z2 = b1.clone().requires_grad_(True), b2.clone().requires_grad_(True)
    term = _term(name, tau)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        value = term(_projections(z1, z2, y))
    value.backward()
    assert value.dtype == torch.float32 and torch.isfinite(value)
    grads = [g for g in (z1.grad, z2.grad) if g is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    r1, r2 = b1.double().requires_grad_(True), b2.double().requires_grad_(True)   # the same bf16 numbers, exactly
    ref = type(term.loss).reference(term.loss, _projections(r1, r2, y))
    assert ref is not None, "both views of every item are in the batch: every anchor has a positive"
    ref.backward()
    _close(value, ref, [(z1, r1), (z2, r2)])


def _close(value, ref, pairs):
    """The value within 1e-4 of the reference; each (input, its float64 copy)'s gradients within bf16 precision (8
    bits of mantissa), or both absent (an input the loss does not read)."""
    assert value.item() == pytest.approx(ref.item(), rel=1e-4, abs=1e-4), (value.item(), ref.item())
    for g, rg in ((z.grad, r.grad) for z, r in pairs):
        if rg is None:
            assert g is None
            continue
        scale = rg.abs().max().item() + 1e-3
        assert (g.double() - rg).abs().max().item() <= 1e-2 * scale, (g, rg)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("loss", list(SINGLE_VIEW))
def test_single_view_loss_functions_under_bf16_autocast_count_anchors_without_a_positive(case, loss):
    n, labels, tau, dup = CASES[case]
    y = torch.tensor(labels)
    b1, _ = _views(n, dup)
    z1 = b1.clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        value, stats = SINGLE_VIEW[loss][0](z1, y, tau)
    value.backward()
    assert value.dtype == torch.float32 and torch.isfinite(value) and torch.isfinite(z1.grad).all()
    r1 = b1.double().requires_grad_(True)
    ref = SINGLE_VIEW[loss][1](r1, y, tau)
    # anchors without a positive (the only sample of their class) are excluded and counted
    without = int((torch.bincount(y)[y] == 1).sum())
    assert stats["n_without_positive"] == without and stats["n_anchors"] == n - without
    assert without == {"singleton-class": 1, "batch-size-1": 1}.get(case, 0)
    if ref is None:                                  # no anchor has a positive: a zero that keeps the graph
        assert stats["n_anchors"] == 0 and value.item() == 0.0
        assert not z1.grad.any()
        return
    ref.backward()
    _close(value, ref, [(z1, r1)])
