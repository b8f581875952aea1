"""``main(request)`` runs in a child interpreter (:func:`smkit.packaging.probe_run.run_probe`):
standard library only.

Imports the handler module the way a SageMaker framework image does (``code/`` first on ``sys.path``,
docs/handler-semantics.md), describes every hook's parameters, reports the installed versions of the packages
named in ``requirements.txt`` and every distribution of the interpreter that ran the check (recorded in
the archive's manifest) and, if asked, calls ``model_fn(model_dir)`` once. It also names every module that
importing and loading brought in from source files (``smkit package`` ships their bytecode with vendored
wheels: smkit/packaging/bytecode.py). The answer is written
as JSON to the path given in the request, so anything the user code prints cannot corrupt it.
"""

import importlib.metadata
import importlib.util
import os
import platform
import sys
import traceback


def _where(exc, code_dir):
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename} line {exc.lineno}"
    inside = [f for f in frames if os.path.abspath(f.filename).startswith(code_dir + os.sep)]
    if inside:
        last = inside[-1]
        return f"{os.path.relpath(last.filename, code_dir)} line {last.lineno}"
    return None


def _load_hook_rules(path):
    """``smkit/hooks.py`` by path: the one call rule, usable here without smkit installed."""
    spec = importlib.util.spec_from_file_location("_smkit_hook_rules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _describe(obj, rules):
    if not callable(obj):
        return {"callable": False, "params": None}
    return {"callable": True, "params": rules.describe(obj)}


def _error(stage, exc, code_dir):
    return {
        "stage": stage,
        "error_type": type(exc).__name__,
        "error": str(exc),
        "missing_module": getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None,
        "location": _where(exc, code_dir),
    }


def _installed(names):
    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def _environment():
    """The interpreter and every distribution it imports from, first on sys.path winning (what ran the check)."""
    packages = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        key = name.lower().replace("_", "-").replace(".", "-")
        if name and key not in packages:
            packages[key] = dist.version
    return {"python": platform.python_version(), "packages": dict(sorted(packages.items()))}


def _source_modules():
    """Names of the loaded modules that came from ``.py`` files (not built-in, frozen or extension)."""
    files = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
    return sorted(name for name, file in files.items() if isinstance(file, str) and file.endswith(".py"))


def main(request):
    """The check's answer, with the modules importing and loading brought in from source files."""
    return {**_check(request), "modules": _source_modules()}


def _check(request):
    code_dir = os.path.abspath(request["code_dir"])
    model_dir = os.path.abspath(request["model_dir"])
    # code/ first, then the model's installed requirements (the serving runtime's order).
    sys.path[0:0] = [code_dir, *request.get("extra_paths", [])]
    result = {
        "stage": "ok",
        "installed": _installed(request["requirement_names"]),
        "environment": _environment(),
        "hooks": {},
    }
    os.environ.setdefault("SM_MODEL_DIR", model_dir)
    try:
        path = os.path.join(code_dir, request["entry_point"])
        module_name = os.path.splitext(request["entry_point"])[0]
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - every failure of user code is reported, not raised
        result.update(_error("import", exc, code_dir))
        return result
    rules = _load_hook_rules(request["hook_rules"])
    for name in rules.ALL_HOOKS:
        if hasattr(module, name):
            result["hooks"][name] = _describe(getattr(module, name), rules)
    # Documentation attributes count only as non-empty strings.
    result["attributes"] = {
        name: value if isinstance(value := getattr(module, name, None), str) and value.strip() else None
        for name in request["attributes"]
    }
    model_fn = getattr(module, "model_fn", None)
    tf_serving = any(hasattr(module, h) for h in rules.TFS_HOOKS)
    if request["load_model"] and callable(model_fn) and not tf_serving:
        try:
            args = (
                [model_dir, None]
                if rules.passes_context("model_fn", rules.describe(model_fn))
                else [model_dir]
            )
        except rules.HookSignatureError:
            return result  # the parent reports the signature
        try:
            model = model_fn(*args)
            result["model_type"] = f"{type(model).__module__}.{type(model).__qualname__}"
        except BaseException as exc:  # noqa: BLE001
            result.update(_error("load", exc, code_dir))
    return result
