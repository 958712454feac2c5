"""Issue 46's smaller findings, one cheap check each (every one failed on the code before the fix): config objects
that trained silently wrong, text readers weaker than the image CSV reader, split manifests without their checksum,
an unusable checked-files cache, `read_json`'s raw errors, YAML aliases, a huge sweep started without asking, files
written 0600 whatever the umask, `--name ''`, `python -m contrastive_nb.cli`, a non-notebook quoted back, colliding
metric names, a deep `-p` list."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from scenario import cli_env, write_notebook

CLI = str(Path(sys.executable).parent / "contrastive-nb")


# -- settings that trained silently wrong ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, says", [
    (dict(max_grad_norm=-1), "`max_grad_norm` must be in (0, inf)"),       # clipping to -1: gradient ascent
    (dict(max_grad_norm=0), "`max_grad_norm` must be in (0, inf)"),        # trains nothing
    (dict(weight_decay=-1), "`weight_decay` must be in [0, inf)"),
    (dict(momentum=1.5), "`momentum` must be in [0, 1)"),
    (dict(lr=True), "`lr` must be a real number"),
    (dict(lr="0.1"), "`lr` must be a real number"),
    (dict(lr=float("nan")), "`lr` must be finite"),                        # was "`z1` row 0 holds NaN"
])
def test_optimization_refuses_bad_fields_when_built(kw, says):
    from contrastive_nb.train import Optimization
    with pytest.raises(ValueError, match=__import__("re").escape(says)):
        Optimization(**kw)


@pytest.mark.parametrize("kw, says", [
    (dict(run_dir=""), "`run_dir` must be the path of the run folder"),   # was: the current folder
    (dict(run_dir=5), "`run_dir` must be the path of the run folder"),    # was: pathlib's TypeError
    (dict(stop_after_epoch=0), "`stop_after_epoch` must be in [1, inf)"),  # was: the epoch ran
])
def test_checkpointing_refuses_bad_fields_when_built(kw, says):
    from contrastive_nb.train import Checkpointing
    with pytest.raises(ValueError, match=__import__("re").escape(says)):
        Checkpointing(**kw)


@pytest.mark.parametrize("field", ["channels_last", "amp", "deterministic"])
def test_runtime_options_refuse_a_string_for_a_flag(field):
    "'false', 'no': a non-empty string is true in Python, so these once meant on."
    from contrastive_nb.train import RuntimeOptions
    with pytest.raises(ValueError, match=f"`{field}` must be True"):
        RuntimeOptions(**{field: "no"})


def test_float_images_outside_0_1_or_float64_are_refused_by_what_is_wrong():
    from contrastive_nb.data import TensorImageDataset
    with pytest.raises(ValueError, match=r"span \[0, 255\]: divide 0..255 images by 255"):
        TensorImageDataset(torch.tensor([0.0, 255.0]).reshape(2, 1, 1, 1), [0, 1])
    with pytest.raises(ValueError, match=r"must hold values in \[0, 1\]; they span \[-1, 1\]"):
        TensorImageDataset(torch.tensor([-1.0, 1.0]).reshape(2, 1, 1, 1), [0, 1])
    with pytest.raises(ValueError, match="got torch.float64"):                # was: a "shape" problem
        TensorImageDataset(torch.zeros(2, 1, 1, 1, dtype=torch.float64), [0, 1])


# -- text readers ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, says", [
    (b'text,tags\n"never closed,a\nb,c\n', "line 3 is not valid CSV"),            # was: one text of the rest
    (b"text,tags\nx,a,extra\n", "line 2 has 3 field(s)"),                          # was: dropped
    (b"text,text,tags\nx,y,a\n", "names column(s) ['text'] more than once"),       # was: the last kept
    ("text,tags\ncafé,a\n".encode("latin-1"), "is not utf-8 text: byte 0xe9 on line 2"),   # was: UnicodeDecodeError
    ("text,tags\ncafé,a\n".encode("utf-16"), "is not utf-8 text"),
    (b"text,tags\n" + b"x" * 200_000 + b",a\n", "line 2 is not valid CSV (field larger than field limit"),
])
def test_text_csv_refusals_name_the_file_and_line(tmp_path, data, says):
    _refused_naming_file_and_line(tmp_path / "t.csv", data, says)


def _refused_naming_file_and_line(path, data, says):
    "The text reader for `path`'s suffix refuses `data` with `says`, naming the file."
    from contrastive_nb.text import read_text_tags_csv, read_text_tags_jsonl
    path.write_bytes(data)
    read = read_text_tags_csv if path.suffix == ".csv" else read_text_tags_jsonl
    with pytest.raises(ValueError, match=__import__("re").escape(says)) as e:
        read(path)
    assert path.name in str(e.value)


def test_text_csv_with_a_bom_reads_its_header(tmp_path):
    from contrastive_nb.text import read_text_tags_csv
    (tmp_path / "t.csv").write_bytes("text,tags\nhi,a|b\n".encode("utf-8-sig"))
    assert read_text_tags_csv(tmp_path / "t.csv").tags == [["a", "b"]]     # was: no column 'text' ('\ufefftext')


@pytest.mark.parametrize("data, says", [
    (b'{"text": null, "tags": []}\n', "line 1: `text` must be a string; got null"),     # was: the text "None"
    (b'"a string"\n', "line 1 must be a JSON object"),                                # was: string indices...
    (b"\n", "holds no records"),                                                      # was: 0 items
    ('{"text": "café", "tags": []}\n'.encode("latin-1"), "line 1 is not UTF-8 text"),
])
def test_text_jsonl_refusals_name_the_file_and_line(tmp_path, data, says):
    _refused_naming_file_and_line(tmp_path / "t.jsonl", data, says)


# -- manifests, cache, read_json ---------------------------------------------------------------------------------------
def test_a_split_manifest_without_its_checksum_is_refused(tmp_path):
    "Without `splits_sha256`, test items moved into train were accepted."
    from contrastive_nb.data import load_split_manifest, save_split_manifest
    y = np.arange(20) % 2
    p = save_split_manifest(tmp_path / "m.json", y, {"train": np.arange(10), "test": np.arange(10, 20)})
    m = json.loads(p.read_text())
    del m["splits_sha256"]
    m["splits"]["train"].append(m["splits"]["test"].pop())
    p.write_text(json.dumps(m))
    with pytest.raises(ValueError, match="has no `splits_sha256`"):
        load_split_manifest(p, y)


@pytest.mark.parametrize("content, says", [
    (b'{"a": "\xe9"}', "is not UTF-8 text"), (b"[" * 100_000 + b"]" * 100_000, "nests too deeply")])
def test_read_json_names_its_file_for_every_failure(tmp_path, content, says):
    from contrastive_nb.core import read_json
    (tmp_path / "x.json").write_bytes(content)
    with pytest.raises(ValueError, match=says) as e:
        read_json(tmp_path / "x.json")
    assert "x.json" in str(e.value)


def _three_images(tmp_path):
    from PIL import Image
    from contrastive_nb.data import image_folder_dataset
    (tmp_path / "img" / "a").mkdir(parents=True)
    for k in range(3):
        Image.fromarray(np.full((4, 4, 3), 40 * k, np.uint8)).save(tmp_path / "img" / "a" / f"{k}.png")
    return image_folder_dataset(tmp_path / "img")


@pytest.mark.parametrize("blocker", ["file", "loop"])
def test_an_unusable_cache_is_skipped_with_one_warning_naming_it(tmp_path, monkeypatch, blocker):
    from contrastive_nb import data
    ds = _three_images(tmp_path)
    if blocker == "file":
        (tmp_path / "cache").write_text("a file where the folder would go")
    else:
        os.symlink(tmp_path / "cache", tmp_path / "cache")                  # a link to itself
    monkeypatch.setenv("CONTRASTIVE_NB_CACHE", str(tmp_path / "cache"))
    data._FILE_DIGESTS.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        data.check_dataset(ds)
        data.dataset_fingerprint(ds)                                       # was: a bare FileExistsError
    said = [str(x.message) for x in w if "cache" in str(x.message)]
    assert len(said) == 1 and str(tmp_path / "cache") in said[0], said


def test_corrupt_cache_entries_are_dropped(tmp_path, monkeypatch):
    from contrastive_nb import data
    ds = _three_images(tmp_path)
    monkeypatch.setenv("CONTRASTIVE_NB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    data._FILE_DIGESTS.clear()
    want = data.dataset_fingerprint(ds)
    m = json.loads(data.file_manifest_path().read_text())
    for k, bad in zip(sorted(m), ["not hex", None, 12]):
        m[k]["sha256"] = bad                                               # keys unchanged: the entries look current
    data.file_manifest_path().write_text(json.dumps(m))
    data._FILE_DIGESTS.clear()
    assert data.dataset_fingerprint(ds) == want                           # was: "non-hexadecimal number" / TypeError
    assert data.check_dataset(ds) == 3


# -- sweep and parameter files, the command ----------------------------------------------------------------------------
LAUGHS = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b]\n"


def test_yaml_aliases_are_refused_in_sweep_and_parameter_files(tmp_path):
    from contrastive_nb.runs import _read_yaml, coerce_value
    (tmp_path / "p.yaml").write_text(LAUGHS)
    with pytest.raises(ValueError, match=r"p.yaml is not valid YAML: line 2, column 8: YAML aliases"):
        _read_yaml(tmp_path / "p.yaml", "parameters file")
    assert coerce_value(LAUGHS.replace("\n", ", ").join("{}")) == LAUGHS.replace("\n", ", ").join("{}")  # kept as text


@pytest.fixture
def nb(tmp_path):
    return write_notebook(tmp_path / "nb.ipynb", 'seed = 0\nlr = 0.1\nlayers = [1]\nout_dir = "."', "pass")


def _cli(*args, cwd):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=cli_env(), cwd=cwd, timeout=300)


def test_a_sweep_of_more_than_500_runs_needs_yes(tmp_path, nb):
    (tmp_path / "big.yaml").write_text(f"notebook: nb.ipynb\nname: big\ngrid: {{lr: {list(range(1, 502))}}}\n")
    p = _cli("sweep", tmp_path / "big.yaml", "--root", tmp_path / "runs", cwd=tmp_path)
    assert p.returncode == 2 and "asks for 501 runs" in p.stderr and "--yes" in p.stderr, p.stderr
    assert not (tmp_path / "runs" / "big").exists()


def test_cli_small_refusals(tmp_path, nb):
    p = _cli("run", nb, "--name", "", "--root", tmp_path / "runs", cwd=tmp_path)
    assert p.returncode == 2 and "`name` must be a non-empty folder name" in p.stderr, p.stderr   # was: the default
    p = _cli("run", nb, "-p", "layers", "[" * 3000 + "]" * 3000, "--root", tmp_path / "runs", cwd=tmp_path)
    assert p.returncode == 2 and "parameter `layers` nests too deeply" in p.stderr, p.stderr       # was: recursion
    (tmp_path / "secret.ipynb").write_text("password=hunter2\n")
    p = _cli("params", tmp_path / "secret.ipynb", cwd=tmp_path)
    assert p.returncode == 2 and "is not a readable Jupyter notebook" in p.stderr and "hunter2" not in p.stderr, p.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_python_dash_m_cli_is_the_command():
    p = subprocess.run([sys.executable, "-m", "contrastive_nb.cli", "--version"], capture_output=True, text=True,
                       env=cli_env(), timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("contrastive-nb "), (p.returncode, p.stdout, p.stderr)


def test_atomic_writes_honour_the_umask(tmp_path):
    code = ("import os, sys; os.umask(0o022); from contrastive_nb.core import atomic_write_json;"
            "print(oct(atomic_write_json(sys.argv[1], {}).stat().st_mode & 0o777))")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "status.json")], capture_output=True, text=True,
                       env=cli_env(), timeout=120)
    assert p.stdout.strip() == "0o644", p.stdout + p.stderr                 # was 0o600 whatever the umask


def test_metrics_that_flatten_to_one_name_are_refused(tmp_path):
    from contrastive_nb.runs import collect_results
    d = tmp_path / "r1"
    d.mkdir()
    (d / "parameters.json").write_text('{"parameters": {"seed": 0}}')
    (d / "metrics.json").write_text('{"a": {"b": 1}, "a/b": 2}')
    with pytest.raises(ValueError, match="two metrics flatten to the name 'a/b'"):
        collect_results(tmp_path)


def test_a_large_sweep_rewrites_its_status_file_per_percent_not_per_run(tmp_path, nb, monkeypatch):
    "10,000 runs rewrote a 606 KB sweep_status.json after every run; now after each 1% of them, and at the end."
    from contrastive_nb import sweeps as R             # the room that runs a sweep (runs re-exports it)
    spec = {"name": "s", "notebook": str(nb), "retries": 0, "timeout": 60}
    todo = [(f"r{i:03d}", {"seed": i}) for i in range(300)]

    def executor(cmd, env):                     # a run that ends ok at once, as a real one leaves its folder
        name = cmd[cmd.index("--name") + 1]
        R.atomic_write_json(tmp_path / name / "status.json", {"status": "ok"})
        return 0, "", ""

    writes, real = [], R.atomic_write_json
    monkeypatch.setattr(R, "_local_executor", executor)
    monkeypatch.setattr(R, "atomic_write_json", lambda p, o, *a, **k: (
        writes.append(o) if Path(p).name == "sweep_status.json" else None, real(p, o, *a, **k))[1])
    result = R._sweep_all(spec, todo, tmp_path, 1, lambda m: None, "local", None)
    assert set(result.values()) == {"ok"}
    assert len(writes) <= 102, len(writes)                                  # was 301
    assert set(writes[-1]["runs"].values()) == {"ok"}                     # the last write is complete
