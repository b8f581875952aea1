"""``smkit init``: what a user bringing a model is told, and the scaffold's request tables (real pandas)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smkit.cli import main
from smkit.config import load_config
from smkit.scaffold import CHOICES, FRAMEWORKS, TEMPLATES


@pytest.mark.parametrize(
    ("framework", "model_file"),
    [
        ("sklearn", "model.joblib"),
        ("xgboost", "model.json"),
        ("lightgbm", "model.txt"),
        ("pytorch", "model.pt"),
    ],
)
def test_init_names_the_file_the_handler_loads(framework: str, model_file: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", "mine", "--framework", framework, "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    handler = (tmp_path / "model_code" / "mine" / "code" / "inference.py").read_text()
    assert f'MODEL_FILE = "{model_file}"' in handler
    assert f"artifacts/{model_file}" in result.output
    assert "smkit train mine --samples-only --rows" in result.output
    assert "smkit smoke-test --config" in result.output and "make " not in result.output
    assert json.loads((tmp_path / "cdk.json").read_text())["app"] == "python -m smkit.cdk.app"


def test_init_huggingface_writes_no_handler_and_sets_hf_task(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", "mine", "--framework", "huggingface", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert [p.name for p in (tmp_path / "model_code" / "mine" / "code").iterdir()] == ["requirements.txt"]
    config = load_config(tmp_path / "config" / "mine.yaml")
    assert config.model.containers[0].environment == {"HF_TASK": "text-classification"}
    assert "no handler code" in result.output and "save_pretrained()" in result.output
    assert "inference.py" not in result.output


def test_init_refuses_to_overwrite_naming_the_file(tmp_path: Path) -> None:
    args = ["init", "mine", "--root", str(tmp_path)]
    assert CliRunner().invoke(main, args).exit_code == 0
    again = CliRunner().invoke(main, args)
    assert again.exit_code != 0 and "inference.py exists already" in again.output


def _init(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["init", *args, "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    return result.output


def test_init_multi_model_writes_the_set_then_adds_each_model(tmp_path: Path) -> None:
    _init(tmp_path, "churn", "--multi-model", "tenants")
    output = _init(tmp_path, "fraud", "--framework", "lightgbm", "--multi-model", "tenants")
    assert "fraud is in the set of" in output and "smkit package --config config/tenants.yaml" in output
    assert not (tmp_path / "config" / "churn.yaml").exists()
    config = load_config(tmp_path / "config" / "tenants.yaml")
    assert config.endpoint.type == "multi-model"
    data = config.model.containers[0].model_data
    assert (data.source, data.models) == ("multi-model", ("churn", "fraud"))
    assert data.path == str(tmp_path / "build" / "tenants")
    assert json.loads((tmp_path / "cdk.json").read_text())["context"]["config"] == "config/tenants.yaml"


def test_init_multi_model_keeps_the_users_edits_and_refuses_a_set_it_cannot_edit(tmp_path: Path) -> None:
    _init(tmp_path, "churn", "--multi-model", "tenants")
    set_config = tmp_path / "config" / "tenants.yaml"
    edited = set_config.read_text().replace("initial_instance_count: 1", "initial_instance_count: 2")
    set_config.write_text(edited)
    _init(tmp_path, "fraud", "--multi-model", "tenants")
    assert set_config.read_text() == edited.replace("models: [churn]", "models: [churn, fraud]")
    set_config.write_text(edited.replace("models: [churn]", "models:\n          - churn"))
    refused = CliRunner().invoke(main, ["init", "risk", "--multi-model", "tenants", "--root", str(tmp_path)])
    assert refused.exit_code == 1
    assert "is not a multi-model config with a one-line `models: [...]` list" in refused.output
    assert "add risk to its model_data.models by hand" in refused.output
    assert not (tmp_path / "model_code" / "risk").exists()  # nothing written


def test_init_multi_model_refuses_a_framework_without_handler_code(tmp_path: Path) -> None:
    args = ["init", "mine", "--framework", "huggingface", "--multi-model", "tenants", "--root", str(tmp_path)]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1 and "needs each model's own code/inference.py" in refused.output
    assert not (tmp_path / "model_code").exists()


def test_every_framework_is_listed_in_the_help() -> None:
    result = CliRunner().invoke(main, ["init", "--help"])
    assert all(framework in result.output for framework in CHOICES)


@pytest.fixture
def rows_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    CliRunner().invoke(main, ["init", "tab", "--framework", "sklearn", "--root", str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path / "model_code" / "tab" / "code"))
    monkeypatch.delitem(sys.modules, "rows", raising=False)
    import rows

    return rows


def test_table_keeps_text_and_orders_records_by_the_models_columns(rows_module) -> None:
    columns = ["tenure", "monthly", "plan"]
    csv_rows = rows_module.decode_table(b"34,36.8,plus\n5,80.5,basic\n", "text/csv")
    assert csv_rows == [[34.0, 36.8, "plus"], [5.0, 80.5, "basic"]]
    records = json.dumps([{"plan": "pro", "tenure": 3, "monthly": 20.0}]).encode()
    frame = rows_module.to_frame(rows_module.decode_table(records, "application/json"), columns)
    assert list(frame.columns) == columns and frame.iloc[0].tolist() == [3, 20.0, "pro"]
    one_row = rows_module.decode_table(b'{"instances": [1, 2.5, "basic"]}', "application/json")
    assert rows_module.to_frame(one_row, columns).shape == (1, 3)


def test_table_errors_name_the_models_columns(rows_module) -> None:
    columns = ["tenure", "monthly", "plan"]
    with pytest.raises(rows_module.RequestError, match=r"rows have \[2\] values.*3 columns"):
        rows_module.to_frame(rows_module.decode_table(b"1,2\n", "text/csv"), columns)
    with pytest.raises(rows_module.RequestError, match=r"lack the column\(s\) \['monthly', 'tenure'\]"):
        rows_module.to_frame([{"plan": "pro"}], columns)
    with pytest.raises(rows_module.RequestError) as bad_json:
        rows_module.decode_table(b"[1, 2", "application/json")
    assert bad_json.value.status_code == 400


def test_every_train_py_runs_on_the_samples_io_written_beside_it(tmp_path: Path) -> None:
    for framework in FRAMEWORKS:
        name = f"m-{framework}"
        result = CliRunner().invoke(main, ["init", name, "--framework", framework, "--root", str(tmp_path)])
        assert result.exit_code == 0, result.output
        model_dir = tmp_path / "model_code" / name
        assert (model_dir / "samples_io.py").read_text() == (
            TEMPLATES / "common" / "samples_io.py"
        ).read_text()
        assert f"created {model_dir / 'samples_io.py'}" in result.output
        train_py = (model_dir / "train.py").read_text()
        assert (
            "import samples_io\n" in train_py and "samples_io.main(__doc__, train, write_samples" in train_py
        )


FIT = '''"""Fit a constant model (a stand-in for a framework's training)."""
from pathlib import Path

import samples_io


def train(artifacts: Path) -> None:
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "model.txt").write_text("0.5")


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    rows = samples_io.feature_rows(rows_file)
    samples_io.write_requests(samples, rows)
    constant = float((artifacts / "model.txt").read_text())
    samples_io.write_expected(samples, [constant] * len(rows), rtol=1e-6)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
'''


def test_the_train_py_command_line_trains_then_writes_the_samples_of_your_rows(tmp_path: Path) -> None:
    """``samples_io.main`` as ``train.py`` runs it: a script, with its own folder on sys.path."""
    CliRunner().invoke(main, ["init", "fit", "--root", str(tmp_path)])
    model_dir = tmp_path / "model_code" / "fit"
    (model_dir / "fit.py").write_text(FIT)
    subprocess.run([sys.executable, str(model_dir / "fit.py")], cwd=tmp_path, check=True)
    samples = model_dir / "samples"
    assert (model_dir / "artifacts" / "model.txt").read_text() == "0.5"
    assert len((samples / "request.csv").read_text().splitlines()) == 5
    assert json.loads((samples / "expected.json").read_text()) == {"predictions": [0.5] * 5, "rtol": 1e-6}

    (model_dir / "artifacts" / "model.txt").write_text("2.0")  # your own model: --samples-only keeps it
    rows = tmp_path / "my_rows.csv"
    rows.write_text("1,2.5\n3,4\n")
    args = ["--samples-only", "--rows", str(rows), "--samples", str(tmp_path / "mine")]
    subprocess.run([sys.executable, str(model_dir / "fit.py"), *args], cwd=tmp_path, check=True)
    assert (model_dir / "artifacts" / "model.txt").read_text() == "2.0"
    assert (tmp_path / "mine" / "request.csv").read_text() == "1.0,2.5\n3.0,4.0\n"
    assert json.loads((tmp_path / "mine" / "request.json").read_text()) == [[1.0, 2.5], [3.0, 4.0]]
    assert json.loads((tmp_path / "mine" / "expected.json").read_text())["predictions"] == [2.0, 2.0]


def test_samples_io_keeps_the_text_of_table_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    CliRunner().invoke(main, ["init", "tab", "--framework", "catboost", "--root", str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path / "model_code" / "tab"))
    monkeypatch.delitem(sys.modules, "samples_io", raising=False)
    import samples_io

    samples_io.write_requests(tmp_path / "s", [[34, 36.8, "plus"], [5, 80.5, "basic"]])
    assert (tmp_path / "s" / "request.csv").read_text() == "34,36.8,plus\n5,80.5,basic\n"
    own = tmp_path / "own.csv"
    own.write_text("12,20.5,pro\n")
    assert samples_io.table_rows(own) == [[12.0, 20.5, "pro"]]
