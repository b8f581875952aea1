"""The Java-free SageMaker serving runtime.

Processes: :mod:`~smkit.serving.server` runs the front end (:mod:`~smkit.serving.frontend`, HTTP on
:mod:`smkit.http1`, ``/ping``) and a pool of model workers (:mod:`~smkit.serving.pool`), each a fresh
``python -m smkit.serving.model_worker`` talking :mod:`~smkit.serving.ipc` frames. In a worker, layers
go one way: :mod:`~smkit.serving.routes` -> :mod:`~smkit.serving.handler` (hook lifecycle, error ->
status) -> :mod:`~smkit.serving.defaults` (default hooks) -> :mod:`~smkit.serving.codecs` (content-type
tables). :mod:`~smkit.serving.env` reads the environment once; :mod:`~smkit.serving.launch` resolves what
to serve. Start it with ``python -m smkit.serving --model build/model.tar.gz`` or ``smkit serve``.
See docs/serving-runtime.md.
"""
