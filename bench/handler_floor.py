"""CPU cost of the model's own handler chain, without any server: the floor under any runtime.

Run by the same interpreter as the server under test (``bench/serving.py`` does it):
``python handler_floor.py MODEL_DIR PAYLOAD CONTENT_TYPE ACCEPT N``. Imports ``MODEL_DIR/code/inference.py``
the plain way (no smkit), calls ``model_fn`` once, then ``input_fn -> predict_fn -> output_fn`` N times
on the payload (decoded to ``str`` as the toolkit does for text/csv and application/json, docs/handler-semantics.md)
and prints one JSON line: CPU and wall microseconds per call, the best of five equal slices.
Only the three-hook chain with two-argument hooks is supported: enough for the example model.
"""

import json
import os
import sys
import time


def main() -> None:
    model_dir, payload, content_type, accept, count = sys.argv[1:6]
    sys.path.insert(0, os.path.join(model_dir, "code"))
    import inference  # noqa: PLC0415 - the model's module, found only after the path change

    model = inference.model_fn(model_dir)
    with open(payload, "rb") as handle:
        body = handle.read()
    data = body.decode("utf-8") if content_type in ("text/csv", "application/json") else body
    n = max(int(count), 5)
    for _ in range(min(n, 50)):
        inference.output_fn(inference.predict_fn(inference.input_fn(data, content_type), model), accept)
    # Best of five slices, as timeit does: the least disturbed by other work on the machine.
    per_slice = n // 5
    cpu_best = wall_best = float("inf")
    for _ in range(5):
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(per_slice):
            inference.output_fn(inference.predict_fn(inference.input_fn(data, content_type), model), accept)
        cpu_best = min(cpu_best, (time.process_time() - cpu) / per_slice)
        wall_best = min(wall_best, (time.perf_counter() - wall) / per_slice)
    result = {"calls": per_slice * 5, "cpu_us_per_call": round(1e6 * cpu_best, 1)}
    result["wall_us_per_call"] = round(1e6 * wall_best, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
