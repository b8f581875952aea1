"""The CloudFormation registry schemas cfn-lint ships: each resource property's type, range, length, pattern
and enum as CloudFormation validates it (the same limits AWS's API models hold for most members).

:func:`limits` resolves a property path of a synthesized template (``A.B``, ``A[].B`` for lists) to its schema
and returns what the schema constrains. cfn-lint is a development dependency (the gates run it), imported here
only when a schema is read.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

# Schema keywords that constrain a value, in the order they are reported.
KEYWORDS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "enum")
REGION = "us-east-1"


@functools.cache
def schema(resource_type: str) -> dict[str, Any] | None:
    """The registry schema of ``resource_type`` (None: cfn-lint has none)."""
    import cfnlint.data.schemas

    root = Path(cfnlint.data.schemas.__file__).parent
    index = json.loads((root / "providers" / f"{REGION}.json").read_text(encoding="utf-8"))
    name = index.get(resource_type)
    if name is None:
        return None
    data: dict[str, Any] = json.loads((root / "resources" / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _resolved(node: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 20:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def property_schema(resource_type: str, path: str) -> dict[str, Any] | None:
    """The schema of ``path`` under the resource's properties (None: not found)."""
    document = schema(resource_type)
    if document is None:
        return None
    node: dict[str, Any] = {"properties": document.get("properties", {})}
    for segment in path.split("."):
        name, many = segment.removesuffix("[]"), segment.endswith("[]")
        properties = _resolved(node, document).get("properties", {})
        if name not in properties:
            return None
        node = _resolved(properties[name], document)
        if many:
            items = node.get("items")
            if not isinstance(items, dict):
                return None
            node = _resolved(items, document)
    return _resolved(node, document)


def limits(resource_type: str, path: str) -> dict[str, Any]:
    """What the schema constrains ``path`` to: range, length, item count, pattern, enum (empty: nothing)."""
    node = property_schema(resource_type, path)
    if node is None:
        return {}
    return {k: node[k] for k in KEYWORDS if k in node}


def describe(found: dict[str, Any]) -> str:
    """``found`` (:func:`limits`) as a short text: ``0-100``, ``length <= 63``, ``pattern ...``, ``one of ...``."""
    out = []
    if "minimum" in found or "maximum" in found:
        out.append(f"{found.get('minimum', '')}-{found.get('maximum', '')}".strip("-") or "")
    if "minLength" in found or "maxLength" in found:
        out.append(f"length {found.get('minLength', 0)}-{found.get('maxLength', '')}")
    if "minItems" in found or "maxItems" in found:
        out.append(f"items {found.get('minItems', 0)}-{found.get('maxItems', '')}")
    if "pattern" in found:
        out.append("pattern `" + str(found["pattern"]).replace("|", "\\|") + "`")
    if "enum" in found:
        values = [str(v) for v in found["enum"]]
        shown = " \\| ".join(values[:8]) + (f" (+{len(values) - 8})" if len(values) > 8 else "")
        out.append(f"one of {shown}")
    return "; ".join(out)
