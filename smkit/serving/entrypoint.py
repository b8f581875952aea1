"""The image's entry point: ``docker run IMAGE serve`` (docs/hosting-contract.md).

SageMaker starts hosting containers with the single argument ``serve``. This serves ``$SM_MODEL_DIR``
(default ``/opt/ml/model``) on 0.0.0.0 and ``$SAGEMAKER_BIND_TO_PORT`` (default 8080), in multi-model
mode when ``SAGEMAKER_MULTI_MODEL=true``. Options after ``serve`` are those of ``python -m smkit.serving``.
A model ``code/requirements.txt`` that is not satisfied is pip-installed first; when that fails the
process exits with status 1 and one line naming the file, the package and pip's error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from smkit.serving.__main__ import main as serving_main

USAGE = "usage: serve [--model PATH] [--multi-model DIR] [--host H] [--port P] [--workers N]"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``serve``; any other command is refused with the usage line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "serve":
        got = args[0] if args else "nothing"
        print(f"smkit image: expected the command 'serve', got {got!r}\n{USAGE}", file=sys.stderr)
        return 2
    rest = args[1:]
    if not any(a == "--host" or a.startswith("--host=") for a in rest):
        rest = ["--host", "0.0.0.0", *rest]
    return serving_main(rest)


if __name__ == "__main__":
    code = main()
    # Imported once serving is over: it imports the HTTP stack, which the start imports only after it has
    # started the worker template and the workers (smkit/serving/front/launch.py).
    from smkit.serving.front.event_loop import exit_now

    exit_now(code)
