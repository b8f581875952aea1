"""TensorFlow's thread pools in the TF Serving form, as the SageMaker TensorFlow Serving container sizes them.

The container's start script (``docker/build_artifacts/sagemaker/serve.py`` in
aws/sagemaker-tensorflow-serving-container) sets ``OMP_NUM_THREADS=1`` when it is unset, before it starts
the Python front end and TensorFlow Serving, and passes ``SAGEMAKER_TFS_INTRA_OP_PARALLELISM`` and
``SAGEMAKER_TFS_INTER_OP_PARALLELISM`` (default 0: TensorFlow's own choice, one thread per CPU) to
``tensorflow_model_server --tensorflow_intra_op_parallelism / --tensorflow_inter_op_parallelism``. Here
TensorFlow runs in the server's own process, so the same numbers go to ``tf.config.threading`` before the
first model is loaded (TensorFlow accepts them only before its runtime starts). See
docs/tensorflow-serving.md, "Threads".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

INTRA_OP = "SAGEMAKER_TFS_INTRA_OP_PARALLELISM"
INTER_OP = "SAGEMAKER_TFS_INTER_OP_PARALLELISM"
OMP = "OMP_NUM_THREADS"


class ThreadSettingError(ValueError):
    """A thread variable holds a value TensorFlow cannot use; the message names it and the fix."""


@dataclass(frozen=True)
class TfThreads:
    """What the form gives TensorFlow: pool sizes (0: TensorFlow's default) and ``OMP_NUM_THREADS``."""

    intra_op: int
    inter_op: int
    omp: str
    omp_from_user: bool

    def describe(self) -> str:
        """The start-up log line."""

        def size(n: int, name: str) -> str:
            return f"{n} ({name})" if n else "TensorFlow's default (one per CPU)"

        omp = f"{self.omp} ({'set by you' if self.omp_from_user else 'the container default'})"
        return (
            f"TensorFlow threads: intra-op {size(self.intra_op, INTRA_OP)}, "
            f"inter-op {size(self.inter_op, INTER_OP)}; OMP_NUM_THREADS={omp}"
        )


def _pool_size(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name, "0").strip() or "0"
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ThreadSettingError(
            f"{name}={raw!r} is not a thread count; set a whole number >= 0 (0: TensorFlow's default)"
        )
    return value


def plan(environ: Mapping[str, str]) -> TfThreads:
    """The container's rule, read from ``environ``; raises :class:`ThreadSettingError` on a bad value."""
    user_omp = environ.get(OMP)
    return TfThreads(
        intra_op=_pool_size(environ, INTRA_OP),
        inter_op=_pool_size(environ, INTER_OP),
        omp=user_omp if user_omp is not None else "1",
        omp_from_user=user_omp is not None,
    )


def apply(threads: TfThreads) -> None:
    """Set ``OMP_NUM_THREADS`` in this process (when unset) and TensorFlow's pool sizes.

    Call before the handler module or TensorFlow is imported: the OpenMP runtime reads the variable once.
    """
    os.environ.setdefault(OMP, threads.omp)
    import tensorflow as tf

    if threads.intra_op:
        tf.config.threading.set_intra_op_parallelism_threads(threads.intra_op)
    if threads.inter_op:
        tf.config.threading.set_inter_op_parallelism_threads(threads.inter_op)
