"""The SageMaker TensorFlow Serving form: ``handler`` / ``input_handler`` + ``output_handler`` models.

What the SageMaker TensorFlow Serving image does, run locally without Docker: its Python front end
(:mod:`smkit.tfs.frontend`) or, without ``inference.py``, its nginx conversions (:mod:`smkit.tfs.rest_conversion`),
in front of TensorFlow Serving's REST API (:mod:`smkit.tfs.rest`) answered by TensorFlow itself
(:mod:`smkit.tfs.saved_models`). Needs ``pip install 'smkit[tensorflow]'``. See docs/tensorflow-serving.md.
"""
