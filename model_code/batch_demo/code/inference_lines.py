"""The MultiRecord variant of ``inference.py``: split the body into lines in ``input_fn`` and join in ``output_fn``.

Select it with ``SAGEMAKER_PROGRAM=inference_lines.py``. With SplitType Line and BatchStrategy MultiRecord
it produces the same output as the one-record model with SingleRecord.
"""

import json

from inference import Model, model_fn, model_warmup_fn, pre_model_fn  # noqa: F401  (toolkit hooks)


def input_fn(input_data, content_type, context=None):
    """Decode every non-empty line as one JSON record."""
    lines = filter(lambda x: x != "", input_data.split("\n"))
    return map(lambda x: json.loads(x), lines)


def predict_fn(input_data, model, context=None):
    """Predict for each record's ``value``."""
    return map(lambda x: model.predict(x["value"]), input_data)


def output_fn(prediction, accept, context=None):
    """One JSON line per record."""
    return "\n".join(map(lambda x: json.dumps({"output": f"I want to {x}"}, ensure_ascii=False), prediction))
