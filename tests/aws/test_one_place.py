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
