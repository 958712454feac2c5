"""README.md is generated from nbs/index.ipynb (`make readme`): every prose cell of the index appears in it, and
regenerating it gives the committed file exactly."""
import nbformat

from helpers import ROOT


def test_readme_is_generated_from_index():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    nb = nbformat.read(ROOT / "nbs" / "index.ipynb", as_version=4)
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    stale = [m.splitlines()[0] for m in md if m.strip() not in readme]
    assert not stale, f"README.md is out of date with nbs/index.ipynb (run `make readme`): {stale}"


def test_readme_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh", 1)[1].split("```", 1)[0]
    cmds = [l.split("#")[0].strip() for l in first_block.strip().splitlines()]
    assert cmds == ["make run", "make test"]


def test_readme_is_exactly_what_make_readme_writes(tmp_path):
    """`make readme` (docs/readme.py: nbconvert executes nbs/index.ipynb) regenerates README.md byte for byte —
    so every table README.md shows is the one its code cell computes from the artefacts in nbs/results/ today."""
    import difflib
    import sys
    sys.path.insert(0, str(ROOT / "docs"))
    from readme import render
    fresh = render(tmp_path).read_text(encoding="utf-8")
    committed = (ROOT / "README.md").read_text(encoding="utf-8")
    diff = list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(), "README.md (committed)",
                                     "README.md (make readme)", lineterm="", n=1))
    assert not diff, "README.md differs from what `make readme` writes now; run `make readme`:\n" + "\n".join(diff[:40])
    assert not (tmp_path / "README_files").exists() or (ROOT / "README_files").exists(), \
        "index.ipynb now displays images: commit README_files/ with README.md"
