"""The hosting environment a model server runs in, shared by both runtimes below either of them.

The serving environment read once into a typed object (:mod:`~smkit.hosting.env`) and a model's
``code/requirements.txt`` (:mod:`~smkit.hosting.requirements`). The toolkit runtime (:mod:`smkit.serving`)
and the TensorFlow Serving runtime (:mod:`smkit.tfs`) both import it; it imports neither.
"""
