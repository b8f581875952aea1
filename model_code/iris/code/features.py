"""Request parsing for the iris classifier: rows of the 4 iris measurements (cm).

Feature order (scikit-learn's ``load_iris``): sepal length, sepal width, petal length, petal width.
The parsing itself is shared by the examples: ``table_io.py``, added to ``code/`` when packaged
(``smkit package --include model_code/shared/table_io.py``). Every rejection raises
:class:`RequestError` with an HTTP ``status_code`` the serving runtime returns.
"""

from __future__ import annotations

from table_io import RequestError, TableParser

FEATURE_NAMES = ("sepal_length", "sepal_width", "petal_length", "petal_width")
N_FEATURES = len(FEATURE_NAMES)

PARSER = TableParser(FEATURE_NAMES)

__all__ = ["FEATURE_NAMES", "N_FEATURES", "PARSER", "RequestError"]
