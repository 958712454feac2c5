"""Paths and console scripts shared by the tests (imported as `helpers`; a name no other test folder uses)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    "Path of a console script of this environment (nbdev_export, contrastive-nb, ...)."
    p = BIN / name
    return str(p) if p.exists() else name
