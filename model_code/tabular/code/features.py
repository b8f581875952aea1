"""Request parsing for the diabetes regressor: rows of the 10 raw diabetes features.

Feature order (scikit-learn's ``load_diabetes(scaled=False)``): age, sex, bmi, bp, s1..s6.
The parsing itself is shared by the examples: ``table_io.py``, added to ``code/`` when packaged
(``smkit package --include model_code/shared/table_io.py``). Every rejection raises
:class:`RequestError` with an HTTP ``status_code`` the serving runtime returns.
"""

from __future__ import annotations

from table_io import RequestError, TableParser

FEATURE_NAMES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")
N_FEATURES = len(FEATURE_NAMES)

PARSER = TableParser(FEATURE_NAMES)

__all__ = ["FEATURE_NAMES", "N_FEATURES", "PARSER", "RequestError"]
