"""The explorer and the embedding-table loader on bad or awkward input, and the explorer's fixes from issue 25 that
Python alone can check (the browser test checks the rest in Chromium). Each test failed on the code before the fix:
a crash, a raw traceback or a silent wrong picture where a sentence or the right picture is now expected."""
import ast
import html
import itertools
import json
import os
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT

from contrastive_nb import explore, explore_view
from contrastive_nb.evaluate import embedding_table, load_embedding_table, save_embedding_table
from contrastive_nb.explore import projection
from contrastive_nb.explore_compare import compare
from contrastive_nb.explore_view import Explorer


def small_table(n_per_class=30, n_classes=4, seed=0, **columns):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    z = rng.normal(size=(n_classes, 16))[y] * 3 + rng.normal(size=(len(y), 16))
    return embedding_table(z, labels=y, **columns)


def widgets_of(root, cls):
    out, stack = [], [root]
    while stack:
        w = stack.pop()
        if isinstance(w, cls): out.append(w)
        stack.extend(getattr(w, "children", ()))
    return out


# --- the projection cache ------------------------------------------------------------------------------------------

def test_cache_env_naming_a_file_warns_and_computes(tmp_path, monkeypatch):
    t = small_table()
    (tmp_path / "cache").write_text("I am a file, not a folder")
    monkeypatch.setenv("CONTRASTIVE_NB_CACHE", str(tmp_path / "cache"))
    with pytest.warns(UserWarning, match="could not cache the projection"):
        xy = projection(t, "pca")
    np.testing.assert_array_equal(xy, projection(t, "pca", cache_dir=None))


def test_read_only_cache_warns_and_computes(tmp_path, monkeypatch):
    t = small_table()
    cache = tmp_path / "ro"; cache.mkdir()
    if os.geteuid() == 0:      # root writes through file modes: make the write itself fail as a read-only disk would
        def read_only(path, data):
            raise PermissionError(13, "Permission denied", str(path))
        monkeypatch.setattr(explore, "atomic_write_bytes", read_only)
    else:
        cache.chmod(0o500)
    try:
        with pytest.warns(UserWarning, match="returned uncached"):
            xy = projection(t, "pca", cache_dir=cache)
    finally:
        cache.chmod(0o700)
    np.testing.assert_array_equal(xy, projection(t, "pca", cache_dir=None))


def test_zero_byte_cache_file_is_recomputed(tmp_path):
    t = small_table()
    xy = projection(t, "pca", cache_dir=tmp_path)
    (f,) = tmp_path.glob("pca-*.npy")
    f.write_bytes(b"")
    np.testing.assert_array_equal(projection(t, "pca", cache_dir=tmp_path), xy)
    assert f.stat().st_size > 0


# --- load_embedding_table ------------------------------------------------------------------------------------------

def _write(path, columns: dict):
    pq.write_table(pa.table(columns), path)
    return path


def test_parquet_without_embedding_column(tmp_path):
    p = _write(tmp_path / "t.parquet", {"id": [0, 1], "label": [1, 2]})
    with pytest.raises(ValueError, match=r"t.parquet has no 'embedding' column \(it has \['id', 'label'\]\)"):
        load_embedding_table(p)


def test_ragged_embedding_names_the_row(tmp_path):
    p = _write(tmp_path / "t.parquet", {"id": [10, 11, 12], "embedding": [[0.1, 0.2], [0.3, 0.4], [0.5]]})
    with pytest.raises(ValueError, match=r"row 2 \(id 12\) has 1 values where row 0 has 2"):
        load_embedding_table(p)


def test_null_embedding_names_the_row(tmp_path):
    p = _write(tmp_path / "t.parquet", {"id": [10, 11, 12], "embedding": [[0.1, 0.2], None, [0.5, 0.6]]})
    with pytest.raises(ValueError, match=r"t.parquet: .*row 1 \(id 11\) has no embedding \(null\)"):
        load_embedding_table(p)


def test_garbage_parquet_is_named(tmp_path):
    p = tmp_path / "t.parquet"
    p.write_bytes(b"PAR1 this is not parquet at all")
    with pytest.raises(ValueError, match=r"t.parquet is not a readable parquet file"):
        load_embedding_table(p)


def test_round_trip_still_exact(tmp_path):
    t = small_table()
    back = load_embedding_table(save_embedding_table(t, tmp_path / "t.parquet"))
    np.testing.assert_array_equal(np.stack(back["embedding"]), np.stack(t["embedding"]))


# --- Explorer input ------------------------------------------------------------------------------------------------

def test_three_row_table_is_called_too_small():
    t = small_table().iloc[:3]
    with pytest.raises(ValueError, match="`table` has 3 rows: too small for a tsne layout"):
        Explorer(t, cache_dir=None)
    assert Explorer(t, method="pca", cache_dir=None).k == 2        # laid out by PCA it works, with k = n − 1


def test_duplicate_ids_are_refused():
    t = small_table()
    t.loc[5, "id"] = t.loc[6, "id"]
    with pytest.raises(ValueError, match="duplicate ids"):
        Explorer(t, method="pca", cache_dir=None)


def test_labels_as_lists_of_strings_are_named():
    t = small_table()
    t["label"] = [["cat", "pet"] if i % 2 else ["dog"] for i in range(len(t))]
    with pytest.raises(ValueError, match=r"`label` holds lists \(row 0: \['dog'\]\)"):
        Explorer(t, method="pca", cache_dir=None)
    ex = Explorer(t.assign(first=t["label"].str[0]), color="first", method="pca", cache_dir=None)   # the way out it names
    assert ex.plan["kind"] == "categories"


# --- what the explorer draws -----------------------------------------------------------------------------------------

def _lab(hexcolor):
    c = np.array([int(hexcolor[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    x, y, z = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c / [0.95047, 1, 1.08883]
    f = lambda t: t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
    return np.array([116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))])


def _point_traces(fig):
    return [t for t in fig.data if t.name not in ("neighbours", "linked", "filtered out")]


def test_twenty_classes_get_colours_far_apart():
    ex = Explorer(small_table(n_per_class=6, n_classes=20), method="pca", cache_dir=None)
    colours = {t.marker.color for t in _point_traces(ex.figure())}
    assert len(colours) == 20
    closest = min(np.linalg.norm(_lab(a) - _lab(b)) for a, b in itertools.combinations(colours, 2))
    assert closest > 20, f"two of the 20 class colours are only ΔE {closest:.1f} apart (CIE76)"


def test_many_distinct_values_never_make_thousands_of_traces():
    t = small_table(n_per_class=750)             # 3,000 rows, each with its own text
    t["text"] = [f"sentence {i}" for i in range(len(t))]
    ex = Explorer(t, text="text", method="pca", cache_dir=None)
    ex.color_by("text")
    traces = _point_traces(ex.figure())
    assert len(traces) <= 100 and sum(len(tr.x) for tr in traces) == len(t)     # 99 texts + "other"
    assert "3,000 distinct values" in ex.status()


def test_numeric_colour_has_no_legend_entry():
    t = small_table(score=np.linspace(0, 1, 120))
    fig = Explorer(t, color="score", method="pca", cache_dir=None).figure()
    assert [tr.name for tr in fig.data if tr.showlegend is not False] == []


def test_filter_greys_out_and_does_not_rezoom():
    ex = Explorer(small_table(), method="pca", cache_dir=None)
    before = ex.figure()
    after = ex.filter("label == 1").figure()
    assert sum(len(tr.x) for tr in after.data if tr.name != "neighbours") >= 120      # the others still drawn, grey
    assert after.layout.xaxis.range is not None and after.layout.xaxis.range == before.layout.xaxis.range


def test_tooltips_leave_out_constant_columns():
    t = small_table(model=np.repeat("simclr", 120))
    texts = np.concatenate([np.asarray(tr.text) for tr in _point_traces(Explorer(t, method="pca", cache_dir=None).figure())])
    assert not any("split=" in s or "model=" in s for s in texts) and all("label=" in s for s in texts)


def test_color_by_from_python_moves_the_dropdown():
    import ipywidgets as W
    ex = Explorer(small_table(group=np.tile(["a", "b"], 60)), method="pca", cache_dir=None)
    (dropdown,) = widgets_of(ex.widget, W.Dropdown)
    ex.color_by("group")
    assert dropdown.value == "group"


def test_neighbour_table_has_thumbnails_and_no_constant_columns():
    ex = Explorer(small_table(model=np.repeat("m", 120)), images=lambda r: np.eye(8), method="pca", cache_dir=None)
    out = explore_view.neighbours_html(ex, 0)
    assert out.count("<img") == ex.k and ">model</th>" not in out and ">split</th>" not in out


def test_hover_after_a_selection_loses_nothing_and_errors_reach_the_panel():
    def broken(row):
        raise OSError("image store unreachable")
    ex = Explorer(small_table(), images=broken, method="pca", cache_dir=None)
    w = ex.widget
    page, item, counts = w.binding.widget, w.controls["item"], w.controls["counts"]
    page.selection = np.array([4, 9])           # as jupyter-scatter's page sets its synced values
    page.hovering = 9
    assert ex.selected.tolist() == [4, 9] and "2 selected" in counts.value
    assert "hover failed" in item.value and "image store unreachable" in item.value


def test_what_a_reloaded_page_draws_from_is_complete():
    "A reloaded page draws from the synced values alone: every point, its colour category, the selection."
    ex = Explorer(small_table(), method="pca", cache_dir=None)
    page = ex.widget.binding.widget
    ex.color_by("id").select([3, 8])
    assert page.points.shape[0] == 120 and len(page.color) == len(ex.widget.binding.encoding["colors"]) == 9
    assert sorted(page.selection.tolist()) == [3, 8]


def test_doctor_prints_nothing_and_shows_once(capsys):
    rep = explore_view.doctor()
    assert capsys.readouterr().out == ""
    assert repr(rep).count("front end attached") == 1 and isinstance(rep["problems"], list)


def test_compare_is_coloured_by_label_with_a_legend_and_titles_clear_of_the_toolbar():
    import ipywidgets as W
    a, b = small_table(), small_table(seed=1)
    cmp = compare(a, b, names=("one", "two"), method="pca", cache_dir=None)
    fig = cmp.figure()
    shown = [t for t in _point_traces(fig) if t.showlegend is not False]
    assert len(shown) == 4 and {t.marker.color for t in shown} == {t.marker.color for t in _point_traces(fig)[:4]}
    w = cmp.widget
    assert any("two, aligned to one" in h.value for h in widgets_of(w, W.HTML))   # the title is a heading above the plot


def test_compare_links_hover_between_panels():
    cmp = compare(small_table(), small_table(seed=1), method="pca", cache_dir=None)
    va, vb = (v.widget for v in cmp.widget.views)
    va.hovering = 17                                   # jupyter-scatter's compose highlights it in the other panel
    assert vb.hovering == 17 and cmp.states[1].hovered == 17


def test_explore_imports_no_later_notebook():
    later = {"audit", "run_params", "one_run", "run_results", "sweeps", "publish", "runs"}  # 31_audit, 35–40
    for f in (ROOT / "contrastive_nb").glob("explore*.py"):
        tree = ast.parse(f.read_text())
        imported = {(n.module or "").split(".")[-1] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & later, (f.name, imported & later)


def test_no_javascript_inside_python_strings():
    "The page's side is jupyter-scatter's: no module of the explorer carries JavaScript in a string."
    for f in (ROOT / "contrastive_nb").glob("explore*.py"):
        text = f.read_text()
        assert "_esm" not in text and "export default" not in text and "function render" not in text, f.name


def test_a_label_with_markup_from_a_parquet_file_is_escaped_in_every_panel(tmp_path):
    "A label such as <img src=x onerror=…> read from a file reaches the page as text, in every panel and the legend."
    evil = "<img src=x onerror=alert(1)>"
    t = small_table()
    t["label"] = np.where(t["label"] == 1, evil, t["label"].astype(str))
    t["text"] = [f"<b>item</b> {i}" for i in range(len(t))]
    t = load_embedding_table(save_embedding_table(t, tmp_path / "evil.parquet"))
    ex = Explorer(t, text="text", method="pca", cache_dir=None, images=lambda r: np.eye(8))
    w = ex.widget
    row = int(np.flatnonzero(t["label"] == evil)[0])
    w.binding.widget.selection = np.array([row])         # a click: item-free, so hover too
    w.binding.widget.hovering = row
    for name in ("item", "counts", "neighbours", "legend"):
        shown = w.controls[name].value
        assert evil not in shown and "<img src=x" not in shown, (name, shown[:400])
        assert html.escape(evil) in shown, (name, shown[:400])
    assert "<b>item</b>" not in w.controls["item"].value
