"""The shape of the product modules: names by role, and functions short enough to read whole.

Two product modules share a basename only where they hold one concept seen from two places: two ``serve.py``
holding different things send a reader to the wrong file. Each repeat below says why its files are one
concept; a new repeat fails until it is renamed by its role or added here with its reason.

No function of smkit is longer than :data:`MAX_FUNCTION_LINES` (its ``def`` line to its last, docstring
included, decorators not): a longer one is split where its concept splits (a phase, a table, a refusal), not
cut into numbered parts. :data:`LONG_FUNCTIONS` holds the ones still longer, each at most its listed length;
the list only shrinks.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CLI_COMMAND = "the `smkit` command's module (smkit/cli/, named after the command) and the library it calls"
_CONFIG_AND_CONSTRUCT = "a config section (smkit/config/) and the construct that turns it into CloudFormation"
_TEMPLATE_FILE = (
    "the file every `smkit init` template writes (the handler SageMaker imports, the training script)"
)
# basename -> (its files, why they are one concept)
SHARED_BASENAMES: dict[str, tuple[frozenset[str], str]] = {
    "cache.py": (frozenset({"smkit/cli/cache.py", "smkit/modelenv/cache.py"}), _CLI_COMMAND),
    "invoke.py": (frozenset({"smkit/cli/invoke.py", "smkit/client/invoke.py"}), _CLI_COMMAND),
    "project.py": (frozenset({"smkit/cli/project.py", "smkit/project.py"}), _CLI_COMMAND),
    "schema.py": (frozenset({"smkit/cli/schema.py", "smkit/config/schema.py"}), _CLI_COMMAND),
    "top.py": (frozenset({"smkit/cli/top.py", "smkit/top.py"}), _CLI_COMMAND),
    "endpoint.py": (
        frozenset({"smkit/config/endpoint.py", "smkit/cdk/constructs/endpoint.py"}),
        _CONFIG_AND_CONSTRUCT,
    ),
    "monitoring.py": (
        frozenset({"smkit/config/monitoring.py", "smkit/cdk/constructs/monitoring.py"}),
        _CONFIG_AND_CONSTRUCT,
    ),
    "storage.py": (
        frozenset({"smkit/config/storage.py", "smkit/cdk/constructs/storage.py"}),
        _CONFIG_AND_CONSTRUCT,
    ),
    "components.py": (
        frozenset({"smkit/config/components.py", "smkit/local/components.py"}),
        "inference components: their config section and their local run",
    ),
    "containers.py": (
        frozenset({"smkit/config/containers.py", "smkit/local/containers.py"}),
        "the Model's containers: their config section and their local processes",
    ),
    "codecs.py": (
        frozenset({"smkit/client/codecs.py", "smkit/serving/worker/codecs.py"}),
        "content-type codec tables: the client's side and the serving worker's side",
    ),
    "hooks.py": (
        frozenset({"smkit/hooks.py", "smkit/packaging/hooks.py"}),
        "the handler hooks: their rules, and the packager's check of a handler against them",
    ),
    "requirements.py": (
        frozenset({"smkit/packaging/requirements.py", "smkit/hosting/requirements.py"}),
        "a model's code/requirements.txt: checked when packaging, installed when hosting",
    ),
    "smoke.py": (
        frozenset({"smkit/client/smoke.py", "smkit/release/smoke.py"}),
        "the smoke test: the client's run of the samples, and the release step that runs it",
    ),
    "deploy.py": (
        frozenset({"smkit/release/deploy.py", "smkit/emulator/deploy.py"}),
        "the one deploy pipeline (smkit/ops/deploy_pipeline.py) pointed at AWS and at moto",
    ),
    "metrics.py": (
        frozenset({"smkit/serving/front/metrics.py", "smkit/local/metrics.py"}),
        "the Prometheus metrics of the serving runtime, and the local endpoint serving them per container",
    ),
    "frontend.py": (
        frozenset({"smkit/serving/front/frontend.py", "smkit/tfs/frontend.py"}),
        "the front end of each form of the serving container (toolkit, TensorFlow Serving)",
    ),
    "threads.py": (
        frozenset({"smkit/serving/front/threads.py", "smkit/tfs/threads.py"}),
        "the thread pools of each form of the serving container (toolkit, TensorFlow Serving)",
    ),
    "errors.py": (
        frozenset({"smkit/packaging/errors.py", "smkit/serving/wire/errors.py"}),
        "a package's own exception types",
    ),
    "inference.py": (
        frozenset(
            f"smkit/scaffold/templates/{t}/inference.py" for t in ("catboost", "lightgbm", "onnx", "pytorch")
        )
        | frozenset(
            f"smkit/scaffold/templates/{t}/inference.py" for t in ("sklearn", "tensorflow", "xgboost")
        ),
        _TEMPLATE_FILE,
    ),
    "train.py": (
        frozenset(
            f"smkit/scaffold/templates/{t}/train.py" for t in ("catboost", "lightgbm", "onnx", "pytorch")
        )
        | frozenset(f"smkit/scaffold/templates/{t}/train.py" for t in ("sklearn", "tensorflow", "xgboost"))
        | {"smkit/scaffold/templates/huggingface/train.py"},
        _TEMPLATE_FILE,
    ),
}
PYTHON_NAMES = {"__init__.py", "__main__.py"}


def shared_basenames(root: Path = REPO) -> dict[str, frozenset[str]]:
    """basename -> the product modules under ``root/smkit`` that have it, for every basename held more than once."""
    files: dict[str, set[str]] = defaultdict(set)
    for path in (root / "smkit").rglob("*.py"):
        files[path.name].add(path.relative_to(root).as_posix())
    return {
        name: frozenset(paths) for name, paths in files.items() if len(paths) > 1 and name not in PYTHON_NAMES
    }


def test_product_modules_share_a_basename_only_for_one_concept() -> None:
    found = shared_basenames()
    unexplained = {name: sorted(paths) for name, paths in found.items() if name not in SHARED_BASENAMES}
    assert not unexplained, (
        f"rename by role, or state why these are one concept in SHARED_BASENAMES: {unexplained}"
    )
    changed = {
        name: sorted(found.get(name, frozenset()) ^ paths)
        for name, (paths, _) in SHARED_BASENAMES.items()
        if found.get(name) != paths
    }
    assert not changed, f"SHARED_BASENAMES no longer matches the files (the differing paths): {changed}"


def test_the_basename_check_sees_nested_repeats(tmp_path: Path) -> None:
    for module in ("smkit/a/serve.py", "smkit/b/c/serve.py", "smkit/a/__init__.py", "smkit/b/__init__.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    assert shared_basenames(tmp_path) == {"serve.py": frozenset({"smkit/a/serve.py", "smkit/b/c/serve.py"})}


MAX_FUNCTION_LINES = 80
# "path:qualified name" -> its length now, which it may not exceed; removed once the function is split.
LONG_FUNCTIONS: dict[str, int] = {}


def _functions(
    tree: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function, nested ones and methods included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_functions(root: Path = REPO) -> dict[str, int]:
    """ "path:qualified name" -> lines, for every function under ``root/smkit`` over :data:`MAX_FUNCTION_LINES`."""
    found = {}
    for path in sorted((root / "smkit").rglob("*.py")):
        for name, node in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found[f"{path.relative_to(root).as_posix()}:{name}"] = lines
    return found


def test_no_function_is_longer_than_its_concept() -> None:
    found = long_functions()
    new = {name: lines for name, lines in found.items() if name not in LONG_FUNCTIONS}
    assert not new, f"split these where their concept splits (at most {MAX_FUNCTION_LINES} lines): {new}"
    grown = {
        name: (LONG_FUNCTIONS[name], lines) for name, lines in found.items() if lines > LONG_FUNCTIONS[name]
    }
    assert not grown, f"longer than listed in LONG_FUNCTIONS (listed, now): {grown}"


def _function(name: str, lines: int, indent: str = "") -> str:
    return f"{indent}def {name}():\n" + "".join(f"{indent}    x = {i}\n" for i in range(lines - 1))


def test_the_length_check_sees_methods_and_nested_functions(tmp_path: Path) -> None:
    over = MAX_FUNCTION_LINES + 1
    source = (
        "class A:\n" + _function("long", over, "    ") + "def outer():\n" + _function("inner", over, "    ")
    )
    source += _function("short", MAX_FUNCTION_LINES)
    (tmp_path / "smkit").mkdir()
    (tmp_path / "smkit" / "m.py").write_text(source)
    assert long_functions(tmp_path) == {
        "smkit/m.py:A.long": over,
        "smkit/m.py:outer": over + 1,
        "smkit/m.py:outer.inner": over,
    }
