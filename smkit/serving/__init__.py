"""The Java-free SageMaker serving runtime.

Layers, one way: :mod:`~smkit.serving.app` (HTTP adapter, ASGI) -> :mod:`~smkit.serving.handler` (hook
lifecycle, error -> status) -> :mod:`~smkit.serving.defaults` (default hooks) -> :mod:`~smkit.serving.codecs`
(content-type tables). :mod:`~smkit.serving.env` reads the environment once; :mod:`~smkit.serving.server`
runs the app under gunicorn; :mod:`~smkit.serving.launch` resolves what to serve. Start it with
``python -m smkit.serving --model build/model.tar.gz`` or ``smkit serve``.
"""
