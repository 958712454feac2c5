"""README.md is generated from nbs/index.ipynb (`make readme`): every prose cell of the index appears in it."""
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
