"""Check a vLLM model folder's custom handler file (``model.py``) before it ships, as ``inference.py`` is.

AWS's vLLM image loads ``$SAGEMAKER_MODEL_PATH/$CUSTOM_SCRIPT_FILENAME`` (default ``/opt/ml/model/model.py``)
when its server starts (https://aws.github.io/deep-learning-containers/vllm/changelog/; docs/llm.md):
a typo there is a failed start of a GPU endpoint. :func:`check_handler_file` finds it first, in the engine
environment plus the folder's ``requirements.txt`` (smkit.llm.layer): every ``.py`` file compiles; the
file imports; vLLM's own server code and model-hosting-container-standards' own resolver decide which
function serves ``GET /ping`` and ``POST /invocations`` and by which of the three methods
(``CUSTOM_FASTAPI_PING_HANDLER`` / ``CUSTOM_FASTAPI_INVOCATION_HANDLER``, the ``custom_ping_handler`` /
``custom_invocation_handler`` decorators, the ``custom_sagemaker_ping_handler`` /
``custom_sagemaker_invocation_handler`` names), and which pre/post-processing runs; and every one of those
functions can be called as the server calls it. An import error, a handler FastAPI cannot serve, a
formatter that is not ``async`` or takes the wrong arguments, and a ``CUSTOM_*`` variable naming nothing
(the package logs that and starts without it) are refused, naming the file and line. The probe
(``_handler_probe.py``) runs in a child ``python -I -B`` of the engine environment, never in smkit's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smkit.config.resolved import ResolvedContainer, ResolvedDeployment
from smkit.llm.engine import DEFAULT_SCRIPT, SCRIPT_VAR, local_engine
from smkit.packaging.errors import PackagingError
from smkit.packaging.handler_check import DEFAULT_TIMEOUT_S, compile_all
from smkit.packaging.probe_run import run_probe

PROBE_SOURCE = Path(__file__).with_name("_handler_probe.py").read_text(encoding="utf-8")
ROUTES = {"ping": "GET /ping", "invoke": "POST /invocations"}
HANDLER_VARS = {"ping": "CUSTOM_FASTAPI_PING_HANDLER", "invoke": "CUSTOM_FASTAPI_INVOCATION_HANDLER"}
DECORATORS = {"ping": "@custom_ping_handler", "invoke": "@custom_invocation_handler"}
NAMES = {"ping": "custom_sagemaker_ping_handler", "invoke": "custom_sagemaker_invocation_handler"}
MIDDLEWARE = {
    "throttle": ("CUSTOM_FASTAPI_MIDDLEWARE_THROTTLE", '@custom_middleware("throttle")'),
    "pre_post_process": (
        "CUSTOM_FASTAPI_MIDDLEWARE_PRE_POST_PROCESS",
        '@custom_middleware("pre_post_process")',
    ),
    "pre_process": ("CUSTOM_PRE_PROCESS", "@input_formatter"),
    "post_process": ("CUSTOM_POST_PROCESS", "@output_formatter"),
}
# Variables that name handlers or middleware: with any of them the check runs even without model.py.
CUSTOM_VARS = (*HANDLER_VARS.values(), *(variable for variable, _ in MIDDLEWARE.values()))


@dataclass(frozen=True)
class HandlerFileReport:
    """What serves each route and what runs around it, as the image's server will decide.

    Attributes:
        script: the handler file (``model.py``), which may be absent when only variables name handlers.
        lines: the report, one line per route and middleware, then what was overridden.
        versions: vLLM's and model-hosting-container-standards' versions the check ran with.
        layers: the folders of what ``requirements.txt`` added to the engine environment.
    """

    script: Path
    lines: tuple[str, ...]
    versions: Mapping[str, str] = field(default_factory=dict)
    layers: tuple[str, ...] = ()

    def summary(self) -> str:
        """The report ``smkit package`` prints."""
        versions = ", ".join(f"{name} {version}" for name, version in self.versions.items())
        head = f"{self.script}: checked with vLLM's server code ({versions})"
        if self.layers:
            head += " and the model's requirements.txt layered over it"
        return "\n".join([head, *(f"  {line}" for line in self.lines)])


def needs_check(model_dir: Path, environment: Mapping[str, str]) -> bool:
    """The folder holds the handler file, or the container's environment names a custom handler."""
    script = model_dir / environment.get(SCRIPT_VAR, DEFAULT_SCRIPT)
    return script.is_file() or any(environment.get(v) for v in CUSTOM_VARS)


def handler_folders(deployment: ResolvedDeployment) -> list[ResolvedContainer]:
    """The containers of ``deployment`` on AWS's vLLM image whose model folder is local and has handlers to
    check (``model_data.path`` a folder holding ``model.py``, or ``CUSTOM_*`` variables)."""
    found = []
    for container in deployment.containers:
        folder = container.model_data.path
        if local_engine(container) is None or folder is None or not folder.is_dir():
            continue
        if needs_check(folder, container.environment):
            found.append(container)
    return found


def _name(described: Mapping[str, Any] | None, model_dir: Path) -> str:
    if not described:
        return "nothing"
    if described.get("router_path"):
        return f"the router path {described['name']}"
    if described.get("user"):
        return f"{described['name']} ({model_dir / described['file']} line {described['line']})"
    return f"the engine's {described['name'].rsplit('.', 1)[-1]} ({described.get('file') or 'built in'})"


def _same(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    if not a or not b:
        return False
    return all(a.get(k) == b.get(k) for k in ("name", "file", "line"))


def _method(handler_type: str, method: str) -> str:
    return {
        "env": HANDLER_VARS[handler_type],
        "decorator": DECORATORS[handler_type],
        "name": f"its name {NAMES[handler_type]}",
    }[method]


def _route_lines(routes: Mapping[str, Any], model_dir: Path) -> list[str]:
    lines: list[str] = []
    for handler_type, route in routes.items():
        served = route["served"]
        candidates: Mapping[str, Any] = route["candidates"]
        winner = next((m for m in ("env", "decorator", "name") if _same(candidates.get(m), served)), None)
        if winner is None:
            lines.append(f"{ROUTES[handler_type]}: vLLM's own handler (no custom handler)")
        else:
            lines.append(
                f"{ROUTES[handler_type]}: {_name(served, model_dir)}, chosen by {_method(handler_type, winner)}; "
                "overrides vLLM's own handler"
            )
        for method in ("env", "decorator", "name"):
            loser = candidates.get(method)
            if loser and method != winner and not _same(loser, served):
                lines.append(
                    f"  not used: {_name(loser, model_dir)}, by {_method(handler_type, method)}: "
                    f"{_method(handler_type, winner) if winner else 'another handler'} comes first"
                )
    return lines


def _middleware_lines(middleware: Mapping[str, Mapping[str, Any]], model_dir: Path) -> list[str]:
    env, dec = middleware.get("env", {}), middleware.get("decorator", {})
    lines: list[str] = []
    for name, (variable, decorator) in MIDDLEWARE.items():
        group = "throttle" if name == "throttle" else "pre_post_process"
        # model-hosting-container-standards: for each group, the environment's middleware wins whole.
        env_group = any(k in env for k in MIDDLEWARE if (k == "throttle") == (group == "throttle"))
        what = name.replace("_", "-")
        if name in env:
            lines.append(f"{what}: {_name(env[name], model_dir)}, named by {variable}")
        if name in dec:
            if env_group:
                lines.append(
                    f"{what}: not used: {_name(dec[name], model_dir)} ({decorator}): the CUSTOM_* variables of "
                    "its middleware come first, and replace every decorator of it"
                )
            elif name in ("pre_process", "post_process") and "pre_post_process" in dec:
                lines.append(
                    f"{what}: not used: {_name(dec[name], model_dir)} ({decorator}): "
                    '@custom_middleware("pre_post_process") comes first'
                )
            else:
                lines.append(f"{what}: {_name(dec[name], model_dir)}, by {decorator}")
    return lines or ["pre/post-processing: none"]


def _refusal(answer: Mapping[str, Any], script: Path, model_dir: Path, requirements: Path) -> PackagingError:
    location = answer.get("location")
    subject = str(model_dir / location) if location else str(script)
    error = f"{answer['error_type']}: {answer['error']}"
    stage = answer["stage"]
    if stage == "engine":
        return PackagingError(
            "the engine environment",
            f"vLLM's server code did not load: {error}",
            "build it again: smkit cache prune",
        )
    if stage == "variable":
        variable = answer["variable"]
        return PackagingError(
            subject if location else f"environment {variable}",
            f"{variable} names a function the server cannot load ({error}); "
            + (
                "vLLM's server would fail to start"
                if variable in HANDLER_VARS.values()
                else "the server would log it and start without that middleware"
            ),
            f"name a function of the model folder as FILE.py:FUNCTION (e.g. {DEFAULT_SCRIPT}:handler), or remove "
            "the variable",
        )
    missing = answer.get("missing_module")
    if missing:
        fix = (
            f"add the package that provides {missing!r} to {requirements} (AWS's vLLM image installs it before "
            "it starts), or import only what the engine has"
        )
    else:
        fix = f"fix the error; the image's server imports {script.name} the same way when it starts"
    what = "import failed" if stage == "import" else "the server's start-up failed"
    return PackagingError(subject, f"{what}: {error}", fix)


def check_handler_file(
    model_dir: str | Path,
    environment: Mapping[str, str],
    *,
    python: str,
    extra_paths: tuple[str, ...] = (),
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> HandlerFileReport:
    """Check the custom handler file of the vLLM model folder ``model_dir`` with the container's
    ``environment`` (its ``CUSTOM_*`` variables) in the engine interpreter ``python`` with ``extra_paths``
    (the requirements layer); raises :class:`PackagingError` naming the file and line."""
    model_dir = Path(model_dir).resolve()
    script = model_dir / environment.get(SCRIPT_VAR, DEFAULT_SCRIPT)
    requirements = model_dir / "requirements.txt"
    compile_all(model_dir)
    custom = {k: v for k, v in environment.items() if k.startswith(("CUSTOM_", "SAGEMAKER_"))}
    custom.pop("SAGEMAKER_MODEL_PATH", None)
    answer = run_probe(
        PROBE_SOURCE,
        {"model_dir": str(model_dir), "environment": custom, "extra_paths": list(extra_paths)},
        python=python,
        cpu_s=timeout_s,
        label=str(script),
        doing=f"loading vLLM's server code and {script.name}",
        exit_fix="make sure the module does not call sys.exit() or os._exit() when it is imported",
        cwd=str(model_dir),
    )
    if answer["stage"] != "ok":
        raise _refusal(answer, script, model_dir, requirements)
    problems = answer.get("problems", [])
    if problems:
        first = problems[0]
        handler = first["handler"] or {}
        where = (
            f"{model_dir / handler['file']} line {handler['line']}" if handler.get("user") else str(script)
        )
        others = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PackagingError(
            f"{where}: {handler.get('name', '?')}",
            f"{first['problem']}{others}",
            "give it the signature model-hosting-container-standards documents (docs/llm.md, Custom handlers)",
        )
    lines = _route_lines(answer["routes"], model_dir) + _middleware_lines(answer["middleware"], model_dir)
    if not script.is_file():
        lines.append(f"no {script.name} in the model folder: only the CUSTOM_* variables name handlers")
    return HandlerFileReport(
        script=script, lines=tuple(lines), versions=answer.get("versions", {}), layers=tuple(extra_paths)
    )
