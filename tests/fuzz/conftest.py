"""Hypothesis settings of the fuzz tests: a bounded, deterministic run in the suite, a long one in `make fuzz`.

``SMKIT_FUZZ_EXAMPLES`` sets the cases per target (default 40, derandomized so the suite is the same every
run); ``make fuzz`` sets 100,000 and a random seed (Hypothesis prints it with any failure to replay it).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("SMKIT_FUZZ_EXAMPLES", "40"))
LONG = EXAMPLES > 1000

settings.register_profile(
    "smkit-fuzz",
    max_examples=EXAMPLES,
    derandomize=not LONG,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
settings.load_profile("smkit-fuzz")
