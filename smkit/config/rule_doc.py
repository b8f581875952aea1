"""docs/aws-rules.md from synthesized templates and :data:`smkit.config.rule_table.ROWS`: every resource type and
property path the templates emit, with the limits its CloudFormation schema sets (range, length, pattern, enum:
:mod:`smkit.aws.cfn_schemas`), the API member it becomes and that member's limits in botocore's service model
(:mod:`smkit.aws.cfn_api`) and the rows that constrain it, then the rows, then the counts.

``python -m smkit.config.rule_doc TEMPLATE.json ...`` prints the document; smkit/cdk/rules_doc.py synthesizes
every config under config/ and writes it; tests/stacks/test_aws_rules_doc.py checks the committed file is current.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smkit.aws import cfn_api, cfn_schemas, service_models
from smkit.config.prose_reasons import reason
from smkit.config.rule_table import ROWS, Row

NONE_FOUND = "documented constraints: none found"
NO_REASON = "no reason given"
# Maps whose keys are the user's (a container's environment variables): one property, not one per key.
FREE_MAPS = ("Environment",)


def property_paths(value: Any, prefix: str = "") -> set[str]:
    """Paths of the leaves under ``value``: ``A.B``, ``A[].B`` for lists of objects; intrinsics are leaves."""
    if prefix.rsplit(".", 1)[-1].removesuffix("[]") in FREE_MAPS:
        return {prefix}
    if isinstance(value, dict) and value and not any(k == "Ref" or k.startswith("Fn::") for k in value):
        out: set[str] = set()
        for key, child in value.items():
            out |= property_paths(child, f"{prefix}.{key}" if prefix else key)
        return out
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        items = [v for v in value if isinstance(v, dict)]
        if all(any(k == "Ref" or k.startswith("Fn::") for k in v) for v in items):
            return {prefix}
        out = set()
        for child in items:
            out |= property_paths(child, f"{prefix}[]")
        return out
    return {prefix}


def emitted(templates: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Resource type -> property paths, over every resource of every template."""
    out: dict[str, set[str]] = {}
    for template in templates:
        for resource in template.get("Resources", {}).values():
            paths = out.setdefault(resource["Type"], set())
            paths |= {p for p in property_paths(resource.get("Properties", {})) if p}
    return out


def rows_for(resource_type: str, path: str, rows: Iterable[Row] = ROWS) -> list[Row]:
    """The rows that constrain ``path`` of ``resource_type`` (the path itself or a property under it)."""
    return [
        r
        for r in rows
        for t, p in r.applies
        if t == resource_type and (p == path or path.startswith(f"{p}.") or p.startswith(f"{path}."))
    ]


def schema_limits(resource_type: str, path: str) -> str:
    """The CloudFormation schema's limits on ``path``, as text ("" where it sets none)."""
    return cfn_schemas.describe(cfn_schemas.limits(resource_type, path))


def model_limits(resource_type: str, path: str) -> str:
    """The API member ``path`` becomes and its limits in botocore's model, as text: ``service Shape.Member:
    limits`` ("" where the resource type is not mapped; "no API member: reason" where the property has none)."""
    if resource_type not in cfn_api.REQUESTS:
        return ""
    reason = cfn_api.no_counterpart(resource_type, path)
    if reason is not None:
        return f"no API member: {reason}"
    found = cfn_api.api_member(resource_type, path)
    if found is None:
        return "no API member found"
    return f"`{found.name}`: {cfn_api.describe(found) or 'no limits'}"


def has_model_limits(text: str) -> bool:
    """Whether :func:`model_limits`' text names a member with limits."""
    return text.startswith("`") and not text.endswith(": no limits")


# The schema's keywords and the model's min/max for each kind of member: a value's range, a string's length,
# a list's item count.
BOUND_KEYWORDS = {"string": ("minLength", "maxLength"), "list": ("minItems", "maxItems")}
NUMBERS = ("integer", "long", "float", "double")


def disagreements(resource_type: str, path: str) -> list[tuple[str, Any, Any, Any]]:
    """Where the CloudFormation schema and the API model set different bounds on ``path``: ``(bound, schema's,
    model's, the stricter)`` for each of ``min``/``max`` that one sets and the other does not, or sets otherwise.
    Enum members (no length of their own in the model) and maps (the schema counts no entries) are left out."""
    mapped = cfn_api.api_member(resource_type, path)
    if (
        mapped is None
        or mapped.constraint.enum
        or (mapped.kind not in BOUND_KEYWORDS and mapped.kind not in NUMBERS)
    ):
        return []
    schema = cfn_schemas.limits(resource_type, path)
    keywords = BOUND_KEYWORDS.get(mapped.kind, ("minimum", "maximum"))
    out = []
    for bound, keyword, modelled in zip(
        ("min", "max"), keywords, (mapped.constraint.min, mapped.constraint.max), strict=True
    ):
        stated = schema.get(keyword)
        if stated == modelled or (bound == "min" and {stated, modelled} <= {None, 0}):
            continue  # the same, or a minimum of 0 against none (nothing below 0 exists)
        present = [v for v in (stated, modelled) if v is not None]
        out.append((bound, stated, modelled, max(present) if bound == "min" else min(present)))
    return out


def prose(
    resource_type: str, path: str, rows: Iterable[Row] = ROWS
) -> list[tuple[str, str, str | None, str | None]]:
    """The constraint sentences of the documentation of the API member ``path`` becomes
    (:func:`smkit.aws.service_models.constraint_sentences`): ``(member, sentence, the id of the row quoting it
    or None, why it is not a row or None)`` (:data:`smkit.config.prose_reasons.REASONS`)."""
    mapped = cfn_api.api_member(resource_type, path)
    if mapped is None:
        return []
    c = mapped.constraint
    quoting = [r for r in rows if r.model == (c.service, c.shape, c.member)]
    out = []
    for sentence in service_models.constraint_sentences(c.documentation):
        row = next((r.id for r in quoting if r.sentence in sentence or sentence in r.sentence), None)
        out.append((mapped.name, sentence, row, None if row else reason(mapped.name, sentence)))
    return out


def checked(row: Row) -> str:
    """How a row's quote is checked."""
    if row.model is None:
        return "by hand (the page's text)"
    service, shape, member = row.model
    return f"word for word: botocore {service} {shape}.{member} (tests/config/test_rule_quotes.py)"


INTRO = (
    "# AWS's rules for what the stacks emit",
    "",
    "Generated by `python -m smkit.cdk.rules_doc` from the synthesized templates of every config under",
    "config/ and the rows of smkit/config/rule_table.py; tests/stacks/test_aws_rules_doc.py fails when it is",
    "out of date. Each property the templates emit is listed with the limits its CloudFormation registry",
    "schema sets (the schemas cfn-lint ships: range, length, item count, pattern, enum; cfn-lint checks every",
    "template against them); for the SageMaker, Application Auto Scaling and CloudWatch alarm resources, the",
    "member of the API request it becomes (botocore's service model: CreateModel, CreateEndpointConfig,",
    "CreateEndpoint or UpdateEndpoint, CreateInferenceComponent or UpdateInferenceComponent,",
    "RegisterScalableTarget, PutScalingPolicy, PutMetricAlarm; smkit/aws/cfn_api.py) with the limits the",
    "model sets on it (value range, length, item count, pattern, number of enum values); and the rows of",
    f'AWS\'s prose that constrain it, or "{NONE_FOUND}" where none of these does (not a claim that AWS',
    "documents none). A row quotes AWS's whole sentence: rows that name a botocore service-model member are",
    "checked word for word against its documentation by tests/config/test_rule_quotes.py; rows citing a",
    "developer-guide page are checked by hand.",
    "",
)


DISAGREEMENT_INTRO = (
    "## Where the CloudFormation schema and the API model disagree",
    "",
    "Bounds one of the two sets and the other does not, or sets otherwise, on the same emitted property",
    "(value range, length, item count; `-`: not set). AWS applies both (CloudFormation validates against the",
    "schema, then calls the API), so the stricter holds; the kit's own checks use it (smkit/aws/limits.py).",
    "",
)
PROSE_INTRO = (
    "## Constraint sentences of the API members' documentation",
    "",
    "Each sentence of a mapped member's documentation in botocore that states a constraint (must, cannot,",
    "only, between, at most, maximum, valid values, ...), whole, and the row that quotes it, or why it is",
    "not a row (smkit/config/prose_reasons.py): not a constraint, the model's own limit (checked), a form",
    "the kit never emits, true by construction of what the kit writes, enforced by another row, the",
    "caller's permission or quota, or a fact only AWS knows. tests/config/test_prose_reasons.py fails when",
    "a sentence has neither a row nor a reason.",
    "",
)


@dataclass
class Tally:
    """What the document's sections count, for its closing Counts section."""

    total: int = 0
    constrained: int = 0
    limited: int = 0
    unchecked: int = 0
    api_typed: int = 0
    api_mapped: int = 0
    api_limited: int = 0
    without: list[str] = field(default_factory=list)
    differing: int = 0
    mined: int = 0
    quoted: int = 0
    with_prose: set[tuple[str, str]] = field(default_factory=set)
    kinds: dict[str, int] = field(default_factory=dict)


def _table_head(*columns: str) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def _table_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _each_property(by_type: Mapping[str, set[str]]) -> Iterator[tuple[str, str]]:
    for resource_type in sorted(by_type):
        for path in sorted(by_type[resource_type]):
            yield resource_type, path


def _emitted_section(
    by_type: Mapping[str, set[str]],
    rows: tuple[Row, ...],
    limits_of: Callable[[str, str], str],
    model_of: Callable[[str, str], str],
    tally: Tally,
) -> list[str]:
    lines = ["## Emitted properties", ""]
    for resource_type in sorted(by_type):
        lines += [
            f"### {resource_type}",
            "",
            *_table_head("property", "schema limits", "API member: model limits", "rows"),
        ]
        for path in sorted(by_type[resource_type]):
            found = sorted({r.id for r in rows_for(resource_type, path, rows)})
            schema = limits_of(resource_type, path)
            model = model_of(resource_type, path)
            tally.total += 1
            tally.constrained += bool(found)
            tally.limited += bool(schema)
            if resource_type in cfn_api.REQUESTS:
                tally.api_typed += 1
                tally.api_mapped += model.startswith("`")
                if not model.startswith("`"):
                    tally.without.append(f"{resource_type} `{path}`")
            tally.api_limited += has_model_limits(model)
            tally.unchecked += not found and not schema and not has_model_limits(model)
            rows_cell = (
                ", ".join(found) if found else ("-" if schema or has_model_limits(model) else NONE_FOUND)
            )
            lines.append(f"| `{path}` | {schema or '-'} | {model or '-'} | {rows_cell} |")
        lines.append("")
    return lines


def _disagreement_section(
    by_type: Mapping[str, set[str]],
    disagreements_of: Callable[[str, str], list[tuple[str, Any, Any, Any]]],
    tally: Tally,
) -> list[str]:
    lines = [
        *DISAGREEMENT_INTRO,
        *_table_head("resource", "property", "bound", "schema", "model", "stricter"),
    ]
    for resource_type, path in _each_property(by_type):
        for bound, stated, modelled, stricter in disagreements_of(resource_type, path):
            tally.differing += 1
            values = (("-" if v is None else str(v)) for v in (stated, modelled))
            lines.append(_table_row([resource_type, f"`{path}`", bound, *values, str(stricter)]))
    return lines


def _prose_section(
    by_type: Mapping[str, set[str]],
    prose_of: Callable[[str, str], list[tuple[str, str, str | None, str | None]]],
    tally: Tally,
) -> list[str]:
    lines = ["", *PROSE_INTRO, *_table_head("resource", "property", "API member", "sentence", "row")]
    for resource_type, path in _each_property(by_type):
        for name, sentence, row, why in prose_of(resource_type, path):
            tally.mined += 1
            tally.quoted += row is not None
            tally.with_prose.add((resource_type, path))
            if row is None:
                kind = (why or NO_REASON).split(": ", 1)[0]
                tally.kinds[kind] = tally.kinds.get(kind, 0) + 1
            lines.append(
                _table_row(
                    [
                        resource_type,
                        f"`{path}`",
                        f"`{name}`",
                        sentence,
                        row or f"not a row: {why or NO_REASON}",
                    ]
                )
            )
    return lines


def _rows_section(rows: tuple[Row, ...]) -> list[str]:
    head = _table_head(
        "id", "what", "applies to", "check", "AWS text", "page", "quote checked", "test refusing it"
    )
    lines = ["", "## Rows", "", *head]
    for r in rows:
        applies = "<br>".join(f"{t} `{p}`" for t, p in r.applies)
        lines.append(
            _table_row([r.id, r.what, applies, r.check, r.sentence, r.url, checked(r), f"`{r.test}`"])
        )
    return lines


def _counts_section(rows: tuple[Row, ...], t: Tally) -> list[str]:
    offline = [r for r in rows if not r.offline]
    return [
        "",
        "## Counts",
        "",
        f"- properties emitted: {t.total}",
        f"- with limits from the CloudFormation schema: {t.limited}",
        f"- of the resource types with an API request ({len(cfn_api.REQUESTS)}): {t.api_typed} properties, "
        f"{t.api_mapped} mapped to an API member, {t.api_typed - t.api_mapped} without one"
        + (f" ({', '.join(t.without)})" if t.without else ""),
        f"- with limits from the API's service model: {t.api_limited}",
        f"- bounds where the schema and the model disagree: {t.differing} (the stricter listed above)",
        f"- constraint sentences in the mapped members' documentation: {t.mined}, on {len(t.with_prose)} "
        f"properties; quoted by a row: {t.quoted}; not rows: {t.mined - t.quoted}"
        + (" (" + "; ".join(f"{k}: {n}" for k, n in sorted(t.kinds.items())) + ")" if t.kinds else ""),
        f"- with at least one row of AWS's prose: {t.constrained}",
        f"- unchecked (no schema limits, no model limits, no row): {t.unchecked}",
        f"- rows quoting a botocore member, checked word for word: {sum(r.model is not None for r in rows)}; "
        f"checked by hand: {sum(r.model is None for r in rows)}",
        f"- constraints (rows): {len(rows)}; enforced offline (loader, constructs, emulator): "
        f"{len(rows) - len(offline)}",
        f"- not enforceable offline: {len(offline)} ({', '.join(r.id for r in offline)}): "
        "they depend on the account, the region's offer or capacity, or ECR's contents, which only AWS knows",
        "",
    ]


def render(
    by_type: Mapping[str, set[str]],
    rows: tuple[Row, ...] = ROWS,
    limits_of: Callable[[str, str], str] = schema_limits,
    model_of: Callable[[str, str], str] = model_limits,
    disagreements_of: Callable[[str, str], list[tuple[str, Any, Any, Any]]] = disagreements,
    prose_of: Callable[[str, str], list[tuple[str, str, str | None, str | None]]] = prose,
) -> str:
    """The markdown document: the emitted properties, where schema and model disagree, the constraint
    sentences, the rows, and the counts the sections gathered."""
    tally = Tally()
    sections = [
        INTRO,
        _emitted_section(by_type, rows, limits_of, model_of, tally),
        _disagreement_section(by_type, disagreements_of, tally),
        _prose_section(by_type, prose_of, tally),
        _rows_section(rows),
        _counts_section(rows, tally),
    ]
    return "\n".join(line for section in sections for line in section)


def main(argv: list[str] | None = None) -> None:
    """Print the document for the template files given."""
    paths = [Path(a) for a in (argv if argv is not None else sys.argv[1:])]
    print(render(emitted(json.loads(p.read_text()) for p in paths)), end="")


if __name__ == "__main__":
    main()
