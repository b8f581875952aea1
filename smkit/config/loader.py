"""Load a deployment YAML, validate it, and turn every problem into one readable error.

Relative paths in a config file (``model_data.path``, a ``build`` image's ``context`` and ``requirements``)
are relative to the
directory of the config file, whatever the working directory: :func:`load_deployment`, the one loader,
resolves them there (:func:`smkit.config.resolved.resolve`), so ``cdk synth``, the scripts and every
``smkit`` command read the same files. A ``build`` image without ``context`` is the kit's own image
(smkit.dockerimage), wherever the config lives. :func:`parse_config` validates data (fields, rules, engine
checks; paths made absolute when given the folder they are relative to); ``resolve(config, base_dir)``
says what it means.

Each reported line names the YAML path, the bad value and what is allowed, e.g.::

    config/realtime.yaml is not a valid deployment config (2 problems):
      - endpoint.variants[0].initial_weight: -1: must be greater than or equal to 0
      - endpoint.variants[1].instance_type: 'ml.t2.medium': burstable ml.t* instances cannot autoscale; ...
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from smkit.aws import instances, patterns
from smkit.config import (
    aws_rules,
    component_rules,
    engine_checks,
    engine_settings,
    hosting_rules,
    image_rules,
    pipeline,
    rules,
    security,
)
from smkit.config.models import DeploymentConfig
from smkit.config.overrides import with_image_tag
from smkit.config.resolved.deployment import ResolvedDeployment
from smkit.config.resolved.paths import with_absolute_paths
from smkit.config.resolved.resolve import ResolveError, resolve
from smkit.config.rules import Issue, Rule

# Friendlier words for the regular expressions used in the models.
PATTERN_HINTS = {
    patterns.AWS_NAME: "letters, digits and hyphens, starting with a letter or digit, <= 63 characters (e.g. main)",
    instances.INSTANCE_TYPE: instances.INSTANCE_TYPE_HINT,
    patterns.ECR_IMAGE_URI: "ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG",
    patterns.KMS_KEY_ARN: "arn:aws:kms:REGION:ACCOUNT:key/KEY-ID",
    security.PICKLE_GLOBAL: "module.name of a pickle global (e.g. mypackage.model.MyModel), or module:name with * wildcards",
    patterns.ML_RESERVATION_ARN: "arn:aws:sagemaker:REGION:ACCOUNT:TYPE/ID of an ML capacity reservation",
    patterns.MEDIA_TYPE: "a media type such as text/csv or application/json",
    patterns.COMPONENT_NAME: "letters, digits and hyphens, not starting or ending with a hyphen, <= 63 characters",
    patterns.CONNECTION_ARN: "arn:aws:codeconnections:REGION:ACCOUNT:connection/ID",
    pipeline.REPOSITORY: "owner/name of the repository, e.g. my-org/smkit",
    r"^[a-z][a-z0-9-]{0,39}$": "lowercase letters, digits and hyphens, starting with a letter, <= 40 characters",
    patterns.ACCOUNT_ID: "a 12-digit AWS account id",
    patterns.REGION: "an AWS region such as eu-west-1",
    patterns.METRICS_PATH: "a path such as /metrics: letters, digits, / _ . -, no '..'",
    patterns.S3_KEY_PREFIX: "an S3 key prefix of letters, digits and ! - _ . * ' ( ) /",
    patterns.SNS_TOPIC_ARN: "arn:aws:sns:REGION:ACCOUNT:TOPIC",
    patterns.IMAGE_TAG: "an image tag: letters, digits, _ . -, not starting with . or -, <= 128 characters",
    patterns.CODECOMMIT_REPOSITORY: "a CodeCommit repository name: letters, digits, _ . -, <= 100 characters",
}
# Keys that select the member of a tagged union (image/model_data ``source``, pipeline source ``type``).
DISCRIMINATORS = ("source", "type")


class ConfigError(ValueError):
    """A config that cannot be used; ``issues`` lists every problem found."""

    def __init__(self, source: str, issues: list[Issue]) -> None:
        self.source = source
        self.issues = issues
        lines = "\n".join(f"  - {issue}" for issue in issues)
        n = len(issues)
        super().__init__(
            f"{source} is not a valid deployment config ({n} problem{'s' if n > 1 else ''}):\n{lines}"
        )


# The cross-field rule tables, each a tuple of pure functions ``(cfg) -> Iterable[Issue]``, applied in this order;
# every issue they find is reported together.
RULE_TABLES: tuple[tuple[Rule, ...], ...] = (
    rules.RULES,
    component_rules.RULES,
    aws_rules.AWS_RULES,
    hosting_rules.HOSTING_RULES,
    image_rules.IMAGE_RULES,
)


def load_deployment(path: str | Path, *, image_tag: str | None = None) -> ResolvedDeployment:
    """The resolved deployment of one config file: read, validated, and resolved against the file's folder;
    what the stacks, the local endpoint, the CLI and ``smkit deploy`` take. Raises :class:`ConfigError`.

    ``image_tag``: deploy that ECR image tag instead of the file's image (:mod:`smkit.config.overrides`).
    """
    cfg, base_dir, source = _validated_file(path, image_tag)
    try:
        deployment = resolve(cfg, base_dir)
    except ResolveError as exc:
        raise ConfigError(source, exc.issues) from None
    return dataclasses.replace(deployment, notices=cfg.notices)


def load_config(path: str | Path, *, image_tag: str | None = None) -> DeploymentConfig:
    """The validated config of one file, its paths absolute, for checks of the config itself
    (the config's tests, :mod:`smkit.config.schema`); every consumer takes :func:`load_deployment`."""
    cfg, base_dir, source = _validated_file(path, image_tag)
    try:
        resolve(cfg, base_dir)  # a config that cannot be resolved is refused here too
    except ResolveError as exc:
        raise ConfigError(source, exc.issues) from None
    return cfg


def _validated_file(path: str | Path, image_tag: str | None) -> tuple[DeploymentConfig, Path, str]:
    data = read_config_data(path)
    base_dir = Path(path).resolve().parent
    source = str(path)
    if image_tag:
        data, source = with_image_tag(data, image_tag), f"{path} (image tag {image_tag})"
    return parse_config(data, source=source, base_dir=base_dir), base_dir, source


def read_config_data(path: str | Path) -> Any:
    """The YAML data of a config file, not yet validated; :class:`ConfigError` when unreadable."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        known = ", ".join(sorted(p.name for p in path.parent.glob("*.yaml"))) if path.parent.is_dir() else ""
        hint = f"; files in {path.parent}: {known}" if known else ""
        raise ConfigError(str(path), [Issue("<file>", str(path), f"no such file{hint}")]) from None
    except UnicodeDecodeError as exc:
        problem = f"is not UTF-8 text (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r}); save it as UTF-8"
        raise ConfigError(str(path), [Issue("<file>", str(path), problem)]) from None
    except OSError as exc:
        raise ConfigError(
            str(path), [Issue("<file>", str(path), f"cannot be read ({exc.strerror})")]
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<yaml>"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(str(path), [Issue(where, "<yaml>", f"not valid YAML: {problem}")]) from None
    return data


def parse_config(data: Any, *, source: str = "<config>", base_dir: Path | None = None) -> DeploymentConfig:
    """Validate already-parsed YAML data (fields, then cross-field rules, then the engine checks).

    ``base_dir``: the folder the config's relative paths are relative to (what :func:`load_deployment`
    passes: the file's folder); the config returned names them absolute. None: as given.
    """
    if not isinstance(data, dict):
        kind = "an empty document" if data is None else type(data).__name__
        raise ConfigError(
            source, [Issue("<root>", kind, "expected a mapping with name, image, model, endpoint")]
        )
    try:
        cfg = DeploymentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, [_issue_from_pydantic(err, data) for err in exc.errors()]) from None
    issues = [issue for table in RULE_TABLES for rule in table for issue in rule(cfg)]
    issues.extend(engine_settings.check(cfg))
    if issues:
        raise ConfigError(source, issues)
    engine = engine_checks.review(cfg, base_dir)
    if engine.issues:
        raise ConfigError(source, engine.issues)
    if base_dir is not None:
        cfg = with_absolute_paths(cfg, base_dir)
        missing = _missing_adapter_folders(cfg)
        if missing:
            raise ConfigError(source, missing)
    cfg._notices = tuple(engine.notices)
    return cfg


def _missing_adapter_folders(cfg: DeploymentConfig) -> list[Issue]:
    """Adapters' ``artifact_path`` that is not a folder holding ``adapter_config.json`` (paths already absolute)."""
    spec = cfg.endpoint.inference_components
    issues = []
    for i, c in enumerate(spec.components if spec is not None else ()):
        if c.artifact_path is None:
            continue
        folder = Path(c.artifact_path)
        if not (folder / "adapter_config.json").is_file():
            problem = "has no adapter_config.json" if folder.is_dir() else "is not a folder"
            issues.append(
                Issue(
                    f"endpoint.inference_components.components[{i}].artifact_path",
                    c.artifact_path,
                    f"{problem}; give the folder PEFT's save_pretrained() wrote (adapter_config.json and the "
                    "weights), relative to the config file (python -m smkit.llm.tiny OUT builds one in OUT/adapter)",
                )
            )
    return issues


def _issue_from_pydantic(err: Any, data: Any) -> Issue:
    loc = _resolve_loc(err["loc"], data)
    path = _format_path(loc) or "<root>"
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(data, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return Issue(path, loc[-1], f"unknown key; {hint}allowed here: {', '.join(allowed)}")
    if kind == "missing":
        return Issue(path, None, "required key is missing")
    if kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern", "")
        return Issue(path, err["input"], f"must be {PATTERN_HINTS.get(pattern, 'match ' + pattern)}")
    message = err["msg"].replace("Input should be", "must be").replace("Input tag", "source")
    return Issue(path, err.get("input"), message)


def _resolve_loc(loc: tuple[Any, ...], data: Any) -> tuple[Any, ...]:
    """Drop the union tag that pydantic inserts into locations of discriminated unions."""
    out: list[Any] = []
    node = data
    for i, seg in enumerate(loc):
        last = i == len(loc) - 1
        tags = [node.get(key) for key in DISCRIMINATORS] if isinstance(node, dict) else []
        if isinstance(node, dict) and seg not in node and not last and seg in tags:
            continue
        out.append(seg)
        if isinstance(node, dict):
            node = node.get(seg)
        elif isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            node = node[seg]
        else:
            node = None
    return tuple(out)


def _format_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for seg in loc:
        path += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if path else str(seg))
    return path


@functools.cache
def _json_schema() -> dict[str, Any]:
    """The config's JSON schema, built once: pydantic rebuilds it on every call (tens of milliseconds)."""
    return DeploymentConfig.model_json_schema(by_alias=True)


def _allowed_keys(data: Any, loc: tuple[Any, ...]) -> list[str]:
    """Keys the schema allows at ``loc`` (walks the JSON schema alongside the data; never changes it)."""
    schema = _json_schema()
    defs = schema.get("$defs", {})
    node_schema: dict[str, Any] = schema
    node = data
    for seg in loc:
        node_schema = _deref(node_schema, defs, node)
        if isinstance(seg, int):
            node_schema = node_schema.get("items", {})
            node = node[seg] if isinstance(node, list) and seg < len(node) else None
        else:
            node_schema = node_schema.get("properties", {}).get(seg, {})
            node = node.get(seg) if isinstance(node, dict) else None
    return sorted(_deref(node_schema, defs, node).get("properties", {}))


def _deref(schema: dict[str, Any], defs: dict[str, Any], node: Any) -> dict[str, Any]:
    while True:
        if "$ref" in schema:
            schema = defs[schema["$ref"].split("/")[-1]]
        elif "anyOf" in schema or "oneOf" in schema:
            options = [_deref(s, defs, node) for s in schema.get("anyOf", schema.get("oneOf", []))]
            options = [o for o in options if o.get("type") != "null"]
            match = [
                o
                for o in options
                for key in DISCRIMINATORS
                if isinstance(node, dict)
                and key in node
                and o.get("properties", {}).get(key, {}).get("const") == node[key]
            ]
            schema = (match or options or [{}])[0]
        else:
            return schema
