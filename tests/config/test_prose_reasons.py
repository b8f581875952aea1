"""Every constraint sentence of the documentation of an API member the stacks emit is a row or has a reason.

The emitted properties are docs/aws-rules.md's (tests/stacks/test_aws_rules_doc.py keeps that file equal to what
the configs under config/ synthesize); the sentences are botocore's, mined as the document mines them. A sentence
a new botocore adds fails here until a row quotes it or smkit/config/prose_reasons.py says why it is not one.
"""

from __future__ import annotations

import re
from pathlib import Path

from smkit.config.prose_reasons import REASONS
from smkit.config.rule_doc import prose
from smkit.config.rule_table import ROWS

DOC = Path(__file__).resolve().parents[2] / "docs" / "aws-rules.md"


def _emitted() -> list[tuple[str, str]]:
    """(resource type, property path) of the document's "Emitted properties" tables."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Emitted properties", 1)[1].split("\n## ", 1)[0]
    out, resource_type = [], ""
    for line in section.splitlines():
        if line.startswith("### "):
            resource_type = line[4:].strip()
        elif m := re.match(r"^\| `([^`]+)` \|", line):
            out.append((resource_type, m.group(1)))
    return out


def _mined() -> list[tuple[str, str, str | None, str | None]]:
    return [found for resource_type, path in _emitted() for found in prose(resource_type, path)]


def test_every_mined_sentence_has_a_row_or_a_reason() -> None:
    mined = _mined()
    assert len(mined) > 100
    missing = [f"{member}: {sentence}" for member, sentence, row, why in mined if row is None and why is None]
    assert not missing, "give each a row or a reason in smkit/config/prose_reasons.py:\n" + "\n".join(missing)


def test_every_reason_matches_a_mined_sentence_and_names_a_real_row() -> None:
    mined = _mined()
    stale = [
        key
        for key in REASONS
        if not any(member == key[0] and sentence.startswith(key[1]) for member, sentence, _, _ in mined)
    ]
    assert not stale, f"reasons for sentences no longer mined: {stale}"
    ids = {r.id for r in ROWS}
    for why in REASONS.values():
        for named in re.findall(r"\brows? ([a-z0-9]+(?:-[a-z0-9]+)+)", why):
            assert named in ids, (named, why)
