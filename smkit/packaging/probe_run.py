"""Run a check script in a model's interpreter: one JSON request in, one JSON answer out.

The packager's checks load the user's model where it will run, never in the packager itself: the handler
check (``_probe.py``), the Hugging Face pipeline check (``_hf_probe.py``), the SavedModel check
(``_tf_probe.py``) and the vLLM handler-file check (:mod:`smkit.llm.handlers`). Each script defines
``main(request) -> answer`` on plain JSON values and is run as ``python -I -B -c SOURCE REQUEST``, with
:data:`ANSWER` appended to its source: that reads the request, a JSON file whose ``out`` field names the
file the JSON answer is written to, and writes ``main``'s answer there once ``main`` returned. The run is
bounded by CPU time (:func:`smkit.bounded.run_bounded`), so a busy machine does not fail a correct check; a
run stopped at its limit, or one that exits without writing its answer, is a
:class:`~smkit.packaging.errors.PackagingError` naming ``label``, what the check was doing and the fix.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smkit.bounded import LimitExceeded, run_bounded
from smkit.packaging.errors import PackagingError

CHECK_LIMIT_FIX = "raise --check-timeout (seconds of the check's CPU time; default 120)"

# Appended to every check script: the one way its request comes in and its answer goes out (the answer file is
# opened only once ``main`` returned, so a script that dies leaves none).
ANSWER = """

if __name__ == "__main__":
    import json as _json
    import sys as _sys

    with open(_sys.argv[1], encoding="utf-8") as _file:
        _request = _json.load(_file)
    _answer = main(_request)
    with open(_request["out"], "w", encoding="utf-8") as _file:
        _json.dump(_answer, _file)
"""


def run_probe(
    source: str,
    request: Mapping[str, Any],
    *,
    python: str,
    cpu_s: float,
    label: str,
    doing: str,
    limit_fix: str = CHECK_LIMIT_FIX,
    exit_fix: str,
    check: str = "check process",
    cwd: str | None = None,
) -> dict[str, Any]:
    """The answer of the script ``source`` (which defines ``main``) run by ``python`` on ``request`` (its
    ``out`` set here).

    ``doing`` completes the message of a run stopped at its limit (``"importing and loading"`` + the
    limit); ``check`` names the process in the message of a run without an answer, ``exit_fix`` says what to
    do about it; the last lines of its stderr are quoted."""
    with tempfile.TemporaryDirectory(prefix="smkit-probe-") as tmp:
        request_path, out = Path(tmp) / "request.json", Path(tmp) / "answer.json"
        request_path.write_text(json.dumps({**request, "out": str(out)}), encoding="utf-8")
        try:
            proc = run_bounded(
                [python, "-I", "-B", "-c", source + ANSWER, str(request_path)],
                cpu_s=cpu_s,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
            )
        except LimitExceeded as exc:
            raise PackagingError(label, f"{doing} {exc}", limit_fix) from exc
        if not out.exists():
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
            raise PackagingError(
                label,
                f"the {check} exited with code {proc.returncode} without an answer: {' | '.join(tail)}",
                exit_fix,
            )
        answer: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return answer
