"""``main(request)`` runs in a child interpreter (:func:`smkit.packaging.probe_run.run_probe`):
standard library only.

Loads the Hugging Face pipeline the way the serving runtime's defaults do (``smkit/hftasks.py``, loaded by
path) and writes the task, the pipeline's and the model's class (or the error) and the interpreter with its
distributions (``_probe.py``'s, loaded by path), as JSON to the request's ``out`` path.
"""

import importlib.util
import sys


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(request):
    sys.path[0:0] = request.get("extra_paths", [])
    tasks = _load(request["hftasks"], "_smkit_hftasks")
    answer = {"stage": "ok", "environment": _load(request["probe"], "_smkit_probe")._environment()}
    try:
        source = tasks.model_source(request["model_dir"], request.get("model_id"))
        task = request.get("task") or tasks.infer_task(source)
        answer["task"] = task
        pipe = tasks.load_pipeline(source, task, trust_remote_code=request.get("trust_remote_code", False))
        answer["pipeline"] = type(pipe).__name__
        answer["model"] = type(pipe.model).__name__
    except Exception as exc:  # noqa: BLE001 - reported to the packager, which names the fix
        answer.update(stage="load", error_type=type(exc).__name__, error=str(exc))
    return answer
