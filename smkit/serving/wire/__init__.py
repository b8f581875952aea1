"""What the front end and its model workers share: the frames between them, errors, the model registry.

Standard library and :mod:`smkit`'s bottom layers only; it imports neither side.
"""
