"""The one place that chooses the runtime a model is served by: the toolkit runtime or the TF Serving form.

``python -m smkit.serving``, the image's ``serve`` (:mod:`smkit.serving.entrypoint`) and ``smkit serve``
all come here. The TensorFlow Serving form (:mod:`smkit.tfs`, docs/tensorflow-serving.md) serves a
SavedModel with ``handler``/``input_handler``/``output_handler`` or no ``inference.py``; everything else,
and every multi-model or constant server, is the toolkit runtime (:mod:`smkit.serving.front`). Neither
runtime imports the other; both read :mod:`smkit.hosting`.
"""

from __future__ import annotations

import os

from smkit.serving.front.launch import LaunchRequest


def uses_tfs(request: LaunchRequest, mode: str) -> bool:
    """True when ``request`` is served by the TF Serving form (``mode``: auto, toolkit or tfs)."""
    if request.multi_model is not None or request.constant:
        return False
    from smkit.tfs.select import use_tfs

    return use_tfs(mode, request.model, os.environ)


def serve(request: LaunchRequest, *, mode: str = "auto") -> int:
    """Serve ``request`` with the runtime :func:`uses_tfs` chooses until stopped; the exit status."""
    if uses_tfs(request, mode):
        from smkit.tfs.container import serve as serve_tfs
        from smkit.tfs.select import model_source

        return serve_tfs(model_source(request.model, os.environ), host=request.host, port=request.port)
    from smkit.serving.front.launch import serve as serve_toolkit

    return serve_toolkit(request)
