"""A batch-transform model: ``{"value": n}`` in, ``{"output": "I want to 🍵"}`` (odd n) or 🍣 (even n) out.

The handlers are those of the sagemaker-inference toolkit (docs/handler-semantics.md), each taking the optional
trailing ``context``. ``input_fn`` calls ``json.loads`` on the whole body, so a MultiRecord request (several
lines in one body) fails with ``Extra data: line 2 column 1 (char 12)``, as it does in a SageMaker
transform job.
"""

import json


class Model:
    """Answers 🍣 for even values and 🍵 for odd ones; refuses to predict before warm-up."""

    warmup = False

    def predict(self, data):
        if not self.warmup:
            raise Exception("Model not warmed up")
        return ["🍣", "🍵"][data % 2]


def pre_model_fn(model_dir, context=None):
    """Runs once before ``model_fn`` (nothing to prepare here)."""


def model_fn(model_dir, context=None):
    """Build the model (no weights: the rule is the model)."""
    return Model()


def model_warmup_fn(model_dir, model, context=None):
    """Warm the model up once after loading; ``predict`` refuses to run before this."""
    model.warmup = True


def input_fn(input_data, content_type, context=None):
    """Decode one JSON document (one record)."""
    return json.loads(input_data)


def predict_fn(input_data, model, context=None):
    """Predict for the record's ``value``."""
    return model.predict(input_data["value"])


def output_fn(prediction, accept, context=None):
    """Encode as JSON, keeping the emoji as UTF-8."""
    return json.dumps({"output": f"I want to {prediction}"}, ensure_ascii=False)
