"""Test model that measures how many requests it serves at once (across worker processes).

Each request bumps a counter in the JSON file named by ``PROBE_STATE`` (under an exclusive lock), holds for
a moment so that concurrent requests overlap, and answers with its own body. The file keeps the highest
count seen in ``max``.
"""

import fcntl
import json
import os
import time

HOLD_S = 0.05


def model_fn(model_dir):
    return os.environ["PROBE_STATE"]


def _bump(path, delta):
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        state = json.loads(handle.read() or '{"now": 0, "max": 0}')
        state["now"] += delta
        state["max"] = max(state["max"], state["now"])
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(state))


def transform_fn(model, data, content_type, accept):
    _bump(model, 1)
    try:
        time.sleep(HOLD_S)
    finally:
        _bump(model, -1)
    return data, content_type
