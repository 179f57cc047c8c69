"""The project's docs: generated pages up to date, links that resolve, no outside references.

The generated pages of ``docs/`` (``docs/generate.py``) must match the code;
every relative link in README.md and ``docs/*.md`` must name a file or folder
of the repository; nothing in them may point at a path outside it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = "/".join(("..", "shared"))
"""A path outside the repository (spelled in parts so this file does not contain it)."""
DOCS = ROOT / "docs"
REGENERATE = ".venv/bin/python docs/generate.py"

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(
    r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _links(text: str) -> list[str]:
    """The link targets of a Markdown text, outside code blocks and code spans."""
    prose = _CODE_SPAN.sub("", _FENCE.sub("", text))
    return _INLINE_LINK.findall(prose) + _REFERENCE_LINK.findall(prose)


def test_generated_docs_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(DOCS / "generate.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, (
        f"generated docs are stale or failed to build; run `{REGENERATE}`:\n"
        f"{result.stderr}{result.stdout}"
    )


def test_docs_is_not_a_package() -> None:
    # xDSL's wheel installs a top-level `docs` package; ours must never shadow it.
    assert not (DOCS / "__init__.py").exists()


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken: list[str] = []
    for target in _links(path.read_text(encoding="utf-8")):
        if _SCHEME.match(target) or target.startswith("#"):
            continue
        relative = target.split("#", 1)[0]
        resolved = (path.parent / relative).resolve()
        if not resolved.is_relative_to(ROOT):
            broken.append(f"{target} (outside the repository)")
        elif not resolved.exists():
            broken.append(f"{target} (no such file)")
    assert not broken, f"{path.relative_to(ROOT)} links to: " + ", ".join(broken)


def test_no_references_outside_the_repository() -> None:
    files = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*") if p.is_file())]
    offending = [
        str(p.relative_to(ROOT))
        for p in files
        if "__pycache__" not in p.parts
        and OUTSIDE in p.read_text(encoding="utf-8", errors="replace")
    ]
    assert not offending, f"these files mention '{OUTSIDE}': {', '.join(offending)}"
