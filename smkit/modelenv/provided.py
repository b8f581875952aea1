"""Which lines of a model's ``code/requirements.txt`` the image does not provide.

The serving runtime installs only when some line is unmet by the image's installed distributions
(smkit.hosting.requirements.plan); this asks the same question of the image layer's interpreter, so the
packager (vendor wheels or not) and the local endpoint (refuse an isolated container or not) agree with
what the container does at start.
"""

from __future__ import annotations

import json
import subprocess

from smkit.modelenv.builder import image_environment
from smkit.modelenv.image_runtime import ImageRuntime, ModelEnvError
from smkit.requirement_lines import requirement_lines

# Run by the image layer's interpreter (smkit is linked into it).
_PROBE = (
    "import json, sys\n"
    "from smkit.hosting.requirements import unsatisfied\n"
    "print(json.dumps(list(unsatisfied(json.loads(sys.argv[1])))))\n"
)


def unmet_by_image(
    runtime: ImageRuntime, requirements_text: str, *, progress: bool = True
) -> tuple[str, ...]:
    """The requirement lines the image layer of ``runtime`` does not satisfy (the layer built once, cached)."""
    lines = requirement_lines(requirements_text)
    if not lines:
        return ()
    interpreter = image_environment(runtime, requirements_text, progress=progress)
    probe = subprocess.run(
        [interpreter, "-I", "-c", _PROBE, json.dumps(lines)], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        raise ModelEnvError(f"checking the requirements in {interpreter} failed: {probe.stderr.strip()}")
    return tuple(json.loads(probe.stdout))
