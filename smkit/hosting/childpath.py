"""``PYTHONPATH`` for the interpreters a model's code starts, in both runtimes.

A handler (or a TensorFlow Serving pre/post-processing script) that starts a Python subprocess expects it
to import the model's ``code/`` modules as the handler itself does, as on AWS's images, where the model's
code directory is on ``PYTHONPATH``. The toolkit runtime's workers (:mod:`smkit.serving.worker.modules`)
and the TensorFlow Serving runtime (:mod:`smkit.tfs.container`) both set it with :func:`child_path`.
"""

from __future__ import annotations

import os

PYTHONPATH = "PYTHONPATH"


def child_path(roots: tuple[str, ...], previous: str | None) -> str:
    """``PYTHONPATH`` for interpreters a handler starts: ``roots`` first, then what was there before."""
    rest = [entry for entry in (previous or "").split(os.pathsep) if entry and entry not in roots]
    return os.pathsep.join([*roots, *rest])
