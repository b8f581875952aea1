"""``main(request)`` runs in a child interpreter (:func:`smkit.packaging.probe_run.run_probe`): it loads
SavedModels with TensorFlow.

For every ``{"label", "path"}`` in the request: read the signatures from ``saved_model.pb`` (method, inputs
and outputs with dtype and shape) and load the version with ``tf.saved_model.load`` as the serving side
does. The answer, written as JSON to the request's ``out`` path, says ``"tensorflow": null`` when
TensorFlow is not installed in this interpreter.
"""

import os
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _tensor(info, types_pb2):
    dims = info.tensor_shape.dim
    shape = "?" if info.tensor_shape.unknown_rank else "[" + ",".join(str(d.size) for d in dims) + "]"
    return types_pb2.DataType.Name(info.dtype).removeprefix("DT_").lower() + shape


def _describe(path, types_pb2, saved_model_pb2):
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    graph = next((g for g in proto.meta_graphs if "serve" in g.meta_info_def.tags), None)
    if graph is None:
        return None, [list(g.meta_info_def.tags) for g in proto.meta_graphs]
    signatures = {}
    for name, sig in sorted(graph.signature_def.items()):
        if name.startswith("__"):
            continue
        signatures[name] = {
            "method": sig.method_name,
            "inputs": {k: _tensor(v, types_pb2) for k, v in sorted(sig.inputs.items())},
            "outputs": {k: _tensor(v, types_pb2) for k, v in sorted(sig.outputs.items())},
        }
    return signatures, None


def main(request):
    try:
        import tensorflow as tf
        from tensorflow.core.framework import types_pb2
        from tensorflow.core.protobuf import saved_model_pb2
    except ImportError as exc:
        return {"tensorflow": None, "error": str(exc), "models": []}
    models = []
    for item in request["models"]:
        entry = {"label": item["label"]}
        try:
            signatures, tags = _describe(item["path"], types_pb2, saved_model_pb2)
            if signatures is None:
                entry["error"] = f"no MetaGraph tagged 'serve' (tags found: {tags})"
            else:
                tf.saved_model.load(item["path"], tags=["serve"])
                entry["signatures"] = signatures
        except Exception as exc:  # noqa: BLE001 - every failure is reported, not raised
            lines = traceback.format_exception_only(type(exc), exc)
            entry["error"] = lines[-1].strip()[:2000]
        models.append(entry)
    return {"tensorflow": tf.__version__, "models": models}
