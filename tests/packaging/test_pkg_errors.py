"""Every refused input: the message names the file or field, the bad value and the fix; no output is left."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from pkg_harness import TINY_HANDLER, Model

from smkit.packaging import PackagingError, build_archive


@dataclass(frozen=True)
class Case:
    """Break the tiny model with ``setup``; building must fail with every string in ``expect``."""

    id: str
    setup: Callable[[Model], Path | None]
    expect: tuple[str, ...]


def _handler(text: str) -> Callable[[Model], None]:
    return lambda m: m.write("inference.py", text) and None


def _requirements(text: str) -> Callable[[Model], None]:
    return lambda m: m.write("requirements.txt", text) and None


def _unsatisfied_import(m: Model) -> None:
    m.write("requirements.txt", "smkit-no-such-dist==1.0\n")
    m.write("inference.py", "import smkit_no_such_dist\n" + TINY_HANDLER)


def _saved_model_without_version(m: Model) -> None:
    m.write("inference.py", TFS_ONLY)
    (m.artifacts / "net").mkdir()
    (m.artifacts / "net" / "saved_model.pb").write_bytes(b"pb")


def _missing_inference(m: Model) -> None:
    (m.code / "inference.py").unlink()
    m.write("helpers.py", "X = 1\n")


def _empty_code(m: Model) -> None:
    for p in m.code.iterdir():
        p.unlink()


def _escaping_symlink(m: Model) -> None:
    secret = m.out.parent / "secret.txt"
    secret.write_text("outside")
    (m.artifacts / "weights-link.txt").symlink_to(secret)


def _dir_symlink(m: Model) -> None:
    (m.artifacts / "alias").symlink_to(m.artifacts / "sub", target_is_directory=True)


def _fifo(m: Model) -> None:
    os.mkfifo(m.artifacts / "pipe")


def _missing_artifacts(m: Model) -> None:
    for p in sorted(m.artifacts.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    m.artifacts.rmdir()


def _unwritable_output(m: Model) -> Path:
    blocker = m.out / "not-a-dir"
    blocker.write_text("a file where the output folder should be")
    return blocker / "model.tar.gz"


def _output_inside_input(m: Model) -> Path:
    return m.artifacts / "model.tar.gz"


def _output_is_a_directory(m: Model) -> Path:
    (m.out / "model.tar.gz").mkdir()
    return m.out / "model.tar.gz"


def _uncompressed_target_in_use(m: Model) -> None:
    (m.out / "flat").mkdir()
    (m.out / "flat" / "notes.txt").write_text("not an earlier build")


def _artifacts_with_code(m: Model) -> None:
    (m.artifacts / "code").mkdir()
    (m.artifacts / "code" / "x.py").write_text("")


def _artifacts_with_manifest(m: Model) -> None:
    (m.artifacts / "smkit-manifest.json").write_text("{}")


def _artifacts_with_mms_manifest(m: Model) -> None:
    (m.artifacts / "MANIFEST.json").write_text("{}")


def _missing_requirements(m: Model) -> None:
    (m.code / "requirements.txt").unlink()


def _missing_weights(m: Model) -> None:
    (m.artifacts / "weights.txt").unlink()


NO_MODEL_FN = TINY_HANDLER.replace("def model_fn(model_dir)", "def load(model_dir)")
MIXED = TINY_HANDLER + "\n\ndef transform_fn(model, data, content_type, accept):\n    return data\n"
ARITY = TINY_HANDLER.replace("def input_fn(input_data, content_type)", "def input_fn(input_data)")
TOO_MANY = TINY_HANDLER.replace("def predict_fn(data, model)", "def predict_fn(data, model, context, extra)")
KW_ONLY = TINY_HANDLER.replace("def output_fn(prediction, accept)", "def output_fn(prediction, *, accept)")
TFS_HALF = "def input_handler(data, context):\n    return data\n"
TFS_MIXED = TINY_HANDLER + "\n\ndef handler(data, context):\n    return data\n"
TFS_BOTH = (
    "def handler(data, context):\n    return data\n\n\ndef input_handler(data, context):\n    return data\n"
)
TFS_ONLY = "def handler(data, context):\n    return data\n"

CASES = [
    Case("missing inference.py", _missing_inference, ("inference.py: missing", "add inference.py")),
    Case(
        "empty code dir",
        _empty_code,
        ("code folder", "the folder is empty", "put inference.py and requirements.txt"),
    ),
    Case(
        "syntax error",
        _handler("import os\ndef model_fn(model_dir:\n    pass\n"),
        ("inference.py line 2", "fix the syntax error"),
    ),
    Case(
        "syntax error in a helper",
        lambda m: m.write("helpers/util.py", "x = = 1\n") and None,
        ("util.py line 1", "invalid syntax"),
    ),
    Case(
        "import error",
        _handler("import smkit_no_such_module_xyz\n" + TINY_HANDLER),
        (
            "import failed: ModuleNotFoundError",
            "smkit_no_such_module_xyz",
            "add the package that provides 'smkit_no_such_module_xyz'",
        ),
    ),
    Case(
        "import error with unsatisfied requirements",
        _unsatisfied_import,
        (
            "import failed",
            "is not satisfied in the checking interpreter",
            "smkit-no-such-dist==1.0 (not installed)",
            "let smkit build the model's environment",
        ),
    ),
    Case(
        "exception at import",
        _handler(TINY_HANDLER + "\nraise RuntimeError('boom at import')\n"),
        ("inference.py line 20", "RuntimeError: boom at import", "python -c 'import inference'"),
    ),
    Case(
        "os._exit at import",
        _handler("import os\nos._exit(3)\n"),
        ("exited with code 3 without an answer", "sys.exit()"),
    ),
    Case(
        "no model_fn",
        _handler(NO_MODEL_FN),
        ("model_fn: is not defined", "Please provide a model_fn", "define"),
    ),
    Case(
        "no model_fn, blank reason",
        _handler('NO_MODEL_FN_REASON = " "\n' + NO_MODEL_FN),
        ("model_fn: is not defined", "NO_MODEL_FN_REASON"),
    ),
    Case(
        "transform_fn mixed with input_fn",
        _handler(MIXED),
        ("transform_fn: is defined together with input_fn, predict_fn, output_fn", "keep transform_fn alone"),
    ),
    Case(
        "wrong arity",
        _handler(ARITY),
        (
            "input_fn: takes 1 positional parameter",
            "input_fn(input_data, content_type[, context])",
            "def input_fn(input_data, content_type):",
        ),
    ),
    Case("too many parameters", _handler(TOO_MANY), ("predict_fn: takes 4 positional parameters",)),
    Case(
        "keyword-only parameter",
        _handler(KW_ONLY),
        ("output_fn: has required keyword-only parameter accept", "def output_fn(prediction, accept):"),
    ),
    Case(
        "no hooks at all",
        _handler("VALUE = 1\n"),
        ("defines none of the handler hooks", "define model_fn(model_dir)"),
    ),
    Case(
        "hook not callable",
        _handler(TINY_HANDLER + "\npredict_fn = 3\n"),
        ("predict_fn: is defined but not callable",),
    ),
    Case(
        "bad requirements line",
        _requirements("numpy==2.4.6\nscikit-learn=>1.0\n"),
        ("requirements.txt line 2", "'scikit-learn=>1.0' is not a valid requirement", "PEP 508"),
    ),
    Case(
        "pip option in requirements",
        _requirements("--extra-index-url http://example.invalid/simple\n"),
        ("requirements.txt line 1", "pip option '--extra-index-url", "PEP 508"),
    ),
    Case("missing requirements.txt", _missing_requirements, ("requirements.txt: missing", "it may be empty")),
    Case(
        "escaping symlink",
        _escaping_symlink,
        ("symlink", "weights-link.txt", "points outside", "copy the file"),
    ),
    Case("directory symlink", _dir_symlink, ("alias", "links a directory", "replace the link")),
    Case("fifo", _fifo, ("pipe: is a FIFO", "only regular files and directories")),
    Case(
        "missing artifacts dir",
        _missing_artifacts,
        ("artifacts folder", "no such directory", "give an existing folder"),
    ),
    Case("artifacts have code/", _artifacts_with_code, ("has its own code/", "move that folder's content")),
    Case(
        "artifacts have smkit-manifest.json",
        _artifacts_with_manifest,
        ("smkit-manifest.json", "reserved for the packager"),
    ),
    Case(
        "artifacts have MANIFEST.json",
        _artifacts_with_mms_manifest,
        ("MANIFEST.json", "Multi Model Server", "rename the file"),
    ),
    Case(
        "output dir unwritable",
        _unwritable_output,
        ("output", "is not a directory", "choose an output path"),
    ),
    Case("output inside input", _output_inside_input, ("output", "would package itself")),
    Case(
        "output is a directory",
        _output_is_a_directory,
        ("model.tar.gz: is a directory", "name the archive file"),
    ),
    Case(
        "uncompressed target in use",
        _uncompressed_target_in_use,
        ("uncompressed folder", "flat: exists and is not an empty folder or an earlier uncompressed build"),
    ),
    Case(
        "model_fn fails on the artifacts",
        _missing_weights,
        (
            "model_fn",
            "raised FileNotFoundError",
            "weights.txt",
            "at inference.py line 5",
            "make the artifacts folder hold",
        ),
    ),
    Case(
        "tf-serving input_handler alone",
        _handler(TFS_HALF),
        ("output_handler: is missing", "found only input_handler", "define output_handler(data, context)"),
    ),
    Case("tf-serving handler with input_handler", _handler(TFS_BOTH), ("handler: is defined together with",)),
    Case(
        "toolkit and tf-serving mixed",
        _handler(TFS_MIXED),
        ("mixes toolkit hooks", "TF-Serving hooks (handler)"),
    ),
    Case(
        "tf-serving without a SavedModel",
        _handler(TFS_ONLY),
        ("no TensorFlow SavedModel", "my_model/1/saved_model.pb"),
    ),
    Case(
        "tf-serving SavedModel outside a version dir",
        _saved_model_without_version,
        ("net/saved_model.pb", "not in a numeric version directory", "net/1/saved_model.pb"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_refused_with_message_and_no_output(tiny: Model, case: Case) -> None:
    output = case.setup(tiny) or tiny.out / "model.tar.gz"
    before = tiny.outputs()
    with pytest.raises(PackagingError) as caught:
        build_archive(tiny.code, tiny.artifacts, output, uncompressed=tiny.out / "flat")
    message = str(caught.value)
    for expected in case.expect:
        assert expected in message, f"{expected!r} not in {message!r}"
    assert tiny.outputs() == before
    assert not output.is_file()


def test_at_least_twelve_cases() -> None:
    assert len(CASES) >= 12


def test_failure_while_writing_leaves_nothing(tiny: Model, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that changes size between the scan and the copy aborts the build and removes the temp file."""
    from smkit.packaging import writer

    original = writer._copy

    def grow_then_copy(entry, sinks, bar):  # type: ignore[no-untyped-def]
        if entry.name == "weights.txt":
            entry.source.write_text("1.5 and more bytes\n")
        return original(entry, sinks, bar)

    monkeypatch.setattr(writer, "_copy", grow_then_copy)
    with pytest.raises(PackagingError, match="weights.txt: changed size while being packaged"):
        build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz", uncompressed=tiny.out / "flat")
    assert tiny.outputs() == []
