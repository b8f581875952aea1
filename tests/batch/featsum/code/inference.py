"""Test model for DataProcessing: sums each row's features, one output line per input row.

CSV bodies (``text/csv``) are rows of numbers; JSON bodies are one JSON array per line. The answer is one sum
per row: CSV lines for ``text/csv``, ``{"sum": s}`` lines otherwise. A row that is not all numbers is a 500.
"""

import json


def model_fn(model_dir):
    return sum


def input_fn(data, content_type):
    text = data if isinstance(data, str) else data.decode("utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    if content_type == "text/csv":
        return [[float(cell) for cell in line.split(",")] for line in lines]
    return [json.loads(line) for line in lines]


def predict_fn(rows, model):
    for row in rows:
        if not isinstance(row, list) or not all(isinstance(x, int | float) for x in row):
            raise ValueError(f"expected an array of numbers, got {row!r}")
    return [model(row) for row in rows]


def output_fn(sums, accept):
    if accept == "text/csv":
        return "".join(f"{s:g}\n" for s in sums)
    return "\n".join(json.dumps({"sum": s}) for s in sums)
