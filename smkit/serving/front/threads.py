"""Native thread pools per model worker: one thread per pool unless the user chose.

Every model worker is a process of its own, and every numerical library in it starts a thread pool as
large as the machine by default: OpenBLAS (NumPy, SciPy), MKL, OpenMP (LightGBM, XGBoost, PyTorch,
scikit-learn's compiled estimators), joblib's ``n_jobs=-1``, TensorFlow. N workers then run N x CPUs
threads on CPUs cores, which spin and preempt each other. Multi Model Server sets ``OMP_NUM_THREADS=1``
in its workers when the user did not (mms/model_service_worker.py); this runtime gives every worker one
thread per pool too (:data:`DEFAULT_THREADS`). The variables are set in the worker's environment
when the process is started, before Python (let alone the handler module) imports anything.

The user's values win: a variable of :data:`THREAD_VARIABLES` already set is passed on untouched, and
a valid ``OMP_NUM_THREADS`` of the user's (the variable every one of these libraries falls back to)
becomes the count for the ones left unset. docs/serving-runtime.md ("Threads and CPUs").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

OMP_NUM_THREADS = "OMP_NUM_THREADS"
# Variable -> who reads it. ONNX Runtime reads none (its pools are sized by SessionOptions, see
# docs/serving-runtime.md); PyTorch's intra-op pool follows OMP_NUM_THREADS / MKL_NUM_THREADS.
THREAD_VARIABLES: dict[str, str] = {
    OMP_NUM_THREADS: "OpenMP: LightGBM, XGBoost, PyTorch intra-op, scikit-learn; OpenBLAS and MKL fall back to it",
    "OPENBLAS_NUM_THREADS": "OpenBLAS (NumPy and SciPy wheels)",
    "MKL_NUM_THREADS": "Intel MKL (conda NumPy, PyTorch on x86)",
    "BLIS_NUM_THREADS": "BLIS (AMD-optimised NumPy builds)",
    "NUMEXPR_NUM_THREADS": "numexpr (pandas.eval)",
    "LOKY_MAX_CPU_COUNT": "joblib / loky: what n_jobs=-1 means (scikit-learn)",
    "TF_NUM_INTRAOP_THREADS": "TensorFlow's intra-op pool",
}


# One thread per pool in every worker unless the user chose, as Multi Model Server does. With one worker per
# CPU (the default count) this is each worker's share of the CPUs; with fewer workers than CPUs the share
# served heavy numerical requests faster and tiny ones slower, one thread always at the least CPU per
# request (docs/serving-runtime.md, "Threads and CPUs").
DEFAULT_THREADS = 1


@dataclass(frozen=True)
class ThreadPlan:
    """The threads each worker gets and why.

    Attributes:
        threads: threads per pool in each worker, for every variable the user left unset.
        source: why (the default, or the user's ``OMP_NUM_THREADS``).
        added: the variables set for the workers (the user's own are not among them).
        oversubscribed: workers x threads is more than the CPUs (only possible with the user's values).
    """

    threads: int
    source: str
    added: Mapping[str, str]
    oversubscribed: bool


def _user_threads(environ: Mapping[str, str]) -> int | None:
    # OpenMP allows a list per nesting level ("4,2"); the first level is the pool a library starts.
    first = environ.get(OMP_NUM_THREADS, "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else None


def plan_threads(cpus: int, workers: int, environ: Mapping[str, str]) -> ThreadPlan:
    """The thread variables to add to a model worker's ``environ``, for ``workers`` workers on ``cpus`` CPUs."""
    user = _user_threads(environ)
    threads = user if user is not None else DEFAULT_THREADS
    source = f"{OMP_NUM_THREADS}={user} (yours)" if user is not None else "1 per worker by default"
    added = {name: str(threads) for name in THREAD_VARIABLES if name not in environ}
    return ThreadPlan(threads=threads, source=source, added=added, oversubscribed=threads * workers > cpus)
