"""Class names of the iris classifier, in the order of ``model.classes_`` (0, 1, 2)."""

CLASS_NAMES = ("setosa", "versicolor", "virginica")


def names(indices) -> list[str]:
    """Map predicted class indices to their names."""
    return [CLASS_NAMES[int(i)] for i in indices]
