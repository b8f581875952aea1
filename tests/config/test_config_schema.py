"""config/schema.json: generated from the models, every field described, and the shipped configs valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from smkit.cli import main
from smkit.config.schema import describe, models, render

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema.json"
CONFIGS = sorted((REPO / "config").glob("*.yaml"))


def test_the_checked_in_schema_is_the_generated_one() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == render(), "run `smkit config-schema` and commit the result"


def test_every_field_says_what_it_is_its_default_and_its_aws_page() -> None:
    for model in models():
        for name, field in model.model_fields.items():
            text = describe(model, name, field)
            assert "https://docs.aws.amazon.com/" in text, f"{model.__name__}.{name}: {text}"
            assert ("Default:" in text) == (not field.is_required()), f"{model.__name__}.{name}: {text}"


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_every_shipped_config_is_valid_against_the_schema(config: Path) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    errors = list(
        Draft202012Validator(schema).iter_errors(yaml.safe_load(config.read_text(encoding="utf-8")))
    )
    assert errors == [], [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def test_the_schema_catches_what_an_editor_should_flag() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    data = yaml.safe_load((REPO / "config" / "serverless.yaml").read_text(encoding="utf-8"))
    data["endpoint"]["serverless"]["memory_size_mb"] = 1000
    data["endpoint"]["typo"] = True
    messages = sorted(e.message for e in Draft202012Validator(schema).iter_errors(data))
    assert any("'memory_size_mb': 1000" in m and "is not valid" in m for m in messages), messages
    assert any("'typo' was unexpected" in m for m in messages), messages


def test_config_schema_check_reports_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "schema.json"
    stale.write_text("{}\n")
    result = CliRunner().invoke(main, ["config-schema", "--output", str(stale), "--check"])
    assert result.exit_code == 1 and "is out of date" in result.output
    assert CliRunner().invoke(main, ["config-schema", "--output", str(stale)]).exit_code == 0
    assert CliRunner().invoke(main, ["config-schema", "--output", str(stale), "--check"]).exit_code == 0
