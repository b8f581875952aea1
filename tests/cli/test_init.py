"""``smkit init``: what a user bringing a model is told, and the scaffold's request tables (real pandas)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smkit.cli import main
from smkit.config import load_config
from smkit.scaffold import FRAMEWORKS


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


def test_every_framework_is_listed_in_the_help() -> None:
    result = CliRunner().invoke(main, ["init", "--help"])
    assert all(framework in result.output for framework in FRAMEWORKS)


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
