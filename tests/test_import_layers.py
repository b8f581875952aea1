"""Imports point one way (smkit/__init__.py): no cycle between top-level packages or between smkit's parts.

The graph is read from the source (every absolute import, function-level ones included), so an import that
only runs on one code path counts too. A unit is a top-level package (``app``, ``bench``, ``scripts``,
``stacks``: the repository's own CDK app) or one part of smkit (``smkit.serving``, ``smkit.cdk``, ...). ``__main__`` modules are left
out: nothing imports an entry point, so it cannot close a cycle.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("smkit", "stacks", "scripts", "bench", "app.py")
# The CDK libraries (the ``cdk`` extra): only the construct library smkit.cdk and the apps built on it.
CDK_PACKAGES = {"aws_cdk", "constructs", "cdk_nag"}
TOP_LEVEL = {"app", "bench", "scripts", "stacks", "smkit"}


def unit(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "smkit" else parts[0]


def _files() -> Iterator[Path]:
    for name in SOURCES:
        path = REPO / name
        found = [path] if path.is_file() else sorted(path.rglob("*.py"))
        # Hidden folders hold no source of ours (bench/.venvs: the benchmarks' own venvs).
        yield from (p for p in found if not any(part.startswith(".") for part in p.relative_to(REPO).parts))


def _imported(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from smkit import process` imports smkit.process; `from smkit.x import name` imports smkit.x.
            yield from (
                (f"{node.module}.{alias.name}" for alias in node.names)
                if node.module == "smkit"
                else [node.module]
            )


@cache
def graph() -> dict[str, frozenset[str]]:
    """unit -> the units it imports."""
    edges: dict[str, set[str]] = {}
    for path in _files():
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        if module.endswith("__main__"):
            continue
        source = unit(module)
        for target in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            if target.split(".")[0] in TOP_LEVEL and target != "smkit" and unit(target) != source:
                edges.setdefault(source, set()).add(unit(target))
    return {source: frozenset(targets) for source, targets in edges.items()}


def cycle(edges: dict[str, frozenset[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return None
        for target in sorted(edges.get(node, ())):
            found = visit(target, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    for start in sorted(edges):
        found = visit(start, [])
        if found:
            return found
    return None


def test_no_import_cycle_between_top_level_packages() -> None:
    top: dict[str, frozenset[str]] = {}
    for source, targets in graph().items():
        package = source.split(".")[0]
        top[package] = top.get(package, frozenset()) | {t.split(".")[0] for t in targets} - {package}
    found = cycle(top)
    assert found is None, " -> ".join(found or [])
    assert top["smkit"] == frozenset(), "the library imports none of app, stacks, scripts, bench"


def test_no_import_cycle_between_the_parts_of_smkit() -> None:
    found = cycle(graph())
    assert found is None, " -> ".join(found or [])


def test_the_documented_one_way_rules_hold() -> None:
    edges = graph()
    assert "smkit.serving" not in edges["smkit.packaging"], "packaging never imports serving"
    for name in ("stacks", "smkit.cdk"):
        assert name not in edges["scripts"], "scripts reach stack names through the synthesized assembly"
    assert edges.get("smkit.aws", frozenset()) == frozenset(), (
        "smkit.aws (AWS facts) imports nothing of smkit"
    )
    for bottom in ("smkit.contract", "smkit.archive", "smkit.hooks", "smkit.process", "smkit.object_store"):
        assert edges.get(bottom, frozenset()) <= {"smkit.contract", "smkit.aws"}, (
            f"{bottom} is a bottom layer"
        )


def test_constructs_import_nothing_from_the_config() -> None:
    # Constructs take typed props, never a config: AWS's numbers (instance hardware, limits) come from
    # smkit.aws, the kit's own names from the bottom layers; smkit.cdk.mapping renames the config into props.
    config = {
        f"{path.relative_to(REPO)}: {name}"
        for path in sorted((REPO / "smkit" / "cdk" / "constructs").rglob("*.py"))
        for name in _module_imports(path)
        if name.split(".")[:2] == ["smkit", "config"]
    }
    assert config == set(), "\n".join(sorted(config))


def test_smkit_cdk_is_the_top_of_the_library_and_the_only_part_that_imports_cdk() -> None:
    # The CLI runs the CDK app as a process (smkit.ops.cdk_cli.APP_MODULE); nothing in smkit imports it, so the
    # serving runtime, the local endpoint, packaging and the CLI work without the cdk extra.
    importers = sorted(source for source, targets in graph().items() if "smkit.cdk" in targets)
    assert [source for source in importers if source.startswith("smkit")] == []
    outside = [
        f"{path.relative_to(REPO)}: {name}"
        for path in sorted((REPO / "smkit").rglob("*.py"))
        if not path.is_relative_to(REPO / "smkit" / "cdk")
        for name in _module_imports(path)
        if name.split(".")[0] in CDK_PACKAGES
    ]
    assert outside == [], "\n".join(outside)


def test_the_repository_app_uses_only_the_public_api() -> None:
    # stacks/ and app.py are this repository's own CDK app, built the way a user's app is: from smkit.cdk.
    apps = [
        REPO / "app.py",
        *sorted((REPO / "stacks").rglob("*.py")),
        REPO / "examples" / "cdk-app" / "app.py",
    ]
    ours = {
        f"{path.relative_to(REPO)}: {name}"
        for path in apps
        for name in _module_imports(path)
        if name.split(".")[0] == "smkit" and name not in ("smkit.cdk", "smkit.config")
    }
    assert ours == set(), "\n".join(sorted(ours))
    # scripts: the repository's own gates, which its pipeline runs (scripts/gates.py).
    assert graph()["stacks"] == {"smkit.cdk", "scripts"} and graph()["app"] == {"stacks"}


def test_the_graph_sees_lazy_imports() -> None:
    # smkit.cli imports most commands inside functions; they must be edges all the same.
    assert {"smkit.serving", "smkit.emulator", "smkit.local"} <= graph()["smkit.cli"]


# --- The serving runtime by process (smkit/serving/__init__.py): front end, worker, and what they share. ---

FRONT, WORKER, WIRE = "smkit.serving.front", "smkit.serving.worker", "smkit.serving.wire"
# What a model-worker process may import of smkit: its own package, the wire, the hosting environment and
# the bottom layers (docs/serving-runtime.md, "The workers' Python environment"). Nothing of the front end,
# its HTTP server, the TF Serving runtime, the config or the CDK.
WORKER_BUDGET = (
    WORKER,
    WIRE,
    "smkit.hosting",
    "smkit.archive",
    "smkit.aws.limits",
    "smkit.contract",
    "smkit.digest",
    "smkit.hftasks",
    "smkit.hooks",
    "smkit.pickle_allow",
    "smkit.pickle_scan",
    "smkit.process",
    "smkit.requirement_lines",
    "smkit.object_store",
)


def _module_file(module: str, root: Path = REPO) -> Path | None:
    path = root.joinpath(*module.split("."))
    return next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()), None)


@cache
def module_graph(root: Path = REPO) -> dict[str, frozenset[str]]:
    """smkit module -> the smkit modules it imports (function-level and ``TYPE_CHECKING`` imports included);
    ``from package import module`` counts as importing the module (not the package's ``__init__``)."""
    edges: dict[str, frozenset[str]] = {}
    for path in sorted((root / "smkit").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    found.add(submodule if _module_file(submodule, root) else node.module)
        edges[module] = frozenset(m for m in found if m.startswith("smkit.") and _module_file(m, root))
    return edges


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crossings(source: str, target: str) -> list[str]:
    """Imports from a module of package ``source`` of a module of package ``target``."""
    return sorted(
        f"{module} imports {imported}"
        for module, imported_modules in module_graph().items()
        if _within(module, source)
        for imported in imported_modules
        if _within(imported, target)
    )


def test_the_front_end_and_the_worker_never_import_each_other() -> None:
    assert crossings(FRONT, WORKER) == [], "the front end talks to workers in smkit.serving.wire frames"
    assert crossings(WORKER, FRONT) == [], "a worker process knows nothing of the front end"
    for side in (
        FRONT,
        WORKER,
        "smkit.serving.launcher",
        "smkit.serving.__main__",
        "smkit.serving.entrypoint",
    ):
        assert crossings(WIRE, side) == [], "the wire is below both sides"


def test_the_tf_serving_runtime_imports_no_serving_module() -> None:
    # One launcher (smkit/serving/launcher.py) chooses the runtime; what both need is below both.
    assert crossings("smkit.tfs", "smkit.serving") == []
    for runtime in (FRONT, WORKER, WIRE):
        assert crossings(runtime, "smkit.tfs") == [], "only the launcher knows both runtimes"
    assert crossings("smkit.hosting", "smkit.serving") == crossings("smkit.hosting", "smkit.tfs") == []
    launchers = {module.split(" ")[0] for module in crossings("smkit.serving", "smkit.tfs")}
    assert launchers == {"smkit.serving.launcher"}, launchers


def test_no_circle_between_the_files_of_smkit() -> None:
    # Imports under TYPE_CHECKING and inside functions count: a type or a helper two modules need belongs
    # in a module below both (smkit.http1.connection.ConnectionOwner, not the Server above it). A feature
    # of the front end (sessions, adapters, WebSocket, metrics) takes the narrow interface it uses
    # (smkit.serving.front.relay.Client, a pool, a callable), not the FrontEnd that holds it.
    found = cycle(dict(module_graph()))
    assert found is None, " -> ".join(found or [])


def test_the_file_circle_check_sees_type_checking_and_lazy_imports(tmp_path: Path) -> None:
    sample = tmp_path / "smkit" / "sample"
    sample.mkdir(parents=True)
    (sample / "__init__.py").write_text("")
    (sample / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from smkit.sample.high import High\n"
    )
    (sample / "high.py").write_text("def f():\n    from smkit.sample import low\n")
    edges = {
        "smkit.sample.low": frozenset({"smkit.sample.high"}),
        "smkit.sample.high": frozenset({"smkit.sample.low"}),
    }
    assert cycle(edges) == ["smkit.sample.high", "smkit.sample.low", "smkit.sample.high"]
    seen = module_graph(tmp_path)
    assert seen["smkit.sample.low"] == {"smkit.sample.high"}, "a TYPE_CHECKING import is an edge"
    assert seen["smkit.sample.high"] == {"smkit.sample.low"}, "a function-level import of a module is an edge"


def test_contract_names_are_not_re_aliased() -> None:
    # A variable name of the hosting contract has one spelling: smkit.contract.<NAME>, never a second
    # module-level name bound to it (VAR_PORT = contract.BIND_TO_PORT) that a grep for the first misses.
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}"
        for path in sorted((REPO / "smkit").rglob("*.py"))
        if path.name != "contract.py"
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "contract"
        and node.value.attr.isupper()
    ]
    assert found == [], "\n".join(found)


def worker_imports() -> set[str]:
    """Every smkit module a model-worker process can import, on any code path."""
    seen: set[str] = set()
    todo = [f"{WORKER}.model_worker"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += module_graph().get(module, frozenset())
    return seen


def test_what_a_worker_process_may_import() -> None:
    outside = sorted(
        module
        for module in worker_imports() - {"smkit", "smkit.serving"}
        if not any(_within(module, allowed) for allowed in WORKER_BUDGET)
    )
    assert outside == [], "outside the worker's import budget (WORKER_BUDGET): " + ", ".join(outside)


def test_a_worker_starts_on_the_standard_library_alone() -> None:
    # -S: no site-packages, so the model's own environment needs none of the server's libraries
    # (NumPy and the archive's isal are imported on first use only).
    probe = (
        "import sys; import smkit.serving.worker.model_worker; "
        "print(*sorted({m.split('.')[0] for m in sys.modules} - {*sys.stdlib_module_names, '__main__'}))"
    )
    env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")}
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["smkit"]


# --- The resolved deployment (smkit/config/resolved): the stacks and the local endpoint read, never decide. ---

RESOLVED = "smkit.config.resolved"
# The parts of smkit that turn a deployment into CloudFormation, local processes, a batch job or a release.
CONSUMERS = ("smkit/cdk", "smkit/local", "smkit/batch", "smkit/release")
# The composition entry points: the only modules of the consumers that may name the raw DeploymentConfig (to
# load or accept one and hand its resolved deployment on); listed in docs/resolved-deployment.md.
CONFIG_ENTRY_POINTS = ("smkit/local/endpoint_server.py",)
RAW_CONFIG = "DeploymentConfig"
# The consumers that read containers (image, model data): what they must not work out again.
CONTAINER_READERS = ("smkit/cdk", "smkit/local")
# Config values whose meaning the resolved deployment decides: comparing ``.source`` with them is deciding
# the image or the model data kind again.
DECIDED_VALUES = {"archive", "prefix", "multi-model", "s3", "build", "ecr", "dlc"}
# Config fields only the resolved deployment reads (``cfg.model.<field>``, ``model_data.local_path``).
MODEL_FIELDS = {"containers", "network_isolation", "inference_mode"}


def _module_imports(path: Path) -> set[str]:
    return set(_imported(ast.parse(path.read_text(encoding="utf-8"))))


def rederivations(path: Path) -> list[str]:
    """Places in ``path`` that work out what the resolved deployment already decided."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            source = any(isinstance(s, ast.Attribute) and s.attr == "source" for s in sides)
            constants = [
                e for s in sides for e in (s.elts if isinstance(s, ast.Tuple | ast.List | ast.Set) else [s])
            ]
            values = {c.value for c in constants if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if source and values & DECIDED_VALUES:
                found.append(f"{where}: compares .source with {sorted(values & DECIDED_VALUES)}")
        elif isinstance(node, ast.Attribute):
            if node.attr == "local_path" or (
                node.attr in MODEL_FIELDS
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "model"
            ):
                found.append(f"{where}: reads the config's .{node.attr}")
            if (
                node.attr == "image"
                and isinstance(node.value, ast.Name)
                and node.value.id in {"cfg", "config"}
            ):
                found.append(f"{where}: reads the config's top-level image")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if node.func.attr == "endswith" and args in (["/"], [".tar.gz"]):
                found.append(f"{where}: decides an S3 URI's kind by its ending")
    return found


def _annotations(tree: ast.AST) -> Iterator[ast.AST]:
    """The expressions of string annotations (``x: "DeploymentConfig"``), parsed."""
    for node in ast.walk(tree):
        given = [
            *(
                [a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
                + [node.returns]
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                else []
            ),
            *([node.annotation] if isinstance(node, ast.AnnAssign) else []),
        ]
        for annotation in given:
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                yield ast.parse(annotation.value, mode="eval")


def names_of_the_raw_config(path: Path) -> list[str]:
    """Where ``path`` imports or names the raw config class (imports, names, attributes, string annotations);
    a mention in a docstring or comment is not a use."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    found = []
    for root in (tree, *_annotations(tree)):
        for node in ast.walk(root):
            where = f"{name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ImportFrom) and any(a.name == RAW_CONFIG for a in node.names):
                found.append(f"{where}: imports {RAW_CONFIG} from {node.module}")
            elif (isinstance(node, ast.Name) and node.id == RAW_CONFIG) or (
                isinstance(node, ast.Attribute) and node.attr == RAW_CONFIG
            ):
                found.append(f"{where}: names {RAW_CONFIG}")
    return found


def test_only_the_entry_points_take_the_raw_config_every_other_consumer_the_resolved_deployment() -> None:
    found = [
        line
        for folder in CONSUMERS
        for path in sorted((REPO / folder).rglob("*.py"))
        if path.relative_to(REPO).as_posix() not in CONFIG_ENTRY_POINTS
        for line in names_of_the_raw_config(path)
    ]
    assert found == [], "take smkit.config.resolved.ResolvedDeployment instead:\n" + "\n".join(found)


def test_the_entry_points_are_few_and_documented() -> None:
    assert len(CONFIG_ENTRY_POINTS) <= 4
    doc = (REPO / "docs" / "resolved-deployment.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in doc for name in CONFIG_ENTRY_POINTS), "list them in docs/resolved-deployment.md"
    assert all((REPO / name).is_file() for name in CONFIG_ENTRY_POINTS)
    # The stacks, batch transform and releases compose from the resolved deployment only.
    assert {"smkit.config"} <= graph()["smkit.cdk"] and {"smkit.config"} <= graph()["smkit.release"]


def test_the_raw_config_check_sees_every_spelling(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Takes a DeploymentConfig (a docstring is not a use)."""\n'
        "from smkit.config import DeploymentConfig\n"
        "from smkit.config import models\n"
        "def f(a: 'DeploymentConfig', b: 'list[models.DeploymentConfig]') -> None:\n"
        "    return isinstance(a, models.DeploymentConfig)\n"
    )
    assert len(names_of_the_raw_config(sample)) == 4, names_of_the_raw_config(sample)


def test_neither_re_derives_what_the_resolved_deployment_decided() -> None:
    found = [
        line
        for folder in CONTAINER_READERS
        for path in sorted((REPO / folder).rglob("*.py"))
        for line in rederivations(path)
    ]
    assert found == [], "\n".join(found)


def test_the_rederivation_check_sees_the_old_spellings(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(cfg, c, data):\n"
        "    if data.source == 'prefix' or c.model_data.source in ('multi-model',):\n"
        "        return c.image or cfg.image\n"
        "    return cfg.model.containers, data.local_path, data.uri.endswith('/')\n"
    )
    assert len(rederivations(sample)) == 6, rederivations(sample)


def _calls(path: Path, names: set[str], *, methods: bool = True) -> list[str]:
    """Calls in ``path`` of a function named in ``names`` (``f(...)``, and with ``methods`` ``x.f(...)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            name = name if methods or isinstance(node.func, ast.Name) else None
            if name in names:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    return found


def test_one_loader_and_paths_made_absolute_in_one_place() -> None:
    # Consumers load a deployment with smkit.config.load_deployment; resolve(config, base_dir) is pure
    # (nothing cached on the config), and a config's relative paths are made absolute by one function.
    product = [p for name in SOURCES for p in _files() if p.is_relative_to(REPO / name)]
    outside_config = [p for p in product if not p.is_relative_to(REPO / "smkit" / "config")]
    loaders = [c for p in outside_config for c in _calls(p, {"load_config", "deployment_of"})]
    assert loaders == [], "call smkit.config.load_deployment:\n" + "\n".join(loaders)
    paths = REPO / "smkit" / "config" / "resolved" / "paths.py"
    absolute = [c for p in product if p != paths for c in _calls(p, {"absolute"}, methods=False)]
    assert absolute == [], "make a config's paths absolute with smkit.config.resolved.paths:\n" + "\n".join(
        absolute
    )
    models = (REPO / "smkit" / "config" / "models.py").read_text(encoding="utf-8")
    assert (
        "_resolved" not in models
        and "deployment_of" not in (REPO / "smkit/config/resolved/__init__.py").read_text()
    )
