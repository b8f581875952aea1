"""A model-worker process of the serving runtime: the model's hooks, codecs and streamed answers.

It never imports :mod:`smkit.serving.front`, and what a worker process may import at all is a test
(tests/test_import_layers.py): the model's own code gets the interpreter, not the front end's libraries.
"""
