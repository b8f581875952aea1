"""What a TensorFlow Serving model directory holds, read without TensorFlow.

The SageMaker TensorFlow Serving container serves every ``saved_model.pb`` found under ``/opt/ml/model``
whose parent is a numeric version folder: the model is named after the folder above the versions
(``/opt/ml/model/1/saved_model.pb`` is served as ``model``), every version is loaded, leading zeros are
dropped, and the default model is ``$SAGEMAKER_TFS_DEFAULT_MODEL_NAME`` or else the first model found.
It runs its Python front end only when ``code/inference.py`` exists; without it nginx converts requests
itself (:mod:`smkit.tfs.rest_conversion`). Source: aws/sagemaker-tensorflow-serving-container,
``docker/build_artifacts/sagemaker/serve.py`` and ``tfs_utils.py``
(https://github.com/aws/sagemaker-tensorflow-serving-container).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from smkit.archive import ArchiveError, iter_members
from smkit.contract import TFS_DEFAULT_MODEL_NAME

SAVED_MODEL = "saved_model.pb"
CODE_DIR = "code"
INFERENCE = "inference.py"
TFS_HOOKS = frozenset({"handler", "input_handler", "output_handler"})
TOOLKIT_HOOKS = frozenset({"model_fn", "input_fn", "predict_fn", "output_fn", "transform_fn"})


@dataclass(frozen=True)
class ServedModel:
    """One model TensorFlow Serving loads: its name, folder and versions (ascending)."""

    name: str
    base_path: Path
    versions: tuple[int, ...]

    def version_path(self, version: int) -> Path:
        """The folder of ``version`` (its name may carry leading zeros)."""
        for entry in sorted(self.base_path.iterdir()):
            if entry.is_dir() and entry.name.isdigit() and int(entry.name) == version:
                return entry
        raise KeyError(version)


def _version_dirs(rel_paths: list[PurePosixPath]) -> dict[PurePosixPath, set[int]]:
    found: dict[PurePosixPath, set[int]] = {}
    for rel in rel_paths:
        if rel.name != SAVED_MODEL or not rel.parent.name.isdigit() or rel.parts[0] == CODE_DIR:
            continue
        found.setdefault(rel.parent.parent, set()).add(int(rel.parent.name))
    return found


def find_models(model_dir: str | Path) -> list[ServedModel]:
    """Every servable model under ``model_dir``, sorted by name."""
    root = Path(model_dir)
    rels = [PurePosixPath(p.relative_to(root).as_posix()) for p in root.rglob(SAVED_MODEL)]
    models = []
    for base, versions in _version_dirs(rels).items():
        name = base.name if base.parts else "model"
        models.append(ServedModel(name, root / base, tuple(sorted(versions))))
    return sorted(models, key=lambda m: (m.name, str(m.base_path)))


def handler_form(source: str) -> str | None:
    """``"tf-serving"`` or ``"toolkit"`` from the top-level functions of an ``inference.py``; None if neither."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    if names & TFS_HOOKS:
        return "tf-serving"
    if names & TOOLKIT_HOOKS:
        return "toolkit"
    return None


@dataclass(frozen=True)
class Layout:
    """Whether a model is a TensorFlow Serving model and which front end it gets."""

    has_saved_model: bool
    inference_form: str | None  # None: no code/inference.py
    has_inference: bool

    @property
    def is_tfs(self) -> bool:
        """SavedModels with the TF-Serving handler form, or with no ``inference.py`` at all."""
        return self.has_saved_model and (not self.has_inference or self.inference_form == "tf-serving")


def inspect_layout(source: str | Path, entry_point: str = INFERENCE) -> Layout:
    """Read a model directory or ``model.tar.gz`` (members only, nothing extracted)."""
    path = Path(source)
    inference = f"{CODE_DIR}/{entry_point}"
    if path.is_dir():
        rels = [PurePosixPath(p.relative_to(path).as_posix()) for p in path.rglob(SAVED_MODEL)]
        file = path / inference
        text = file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None
    elif path.is_file():
        rels, text = [], None
        try:
            for member, reader in iter_members(path):
                name = PurePosixPath(member.name.removeprefix("./"))
                if name.name == SAVED_MODEL:
                    rels.append(name)
                elif reader is not None and name.as_posix() == inference:
                    text = reader.read().decode("utf-8", "replace")
        except ArchiveError:
            return Layout(False, None, False)
    else:
        return Layout(False, None, False)
    form = handler_form(text) if text is not None else None
    return Layout(bool(_version_dirs(rels)), form, text is not None)


def is_tfs_source(code_dir: str | Path, artifacts_dir: str | Path, entry_point: str = INFERENCE) -> bool:
    """Whether a model about to be packaged (``--code`` and ``--artifacts``) is in the TF Serving form."""
    file = Path(code_dir) / entry_point
    if not file.is_file() or handler_form(file.read_text(encoding="utf-8", errors="replace")) != "tf-serving":
        return False
    root = Path(artifacts_dir)
    return bool(
        _version_dirs([PurePosixPath(p.relative_to(root).as_posix()) for p in root.rglob(SAVED_MODEL)])
    )


def default_model_name(models: list[ServedModel], environ: Mapping[str, str]) -> str:
    """``SAGEMAKER_TFS_DEFAULT_MODEL_NAME`` unless unset or ``None``, else the first model's name."""
    chosen = environ.get(TFS_DEFAULT_MODEL_NAME, "None")
    if chosen != "None":
        return chosen
    return models[0].name if models else "None"
