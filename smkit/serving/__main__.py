"""``python -m smkit.serving [--model PATH] [--multi-model DIR] [--host H] [--port P] [--workers N] [--mode M]``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from smkit.serving.front.launch import LaunchRequest
from smkit.serving.launcher import serve


def parser() -> argparse.ArgumentParser:
    """The command line (kept identical to ``smkit serve``)."""
    p = argparse.ArgumentParser(prog="python -m smkit.serving", description="Serve a SageMaker model.")
    p.add_argument(
        "--model", help="model.tar.gz or extracted model directory (default $SM_MODEL_DIR or /opt/ml/model)"
    )
    p.add_argument("--multi-model", metavar="DIR", help="serve a folder of *.tar.gz models, loaded on demand")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default $SAGEMAKER_BIND_TO_PORT or 8080)")
    p.add_argument(
        "--workers",
        type=int,
        help="worker processes (default $SAGEMAKER_MODEL_SERVER_WORKERS or one per CPU it may use)",
    )
    p.add_argument(
        "--constant",
        action="store_true",
        help="serve a bare handler that returns a constant (benchmark baseline)",
    )
    p.add_argument(
        "--mode",
        choices=("auto", "toolkit", "tfs"),
        default="auto",
        help="auto (default): the TF Serving form for a SavedModel with handler/input_handler/output_handler "
        "or no inference.py, else the toolkit runtime",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and serve until stopped."""
    options = vars(parser().parse_args(argv))
    mode = options.pop("mode")
    if options["workers"] is not None and options["workers"] < 1:
        parser().error(f"--workers {options['workers']}: must be >= 1")
    # Every other option's destination is the LaunchRequest field of its name.
    return serve(LaunchRequest(**options), mode=mode)


if __name__ == "__main__":
    code = main()
    # Imported once serving is over: it imports the HTTP stack, which the start imports only after it has
    # started the worker template and the workers (smkit/serving/front/launch.py).
    from smkit.serving.front.event_loop import exit_now

    exit_now(code)
