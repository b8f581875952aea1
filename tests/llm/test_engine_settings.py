"""The engine-settings table: SM_VLLM_* (AWS's vLLM image) and OPTION_* (LMI) variables -> vLLM arguments,
an unknown variable of the engine's prefix refused at load, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from smkit.config import ConfigError, parse_config
from smkit.config.engine_settings import (
    ENGINE_SETTINGS,
    EngineSettingError,
    engine_arguments,
    engine_repository,
)
from smkit.llm.engine import local_arguments

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def _llm(environment: dict[str, str]) -> dict:
    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    data["model"]["containers"][0]["environment"] = environment
    return data


def test_every_row_has_a_documentation_link_and_a_flag_of_vllm() -> None:
    for row in ENGINE_SETTINGS:
        assert row.doc.startswith("https://"), row
        assert row.flag is None or row.flag.startswith("--"), row
    variables = [(row.image, row.variable) for row in ENGINE_SETTINGS]
    assert len(variables) == len(set(variables))


def test_the_images_entrypoint_translation() -> None:
    env = {
        "SM_VLLM_MAX_MODEL_LEN": "4096",
        "SM_VLLM_ENABLE_LORA": "true",
        "SM_VLLM_ENFORCE_EAGER": "false",  # false leaves the flag out, as the image's docs say
        "SM_VLLM_MAX_LORA_RANK": "64",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true",  # not an engine argument: an environment variable
    }
    assert engine_arguments("vllm", env) == [
        "--max-model-len",
        "4096",
        "--enable-lora",
        "--max-lora-rank",
        "64",
    ]
    assert engine_arguments(
        "djl-inference", {"OPTION_MAX_MODEL_LEN": "2048", "HF_MODEL_ID": "/opt/ml/model"}
    ) == [
        "--max-model-len",
        "2048",
    ]


def test_engine_images_are_recognised_by_repository() -> None:
    assert (
        engine_repository("763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:server-sagemaker-cuda-v1")
        == "vllm"
    )
    assert engine_repository(
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"
    )
    assert (
        engine_repository("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.6.0-cpu") is None
    )


def test_an_unknown_engine_setting_is_an_error_at_load_naming_it() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_llm({"SM_VLLM_MAX_MODEL_LENGTH": "4096"}), source="llm.yaml")
    message = str(caught.value)
    assert "model.containers[0].environment.SM_VLLM_MAX_MODEL_LENGTH: '4096'" in message
    assert "SM_VLLM_MAX_MODEL_LENGTH is not one smkit knows" in message
    assert "SM_VLLM_MAX_MODEL_LEN" in message  # the known ones are listed
    with pytest.raises(EngineSettingError, match="SM_VLLM_MAX_MODEL_LENGTH"):
        engine_arguments("vllm", {"SM_VLLM_MAX_MODEL_LENGTH": "4096"})


def test_a_switch_takes_true_or_false() -> None:
    with pytest.raises(
        ConfigError, match="environment.SM_VLLM_ENABLE_LORA: 'yes': a switch takes true or false"
    ):
        parse_config(_llm({"SM_VLLM_ENABLE_LORA": "yes"}), source="llm.yaml")


def test_an_unknown_lmi_option_is_an_error_at_load() -> None:
    data = _llm({"OPTION_MAX_LORA": "4"})
    data["image"]["uri"] = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"
    with pytest.raises(ConfigError, match="OPTION_MAX_LORA is not one smkit knows"):
        parse_config(data, source="llm.yaml")


def test_variables_of_other_images_are_not_engine_settings() -> None:
    data = yaml.safe_load((CONFIG_DIR / "realtime.yaml").read_text())
    data["model"]["containers"][0].setdefault("environment", {})["SM_VLLM_ANYTHING"] = "1"
    parse_config(data, source="realtime.yaml")


NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}'


def test_the_speculative_config_is_an_engine_argument_checked_as_json_at_load() -> None:
    lora = {"SM_VLLM_ENABLE_LORA": "true", "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true"}
    parse_config(_llm({**lora, "SM_VLLM_SPECULATIVE_CONFIG": NGRAM}), source="llm.yaml")
    assert engine_arguments("vllm", {"SM_VLLM_SPECULATIVE_CONFIG": NGRAM}) == ["--speculative-config", NGRAM]
    with pytest.raises(ConfigError) as caught:
        parse_config(_llm({**lora, "SM_VLLM_SPECULATIVE_CONFIG": "ngram"}), source="llm.yaml")
    assert (
        "environment.SM_VLLM_SPECULATIVE_CONFIG: 'ngram': vLLM parses --speculative-config as JSON, and this "
        "is not JSON"
    ) in str(caught.value)
    with pytest.raises(ConfigError, match="a JSON object naming a method or a draft model"):
        parse_config(
            _llm({**lora, "SM_VLLM_SPECULATIVE_CONFIG": '{"num_speculative_tokens": 3}'}), source="llm.yaml"
        )


def test_a_draft_model_in_the_model_data_is_found_in_the_local_model_folder(tmp_path) -> None:
    draft = '{"model": "/opt/ml/model/draft", "num_speculative_tokens": 2}'
    local = local_arguments(["--max-model-len", "128", "--speculative-config", draft], tmp_path)
    assert local[:3] == ["--max-model-len", "128", "--speculative-config"]
    assert json.loads(local[3]) == {"model": f"{tmp_path}/draft", "num_speculative_tokens": 2}
    assert local_arguments(["--speculative-config", NGRAM], tmp_path) == ["--speculative-config", NGRAM]
