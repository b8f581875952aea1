"""AWS facts live in one place (smkit/aws): no other module of smkit defines an instance-type pattern, an
instance hardware table or an AWS limit.

The scan reads every module's syntax tree:

- an instance-type pattern: a string that spells a regular expression over ``ml.`` names (``ml\\.``);
- an instance hardware table: a dict literal keyed by two or more instance type names (``ml.m5.large``) or
  by two or more instance size names (``xlarge``, ``2xlarge``);
- an AWS limit: a module-level constant whose name says it is a bound (``LIMIT``, ``MAX``, ``MIN``,
  ``RANGE``, ``PERCENT``) and whose value is a number written in place (or a tuple of them). The kit's own
  tunables of that shape are listed in :data:`OWN_BOUNDS` with what they bound; anything else of that shape
  is an AWS number and belongs in :mod:`smkit.aws.limits`. The serving runtime's and the HTTP layer's own
  packages (:data:`RUNTIME_INTERNALS`) are left out of this one check: their bounds are the runtime's tuning,
  and the AWS numbers they honour reach them through :mod:`smkit.contract`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SMKIT = REPO / "smkit"
FACTS = SMKIT / "aws"
INSTANCE_NAME = re.compile(r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$")
SIZE_NAME = re.compile(r"^(medium|\d*xlarge|large)$")
BOUND_WORDS = re.compile(r"(^|_)(LIMIT|LIMITS|MAX|MIN|RANGE|PERCENT)(_|$)")
RUNTIME_INTERNALS = (SMKIT / "serving", SMKIT / "http1")
UNITS = {"KIB", "MIB", "GIB", "MEGABYTE", "KB", "MB", "GB"}
# The kit's own bounds (not AWS's): module:name -> what it bounds.
OWN_BOUNDS = {
    "smkit/packaging/inspection.py:MAX_MANIFEST_BYTES": "the size of a model archive's manifest the kit reads",
    "smkit/packaging/writer.py:PROGRESS_MIN_BYTES": "when the packager shows progress",
    "smkit/packaging/vendor.py:MANYLINUX_GLIBC_MINORS": "glibc versions of wheels the packager tries",
    "smkit/contract.py:DRAIN_LIMIT": "how much of an oversize body the runtime reads before closing",
    "smkit/local/eventstream.py:MAX_PART_BYTES": "the local gateway's event-stream part size",
    "smkit/bounded.py:MIN_IDLE_S": "an idle timer's floor",
    "smkit/config/engine_checks.py:DEFAULT_MAX_LORA_RANK": "vLLM's default --max-lora-rank (vLLM's, not AWS's)",
    "smkit/config/model_files.py:MAX_JSON_BYTES": "the JSON files of a model folder the loader reads",
    "smkit/batch/request.py:WAIT_MAX_ATTEMPTS": "how long the CLI polls a transform job",
    "smkit/contract.py:DEFAULT_MAX_BATCH_DELAY_MS": "dynamic batching's delay (AWS's PyTorch toolkit default)",
    "smkit/local/upstream.py:MAX_IDLE": "idle connections the local gateway keeps per container",
    "smkit/pickle_scan.py:MAX_DEPTH": "how deep the pickle scanner follows nesting",
    "smkit/contract.py:MAX_WORKER_CONCURRENCY": "requests one model worker may run at once (its scoreboard slots)",
    "smkit/hosting/env.py:DEFAULT_METRICS_MAX_MODELS": "models /metrics labels one by one before '_other'",
    "smkit/local/metrics.py:MAX_METRICS_BYTES": "how much of a container's /metrics answer the local endpoint reads",
}


def _modules() -> Iterator[Path]:
    for path in sorted(SMKIT.rglob("*.py")):
        if not path.is_relative_to(FACTS) and "__pycache__" not in path.parts:
            yield path


def _numeric(node: ast.expr) -> bool:
    """A number written in place: a literal, arithmetic of literals, or a tuple/list of such."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):  # 6 * MIB counts: a unit times a number is a number written in place
        sides = (node.left, node.right)
        return all(_numeric(s) or (isinstance(s, ast.Name) and s.id in UNITS) for s in sides) and any(
            _numeric(s) for s in sides
        )
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.Tuple | ast.List):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        return all(_numeric(a) for a in node.args)
    return False


def findings(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` defines an instance-type pattern, an instance hardware table or an AWS limit."""
    where = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "ml\\." in node.value:
                found.append(f"{where}:{node.lineno}: instance-type pattern {node.value!r}")
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if (
                sum(bool(INSTANCE_NAME.match(k)) for k in keys) >= 2
                or sum(bool(SIZE_NAME.match(k)) for k in keys) >= 2
            ):
                found.append(f"{where}:{node.lineno}: instance table keyed by {keys[:3]}")
    internal = any(path.is_relative_to(p) for p in RUNTIME_INTERNALS)
    for stmt in [] if internal else tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for target in targets:
            if not isinstance(target, ast.Name) or value is None:
                continue
            name = target.id
            if BOUND_WORDS.search(name) and _numeric(value) and f"{where}:{name}" not in OWN_BOUNDS:
                found.append(f"{where}:{stmt.lineno}: limit {name} = {ast.unparse(value)}")
    return found


def test_no_module_outside_the_facts_layer_defines_aws_facts() -> None:
    found = [f for path in _modules() for f in findings(path)]
    assert found == [], (
        "define it in smkit/aws (instances.py, limits.py) and import it; a bound of the kit's own (not AWS's) "
        "goes into OWN_BOUNDS with what it bounds:\n" + "\n".join(found)
    )


def test_the_own_bounds_still_exist() -> None:
    # A stale entry would let an AWS limit of the same name back in unnoticed.
    for entry in OWN_BOUNDS:
        module, name = entry.split(":")
        assert re.search(rf"^{name}\b", (REPO / module).read_text(encoding="utf-8"), re.M), entry


def test_the_scan_finds_each_kind(tmp_path: Path) -> None:
    source = (
        'PATTERN = r"^ml\\.[a-z0-9]+\\.[a-z0-9]+$"\n'
        'TABLE = {"ml.g5.xlarge": (4, 16, 1), "ml.g5.2xlarge": (8, 32, 1)}\n'
        'UNITS = {"large": 1, "xlarge": 2}\n'
        "MAX_ENV_ENTRIES = 100\n"
        "BATCH_PERCENT = (5, 50)\n"
        "PAYLOAD_LIMIT = 6 * MIB\n"
        "IMPORTED_MAX = MAX_ENV_ENTRIES\n"
        'EXAMPLE = "ml.m5.large"\n'
    )
    path = tmp_path / "smkit" / "probe.py"
    path.parent.mkdir()
    path.write_text(source, encoding="utf-8")
    kinds = [f.split(": ", 1)[1].split(" ")[0] for f in findings(path, root=tmp_path)]
    assert kinds == ["instance-type", "instance", "instance", "limit", "limit", "limit"]


# --- Bounds of the config's fields and regular expressions of AWS formats ---
# Where the scan below looks: the config, the constructs and stacks, the local endpoint, batch transform.
BOUNDED = (SMKIT / "config", SMKIT / "cdk", SMKIT / "local", SMKIT / "batch")
FIELD_BOUNDS = {"ge", "le", "gt", "lt", "max_length", "min_length", "multiple_of"}
REGEX_CALLS = {"compile", "match", "fullmatch", "search", "sub", "subn", "findall", "finditer", "split"}
# A number that says what kind of value a field takes, not how much of it AWS accepts: min_length=1 is "not
# empty" (a list or a string the kit needs at least one of).
SHAPES = {("min_length", 1)}
# The kit's own numbers on config fields (not AWS's): module:Class.field -> why. Every other number written in a
# Field(...) bound is an AWS limit and is imported from smkit.aws.limits.
OWN_FIELD_BOUNDS = {
    "smkit/config/containers.py:Batching.max_batch_size": "ge=1: a batch of at least one request (1: off)",
    "smkit/config/containers.py:Batching.max_batch_delay_ms": "ge=0: a delay is not negative",
    "smkit/config/storage.py:StorageSpec.superseded_model_days": "ge=1: an S3 lifecycle expiry of whole days",
    "smkit/config/storage.py:StorageSpec.noncurrent_version_days": "ge=1: an S3 lifecycle expiry of whole days",
    "smkit/config/monitoring.py:Monitoring.latency_p99_ms": "ge=1: the kit's alarm threshold, in milliseconds",
    "smkit/config/monitoring.py:Monitoring.error_5xx_percent": "0 < a percentage of requests <= 100",
    "smkit/config/monitoring.py:Monitoring.error_4xx_percent": "0 < a percentage of requests <= 100",
    "smkit/config/monitoring.py:Monitoring.backlog_age_seconds": "ge=60: the alarm's one-minute period",
    "smkit/config/endpoint.py:Variant.initial_weight": (
        "gt=0: the kit routes by weight and every variant it creates takes traffic (AWS's minimum is 0)"
    ),
    "smkit/config/endpoint.py:ServerlessAutoscaling.target_utilization": "0 < a utilization ratio <= 1",
    "smkit/config/endpoint.py:Deployment.canary_size_percent": (
        "a percentage (<= 100); AWS's 1-50 is a rule with AWS's sentence (smkit.config.aws_rules)"
    ),
    "smkit/config/endpoint.py:Deployment.linear_step_percent": (
        "a percentage (<= 100); AWS's 10-50 is a rule with AWS's sentence (smkit.config.aws_rules)"
    ),
    "smkit/config/endpoint.py:Deployment.batch_percent": (
        "a percentage (<= 100); AWS's 5-50 is a rule with AWS's sentence (smkit.config.hosting_rules)"
    ),
    "smkit/config/endpoint.py:Deployment.rollback_batch_percent": (
        "a percentage (<= 100); AWS's 5-50 is a rule with AWS's sentence (smkit.config.hosting_rules)"
    ),
    "smkit/config/components.py:RollingUpdate.batch_percent": (
        "a percentage (<= 100); AWS's 5-50 is a rule with AWS's sentence (smkit.config.hosting_rules)"
    ),
    "smkit/config/components.py:ShadowVariant.sampling_percentage": (
        "1-100: a percentage of production traffic the kit turns into the shadow's relative weight"
    ),
    "smkit/config/components.py:InferenceComponentSpec.copies": (
        "ge=1: a component is created with at least one copy (autoscaling may later take it to 0)"
    ),
    "smkit/config/components.py:CopyScaling.min_copies": "ge=0: a count",
    "smkit/config/components.py:CopyScaling.target_invocations_per_copy": "gt=0: a target rate",
    "smkit/config/components.py:CopyScaling.scale_in_cooldown_seconds": "ge=0: a duration",
    "smkit/config/components.py:CopyScaling.scale_out_cooldown_seconds": "ge=0: a duration",
    "smkit/config/components.py:CopyScaling.scale_from_zero_cooldown_seconds": "ge=0: a duration",
    "smkit/config/scaling.py:Autoscaling.min_capacity": "ge=0: a count",
    "smkit/config/scaling.py:Autoscaling.target_invocations_per_instance": "ge=1: a target rate",
    "smkit/config/scaling.py:Autoscaling.target_backlog_per_instance": "gt=0: a target backlog",
    "smkit/config/scaling.py:Autoscaling.scale_in_cooldown_seconds": "ge=0: a duration",
    "smkit/config/scaling.py:Autoscaling.scale_out_cooldown_seconds": "ge=0: a duration",
}
# The kit's own regular expressions in those packages (not AWS's formats): module:name -> what they match.
OWN_PATTERNS = {
    "smkit/config/models.py:DeploymentConfig.name": (
        "the deployment's name, the kit's prefix of stack and resource names (<= 40 so derived names fit AWS's 63)"
    ),
    "smkit/config/monitoring.py:EmailSubscription.address": "an e-mail address, as far as the kit checks one",
    "smkit/config/monitoring.py:HttpsSubscription.url": "an https:// URL",
    "smkit/config/pipeline.py:REPOSITORY": "owner/name of a GitHub, GitLab or Bitbucket repository",
    "smkit/config/rules.py:SET_MEMBER": (
        "a model_code/ folder name of a local multi-model set (the archive's name, NAME.tar.gz, is the kit's)"
    ),
    "smkit/config/resolved/names.py:_NOT_ALLOWED": (
        "what aws-cdk-lib's Names.uniqueResourceName drops from construct ids (the CDK's, not an AWS format)"
    ),
    "smkit/config/security.py:PICKLE_GLOBAL": "the kit's allow-list entries for pickle globals (smkit/pickle_allow.py)",
    "smkit/config/resolved/images.py:_FROM_PYTHON": "a Dockerfile's FROM python:X.Y line",
    "smkit/config/resolved/images.py:_TAG_PYTHON": "the -pyXY part of a Deep Learning Containers image tag",
    "smkit/config/resolved/images.py:_TAG_VERSION": "the framework version a Deep Learning Containers tag starts with",
    "smkit/config/resolved/images.py:_TAG_TRANSFORMERS": "the -transformersX.Y part of a Hugging Face DLC tag",
    "smkit/config/schema.py:_LINK": "links in field descriptions, for the JSON schema",
    "smkit/local/target_model.py:slug": "a file-system-safe name for a cached model",
    "smkit/local/sticky_sessions.py:_NEW_SESSION_VALUE": (
        "splits a container's NewSessionId answer, once it matched AWS's pattern (smkit.aws.patterns), into id "
        "and expiry"
    ),
    "smkit/batch/jsonpath.py:_MIXED_UNION": "a JSONPath union of the batch InputFilter / OutputFilter syntax",
    "smkit/batch/request.py:stem": "replaces what AWS's job name pattern (smkit.aws.patterns.AWS_NAME) forbids",
}


def _bounded_modules() -> Iterator[Path]:
    for root in BOUNDED:
        yield from (p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts)


def _scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every node with the name it sits under: Class.field, a function's name, or a module constant's."""

    def visit(node: ast.AST, scope: str, cls: str) -> Iterator[tuple[ast.AST, str]]:
        for child in ast.iter_child_nodes(node):
            name, inner_cls = scope, cls
            if isinstance(child, ast.ClassDef):
                name, inner_cls = child.name, child.name
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{cls}.{child.name}" if cls else child.name
            elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                name = f"{cls}.{child.target.id}" if cls else child.target.id
            elif isinstance(child, ast.Assign) and isinstance(child.targets[0], ast.Name):
                name = f"{cls}.{child.targets[0].id}" if cls else child.targets[0].id
            yield child, name
            yield from visit(child, name, inner_cls)

    yield from visit(tree, "", "")


def _string(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left), _string(node.right)
        return None if left is None or right is None else left + right
    return None


def bound_findings(path: Path, root: Path = REPO) -> list[str]:
    """Numbers written into Field(...) bounds and regular expressions written in place, by where they sit."""
    where = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node, scope in _scopes(tree):
        key = f"{where}:{scope}"
        if isinstance(node, ast.Call):
            func = node.func
            fname = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if fname == "Field":
                for kw in node.keywords:
                    if kw.arg in FIELD_BOUNDS and _numeric(kw.value) and key not in OWN_FIELD_BOUNDS:
                        value = ast.literal_eval(kw.value) if isinstance(kw.value, ast.Constant) else None
                        if (kw.arg, value) not in SHAPES:
                            found.append(f"{key}: bound {kw.arg}={ast.unparse(kw.value)}")
            regex = None
            if (
                isinstance(func, ast.Attribute)
                and func.attr in REGEX_CALLS
                and isinstance(func.value, ast.Name)
            ):
                regex = _string(node.args[0]) if func.value.id == "re" and node.args else None
            for kw in node.keywords:
                if kw.arg == "pattern" and _string(kw.value) is not None:
                    regex = _string(kw.value)
            if regex is not None and key not in OWN_PATTERNS:
                found.append(f"{key}: regular expression {regex!r}")
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            text = _string(stmt.value)
            named = isinstance(target, ast.Name) and f"{where}:{target.id}" not in OWN_PATTERNS
            if named and isinstance(target, ast.Name) and text is not None and text.startswith("^"):
                found.append(f"{where}:{target.id}: regular expression {text!r}")
    return found


def test_config_bounds_and_aws_formats_come_from_the_facts_layer() -> None:
    found = [f for path in _bounded_modules() for f in bound_findings(path)]
    assert found == [], (
        "an AWS limit or format: define it in smkit/aws (limits.py, patterns.py) with its source and import "
        "it; a number or pattern of the kit's own goes into OWN_FIELD_BOUNDS / OWN_PATTERNS with why:\n"
        + "\n".join(found)
    )


def test_the_own_field_bounds_and_patterns_still_exist() -> None:
    for entry in [*OWN_FIELD_BOUNDS, *OWN_PATTERNS]:
        module, name = entry.split(":")
        assert re.search(rf"\b{name.split('.')[-1]}\b", (REPO / module).read_text(encoding="utf-8")), entry


def test_the_bound_scan_finds_each_kind(tmp_path: Path) -> None:
    source = (
        "import re\n"
        "from pydantic import Field\n"
        "from smkit.aws.limits import VOLUME_SIZE_RANGE_GB\n"
        'NAME = r"^[a-z]{1,63}$"\n'
        'ARN = re.compile(r"arn:aws:kms:")\n'
        "class Spec:\n"
        "    size: int = Field(ge=1, le=512)\n"
        '    name: str = Field(min_length=1, max_length=63, pattern=r"[a-z]+")\n'
        "    ok: int = Field(ge=VOLUME_SIZE_RANGE_GB[0], le=VOLUME_SIZE_RANGE_GB[1])\n"
        "    def check(self, v):\n"
        '        return re.fullmatch("[0-9]{12}", v)\n'
    )
    path = tmp_path / "smkit" / "config" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    found = [
        f.split(": ", 1)[0].split(":", 1)[1] + " " + f.split(": ", 1)[1].split(" ")[0]
        for f in bound_findings(path, root=tmp_path)
    ]
    assert sorted(found) == sorted(
        [
            "ARN regular",
            "Spec.size bound",
            "Spec.size bound",
            "Spec.name bound",
            "Spec.name regular",
            "Spec.check regular",
            "NAME regular",
        ]
    )
