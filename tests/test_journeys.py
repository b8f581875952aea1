"""Each journey that ``make test-journeys`` runs from the wheel (docs/journeys/*.sh) is a block of the docs,
word for word: what CI proves is what a user reads and types."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts.journeys import interpreter

REPO = Path(__file__).resolve().parents[1]
JOURNEYS = sorted((REPO / "docs" / "journeys").glob("*.sh"))
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.M | re.S)


def _blocks() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for doc in DOCS:
        for block in BLOCK.findall(doc.read_text(encoding="utf-8")):
            found.setdefault(block, []).append(doc)
    return found


def test_there_are_journeys() -> None:
    assert [p.stem for p in JOURNEYS] >= ["classic"]


@pytest.mark.parametrize("script", JOURNEYS, ids=lambda p: p.stem)
def test_each_journey_is_a_docs_block_word_for_word(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert text in _blocks(), (
        f"{script.relative_to(REPO)} is not a ```bash block of README.md or docs/*.md: copy the script into "
        "the doc that tells the journey (or the doc's block into the script), unchanged"
    )


def test_a_python_version_that_is_not_installed_is_named_never_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    (tmp_path / "versions" / "3.98.2" / "bin").mkdir(parents=True)
    (tmp_path / "versions" / "3.98.2" / "bin" / "python3.98").write_text("")
    (tmp_path / "versions" / "3.98.10" / "bin").mkdir(parents=True)
    (tmp_path / "versions" / "3.98.10" / "bin" / "python3.98").write_text("")
    assert interpreter("3.98") == str(tmp_path / "versions" / "3.98.10" / "bin" / "python3.98")  # the newest
    assert interpreter("/usr/bin/python3") == "/usr/bin/python3"  # a path or command as it is
    with pytest.raises(
        SystemExit, match=r"Python 3\.99 is not installed: .* install it \(uv python install 3\.99"
    ):
        interpreter("3.99")
