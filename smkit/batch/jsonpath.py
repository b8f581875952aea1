"""The JSONPath subset of batch transform DataProcessing, evaluated with ``jsonpath-ng``.

Supported operators, as listed under "Supported JSONPath Operators" in
https://docs.aws.amazon.com/sagemaker/latest/dg/batch-transform-data-processing.html:
``$``, ``.name`` / ``['name']``, ``*``, ``['a','b']``, ``[i,j]``, ``[a:b]`` and negative indices, plus the
mixed index/slice union of the API examples (``$[0,5:]``), which jsonpath-ng does not parse by itself.

The shape of a result follows SageMaker: a path ending in a single name or index gives that value; one that
selects several names gives an object with those keys (``$['id','SageMakerOutput']``); one that selects
several indices or a slice gives an array (``$[1:]`` on a CSV row gives the remaining columns).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from jsonpath_ng import JSONPath, parse
from jsonpath_ng.jsonpath import Child, Fields, Index, Root, Slice, Wildcard

_ALLOWED_NODES = (Root, Child, Fields, Index, Slice, Wildcard)
# A trailing bracket mixing indices and slices, e.g. "$[0,5:]" or "$.x[-1,1:3]" (no quotes inside).
_MIXED_UNION = re.compile(r"^(?P<prefix>.*)\[(?P<items>[^\[\]'\"]*,[^\[\]'\"]*)\]$")


class FilterError(ValueError):
    """A filter that does not parse, uses an unsupported operator, or does not fit a record."""


@dataclass(frozen=True)
class JsonPathFilter:
    """A compiled InputFilter / OutputFilter; :meth:`apply` selects from one parsed record."""

    expression: str
    alternatives: tuple[JSONPath, ...]
    multi: bool

    @property
    def is_identity(self) -> bool:
        """True for ``$``: the record passes unchanged."""
        return not self.alternatives

    def apply(self, value: Any) -> Any:
        """Select from ``value``; raise :class:`FilterError` when an index is out of range or nothing matches."""
        if self.is_identity:
            return value
        matches = []
        for alternative in self.alternatives:
            found = alternative.find(value)
            last = _last_node(alternative)
            if isinstance(last, Index) and len(found) < len(last.indices):
                size = _size_hint(alternative, value)
                raise FilterError(
                    f"{self.expression} selects index {list(last.indices)} but the record has {size} "
                    "elements (SageMaker fails the job for indices outside the record)"
                )
            matches.extend(found)
        if not self.multi:
            if not matches:
                raise FilterError(f"{self.expression} selects nothing from the record {_preview(value)}")
            return matches[0].value
        keys = [m.path.fields[0] for m in matches if isinstance(m.path, Fields)]
        if matches and len(keys) == len(matches):
            return {key: m.value for key, m in zip(keys, matches, strict=True)}
        return [m.value for m in matches]


@functools.lru_cache(maxsize=64)
def compile_filter(expression: str) -> JsonPathFilter:
    """Parse ``expression``; raise :class:`FilterError` naming the problem and an example that works."""
    text = expression.strip()
    if not text.startswith("$"):
        raise FilterError("a filter must start with '$' (e.g. '$', '$[1:]', \"$['id','SageMakerOutput']\")")
    if text == "$":
        return JsonPathFilter(expression=text, alternatives=(), multi=False)
    mixed = _MIXED_UNION.match(text)
    if mixed and ":" in mixed["items"]:
        items = [item.strip() for item in mixed["items"].split(",")]
        alternatives = tuple(_parse(f"{mixed['prefix']}[{item}]", text) for item in items)
        return JsonPathFilter(expression=text, alternatives=alternatives, multi=True)
    path = _parse(text, text)
    return JsonPathFilter(expression=text, alternatives=(path,), multi=_selects_many(_last_node(path)))


def _parse(text: str, original: str) -> JSONPath:
    try:
        path = parse(text)
    except Exception as exc:  # jsonpath-ng raises bare Exception for some lexer errors
        raise FilterError(
            f"not a supported JSONPath ({exc}); use $, .name, ['a','b'], *, [i,j], [a:b] or negative indices"
        ) from exc
    for node in _walk(path):
        if not isinstance(node, _ALLOWED_NODES):
            raise FilterError(
                f"operator {type(node).__name__} in {original!r} is not in SageMaker's JSONPath subset "
                "($, .name, ['a','b'], *, [i,j], [a:b], negative indices)"
            )
    return path


def _walk(node: JSONPath) -> list[JSONPath]:
    if isinstance(node, Child):
        return [node, *_walk(node.left), *_walk(node.right)]
    return [node]


def _last_node(path: JSONPath) -> JSONPath:
    while isinstance(path, Child):
        path = path.right
    return path


def _selects_many(node: JSONPath) -> bool:
    if isinstance(node, Fields):
        return len(node.fields) > 1 or node.fields == ("*",)
    if isinstance(node, Index):
        return len(node.indices) > 1
    return isinstance(node, Slice | Wildcard)


def _size_hint(path: JSONPath, value: Any) -> int | str:
    parent = path.left.find(value) if isinstance(path, Child) else [value]
    if parent and isinstance(parent[0].value, list):
        return len(parent[0].value)
    return "no"


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
