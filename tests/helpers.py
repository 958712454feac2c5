"""Paths and console scripts shared by the tests (imported as `helpers`; a name no other test folder uses)."""
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TUT = ROOT / "nbs" / "tutorials"


def tool(name: str) -> str:
    "Path of a console script of this environment (nbdev_export, contrastive-nb, ...)."
    p = BIN / name
    return str(p) if p.exists() else name


def tutorial_arms(notebook_name: str, text: str | None = None) -> list:
    """A tutorial's arms: the literal value of the one `ARMS = ...` assignment in its one code cell tagged `arms` (the
    notebook's only list of its arms), read with `ast.literal_eval`; `notebook_name` with or without `.ipynb`, or the
    notebook's `text` (an older version of it, from git)."""
    nb = json.loads(text if text is not None else (TUT / notebook_name).with_suffix(".ipynb").read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "arms" in c["metadata"].get("tags", [])]
    assert len(cells) == 1, f"{notebook_name}: {len(cells)} code cells tagged 'arms' (one expected)"
    found = [n for n in ast.parse("".join(cells[0]["source"])).body
             if isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets] == ["ARMS"]]
    assert len(found) == 1, f"{notebook_name}: the cell tagged 'arms' must assign ARMS once"
    return ast.literal_eval(found[0].value)
