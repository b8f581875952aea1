"""Check a handler before it is packaged: compile, import in a child interpreter, hooks, arity, loading.

The import runs in a separate ``python -I -B`` process (isolated from this one's modules and
environment tweaks, never writing ``__pycache__`` into the code folder) with ``code/`` first on
``sys.path`` as on a SageMaker framework image (docs/handler-semantics.md).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from smkit import hooks as hook_rules
from smkit.contract import DEFAULT_PROGRAM
from smkit.packaging.default_hooks import framework_warnings, torchscript_file
from smkit.packaging.errors import PackagingError
from smkit.packaging.hfcheck import PipelineReport, check_pipeline
from smkit.packaging.hooks import NO_MODEL_FN_ATTRIBUTE, check_arity, detect_form
from smkit.packaging.probe_run import CHECK_LIMIT_FIX, run_probe
from smkit.packaging.requirements import Unsatisfied, parse_requirements, unsatisfied
from smkit.packaging.savedmodel import SavedModelReport, check_saved_models
from smkit.packaging.tree import SKIPPED_DIRS

if TYPE_CHECKING:
    from packaging.requirements import Requirement

DEFAULT_ENTRY_POINT = DEFAULT_PROGRAM  # SAGEMAKER_PROGRAM default (docs/handler-semantics.md)
# Seconds of the check process's CPU time (not wall time: a busy machine must not fail a correct model);
# smkit.bounded.run_bounded also stops a check that uses no CPU for as long (smkit package --check-timeout).
DEFAULT_TIMEOUT_S = 120.0
PROBE_SOURCE = (Path(__file__).with_name("_probe.py")).read_text(encoding="utf-8")


@dataclass(frozen=True)
class HandlerReport:
    """What the check found: the handler form, its hooks, requirements and what is not installed here."""

    form: str
    hooks: tuple[str, ...]
    requirements: tuple[str, ...]
    unsatisfied: tuple[Unsatisfied, ...] = ()
    model_type: str | None = None
    no_model_fn_reason: str | None = None
    warnings: tuple[str, ...] = field(default=())
    saved_models: tuple[SavedModelReport, ...] = ()
    # The interpreter the check ran in: {"python": "3.11.14", "packages": {name: version}} (the model's
    # environment when smkit.modelenv built one), so the archive says what it was checked against.
    environment: dict[str, Any] | None = None
    # Modules that importing and loading the handler brought in from .py files (smkit/packaging/bytecode.py).
    modules: tuple[str, ...] = ()

    def for_manifest(self) -> dict[str, Any]:
        """The machine-independent part, recorded in ``smkit-manifest.json`` (TF Serving signatures too)."""
        recorded: dict[str, Any] = {
            "form": self.form,
            "hooks": list(self.hooks),
            "requirements": list(self.requirements),
        }
        if self.environment:
            recorded["checked_with"] = self.environment
        if self.saved_models:
            recorded["saved_models"] = {s.label: s.signatures for s in self.saved_models}
        return recorded


def compile_all(code_dir: Path) -> None:
    """Refuse the first .py file under ``code_dir`` that does not compile, naming its line."""
    for path in sorted(code_dir.rglob("*.py")):
        if SKIPPED_DIRS.intersection(path.relative_to(code_dir).parts):
            continue
        try:
            source = path.read_bytes()
            ast.parse(source, filename=str(path))
        except SyntaxError as exc:
            text = (exc.text or "").strip()
            raise PackagingError(
                f"{path} line {exc.lineno}",
                f"{exc.msg} ({text!r})" if text else str(exc.msg),
                "fix the syntax error (python -m py_compile shows it too)",
            ) from exc
        except ValueError as exc:
            raise PackagingError(str(path), f"cannot be compiled ({exc})", "save it as UTF-8 text") from exc


def _run_probe(request: dict[str, Any], python: str, timeout_s: float, label: str) -> dict[str, Any]:
    return run_probe(
        PROBE_SOURCE,
        request,
        python=python,
        cpu_s=timeout_s,
        label=label,
        doing="importing and loading",
        limit_fix=f"move slow work out of module level, or {CHECK_LIMIT_FIX}",
        exit_fix="make sure the module does not call sys.exit() or os._exit() at import or in model_fn",
        cwd=request["model_dir"],
    )


def _import_fix(
    answer: dict[str, Any], missing: list[Unsatisfied], requirements_label: str, module: str
) -> str:
    if missing:
        listed = ", ".join(str(m) for m in missing)
        return (
            f"{requirements_label} is not satisfied in the checking interpreter ({listed}); let smkit build "
            "the model's environment, or install them into the checking interpreter"
        )
    absent = answer.get("missing_module")
    if absent:
        return (
            f"add the package that provides {absent!r} to {requirements_label} and install it, "
            "or ship the module in the code folder"
        )
    return f"fix the error and run the import locally: python -c 'import {module}' from the code folder"


def check_handler(
    code_dir: str | Path,
    artifacts_dir: str | Path,
    *,
    entry_point: str = DEFAULT_ENTRY_POINT,
    load_model: bool = True,
    python: str = sys.executable,
    extra_paths: tuple[str, ...] = (),
    framework: str | None = None,
    container_env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> HandlerReport:
    """Validate ``code_dir/entry_point`` against the model in ``artifacts_dir``; raise :class:`PackagingError`.

    Checks, in order: the entry point and ``requirements.txt`` exist; every ``.py`` file compiles;
    ``requirements.txt`` holds valid PEP 508 lines; the module imports in a child ``python``; its hooks
    form a usable toolkit or TF-Serving handler with the right arities; for the TF-Serving form the
    artifacts hold ``<name>/<version>/saved_model.pb`` and, with ``load_model``, every version loads with
    TensorFlow and has signatures; for the toolkit form, with ``load_model``, ``model_fn(artifacts_dir)``
    returns without raising. ``python`` and ``extra_paths`` are the model's environment (its interpreter
    and installed requirements); ``framework`` is the image's default handlers (``pytorch``...,
    ``huggingface`` also for the kit's image with ``HF_TASK``), which stand in for missing hooks;
    ``container_env`` is the container's environment (``HF_TASK`` and the other Hugging Face settings).
    """
    code_dir, artifacts_dir = Path(code_dir), Path(artifacts_dir)
    file = code_dir / entry_point
    # The Hugging Face image's pipeline (HF_TASK): what serves a model without model_fn.
    pipeline = functools.partial(
        check_pipeline,
        artifacts_dir,
        container_env or {},
        load_model=load_model,
        python=python,
        extra_paths=extra_paths,
        timeout_s=timeout_s,
    )
    if not file.is_file():
        return _without_handler_file(code_dir, artifacts_dir, entry_point, framework, pipeline)
    requirements_path = code_dir / "requirements.txt"
    requirements = parse_requirements(requirements_path, label=str(requirements_path))
    compile_all(code_dir)
    answer, missing = _import_handler(
        code_dir,
        artifacts_dir,
        entry_point,
        requirements,
        load_model=load_model,
        python=python,
        extra_paths=extra_paths,
        timeout_s=timeout_s,
    )
    hooks: dict[str, dict[str, Any]] = answer["hooks"]
    reason = answer.get("attributes", {}).get(NO_MODEL_FN_ATTRIBUTE)
    form = detect_form(str(file), hooks, reason, framework=framework)
    for name, info in sorted(hooks.items()):
        check_arity(str(file), name, info["params"])
    saved, notes = _check_model_loads(
        form, answer, file, artifacts_dir, load_model=load_model, python=python, timeout_s=timeout_s
    )
    warnings = [f"not installed here (installed at container start): {m}" for m in missing]
    warnings.extend(notes)
    warnings += framework_warnings(hooks, answer.get("model_type"), artifacts_dir, framework)
    if framework == "huggingface" and "model_fn" not in hooks and "transform_fn" not in hooks:
        warnings.append(f"no model_fn: {pipeline().describe()}")
    return HandlerReport(
        form=form,
        hooks=tuple(sorted(hooks)),
        requirements=tuple(str(r) for r in requirements),
        unsatisfied=tuple(missing),
        model_type=answer.get("model_type"),
        no_model_fn_reason=reason,
        warnings=tuple(warnings),
        saved_models=saved,
        environment=answer.get("environment"),
        modules=tuple(answer.get("modules", ())),
    )


def _import_handler(
    code_dir: Path,
    artifacts_dir: Path,
    entry_point: str,
    requirements: list[Requirement],
    *,
    load_model: bool,
    python: str,
    extra_paths: tuple[str, ...],
    timeout_s: float,
) -> tuple[dict[str, Any], list[Unsatisfied]]:
    """The probe's answer (the handler imported in ``python``, its hooks, ``model_fn`` called when
    ``load_model``) and the requirements it found unsatisfied; an import that fails is refused."""
    file = code_dir / entry_point
    requirements_path = code_dir / "requirements.txt"
    request = {
        "code_dir": str(code_dir.resolve()),
        "model_dir": str(artifacts_dir.resolve()),
        "entry_point": entry_point,
        "hook_rules": hook_rules.__file__,
        "attributes": [NO_MODEL_FN_ATTRIBUTE],
        "requirement_names": sorted({r.name for r in requirements}),
        "load_model": load_model,
        "extra_paths": list(extra_paths),
    }
    answer = _run_probe(request, python, timeout_s, str(file))
    missing = unsatisfied(requirements, answer.get("installed", {}))
    if answer["stage"] == "import":
        location = answer.get("location")
        raise PackagingError(
            f"{code_dir}/{location}" if location else str(file),
            f"import failed: {answer['error_type']}: {answer['error']}",
            _import_fix(answer, missing, str(requirements_path), Path(entry_point).stem),
        )
    return answer, missing


def _check_model_loads(
    form: str,
    answer: dict[str, Any],
    file: Path,
    artifacts_dir: Path,
    *,
    load_model: bool,
    python: str,
    timeout_s: float,
) -> tuple[tuple[SavedModelReport, ...], tuple[str, ...]]:
    """The model loads as its form loads it: every SavedModel version with TensorFlow (their reports and
    notes), or ``model_fn`` in the probe (its failure, if any, refused)."""
    saved: tuple[SavedModelReport, ...] = ()
    notes: tuple[str, ...] = ()
    if form == "tf-serving":
        check_saved_model_layout(artifacts_dir)
        if load_model:
            saved, notes = check_saved_models(artifacts_dir, python=python, timeout_s=timeout_s)
    if answer["stage"] == "load":
        where = f" at {answer['location']}" if answer.get("location") else ""
        raise PackagingError(
            f"{file}: model_fn",
            f"model_fn({str(artifacts_dir)!r}) raised {answer['error_type']}: {answer['error']}{where}",
            "make the artifacts folder hold the files model_fn loads (or skip the load check)",
        )
    return saved, notes


def _without_handler_file(
    code_dir: Path,
    artifacts_dir: Path,
    entry_point: str,
    framework: str | None,
    pipeline: Callable[[], PipelineReport],
) -> HandlerReport:
    """No handler file: the image's default handlers serve the model where they can, else a refusal."""
    if framework == "pytorch" and torchscript_file(artifacts_dir) is not None:
        return _pytorch_defaults_only(code_dir, artifacts_dir, entry_point)
    if framework == "huggingface":
        checked = pipeline()
        report = _defaults_only(code_dir, f"no {entry_point}: {checked.describe()}")
        return dataclasses.replace(report, environment=checked.environment)
    raise PackagingError(
        str(code_dir / entry_point),
        "missing",
        f"add {entry_point} defining model_fn and input_fn/predict_fn/output_fn (or transform_fn)",
    )


def _pytorch_defaults_only(code_dir: Path, artifacts_dir: Path, entry_point: str) -> HandlerReport:
    """No handler file: AWS's PyTorch image serves a TorchScript file with its default handlers alone."""
    model = torchscript_file(artifacts_dir)
    return _defaults_only(
        code_dir,
        f"no {entry_point}: the PyTorch image's default handlers load {model.name if model else 'model.pt'} "
        "with torch.jit.load and call it (the kit's own image needs an inference.py)",
    )


def _defaults_only(code_dir: Path, note: str) -> HandlerReport:
    """No handler file: the image's default handlers serve the model alone."""
    requirements_path = code_dir / "requirements.txt"
    requirements = parse_requirements(requirements_path, label=str(requirements_path))
    compile_all(code_dir)
    return HandlerReport(
        form="toolkit", hooks=(), requirements=tuple(str(r) for r in requirements), warnings=(note,)
    )


def check_saved_model_layout(artifacts_dir: Path) -> None:
    """TF Serving loads ``<model>/<version>/saved_model.pb`` with a numeric version directory."""
    found = sorted(
        PurePosixPath(os.path.relpath(p, artifacts_dir)).as_posix()
        for p in artifacts_dir.rglob("saved_model.pb")
    )
    found = [f for f in found if not f.startswith("code/")]
    if not found:
        raise PackagingError(
            f"artifacts folder {artifacts_dir}",
            "no TensorFlow SavedModel (saved_model.pb) found, but inference.py uses the TF-Serving hooks",
            "export the model as <name>/<version>/saved_model.pb, e.g. my_model/1/saved_model.pb",
        )
    for rel in found:
        version = PurePosixPath(rel).parent.name
        if not version.isdigit():
            raise PackagingError(
                f"artifacts folder {artifacts_dir / rel}",
                f"the SavedModel sits in {version or '.'!r}, not in a numeric version directory",
                f"move it into a version folder, e.g. {PurePosixPath(rel).parent / '1' / 'saved_model.pb'}",
            )
