"""The Hugging Face defaults without transformers: which defaults apply, the codec tables, the task rule.

The pipelines themselves run in tests/frameworks/test_huggingface.py, in a model environment with torch
and transformers; these parts need neither.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smkit import hftasks
from smkit.cli import main
from smkit.hosting.env import ServingEnv
from smkit.serving.wire.errors import BadRequest, NotAcceptable, UnsupportedMediaType
from smkit.serving.worker import hfcodecs
from smkit.serving.worker.defaults import DefaultHandlers, MissingHook
from smkit.serving.worker.frameworks import framework_defaults
from smkit.serving.worker.huggingface import HuggingFaceDefaults

REPO = Path(__file__).resolve().parents[2]


def test_hf_task_turns_the_defaults_on_and_only_the_kits_image_streams() -> None:
    kit = framework_defaults(ServingEnv.from_environ({"HF_TASK": "text-generation"}))
    assert isinstance(kit, HuggingFaceDefaults) and kit.streaming and kit.task == "text-generation"
    by_id = framework_defaults(ServingEnv.from_environ({"HF_MODEL_ID": "/models/mine"}))
    assert isinstance(by_id, HuggingFaceDefaults) and by_id.model_id == "/models/mine"
    image = framework_defaults(ServingEnv.from_environ({"SMKIT_FRAMEWORK": "huggingface"}))
    assert isinstance(image, HuggingFaceDefaults) and not image.streaming  # its model server cannot stream
    plain = framework_defaults(ServingEnv.from_environ({}))
    assert type(plain) is DefaultHandlers
    on_pytorch = framework_defaults(ServingEnv.from_environ({"SMKIT_FRAMEWORK": "pytorch", "HF_TASK": "x"}))
    assert not isinstance(on_pytorch, HuggingFaceDefaults)  # AWS's PyTorch image ignores HF_TASK


def test_json_is_decoded_as_it_is_and_csv_needs_the_inputs_header() -> None:
    body = '{"inputs": "héllo", "parameters": {"top_k": 2}}'
    assert hfcodecs.decode(body.encode(), "application/json", None) == json.loads(body)
    rows = 'inputs\n"first, with a comma"\nsecond\n'
    assert hfcodecs.decode(rows, "text/csv", None) == {"inputs": ["first, with a comma", "second"]}
    qa = "question,context\nwho?,me\n"
    assert hfcodecs.decode(qa, "text/csv", None) == {"inputs": [{"question": "who?", "context": "me"}]}
    with pytest.raises(BadRequest, match="header row naming the column 'inputs'"):
        hfcodecs.decode("first\nsecond\n", "text/csv", None)
    with pytest.raises(BadRequest, match="not supported with HF_TASK=zero-shot-classification"):
        hfcodecs.decode(rows, "text/csv", "zero-shot-classification")
    with pytest.raises(BadRequest, match="body is not valid JSON"):
        hfcodecs.decode("{", "application/json", None)
    with pytest.raises(UnsupportedMediaType, match="'application/xml' is not supported"):
        hfcodecs.decode("<a/>", "application/xml", None)
    assert hfcodecs.decode(b"RIFF", "audio/wave", None) == {"inputs": b"RIFF"}


def test_answers_are_compact_json_or_csv_rows() -> None:
    answer = [{"label": "POSITIVE", "score": 0.5}, {"label": "négatif", "score": 0.25}]
    body, kind = hfcodecs.encode(answer, "*/*", "application/json")
    assert (body, kind) == (
        '[{"label":"POSITIVE","score":0.5},{"label":"négatif","score":0.25}]',
        "application/json",
    )
    body, kind = hfcodecs.encode(answer, "text/csv", "application/json")
    assert (body.splitlines(), kind) == (["label,score", "POSITIVE,0.5", "négatif,0.25"], "text/csv")
    with pytest.raises(NotAcceptable, match="use one of"):
        hfcodecs.encode(answer, "application/xml", "application/json")
    with pytest.raises(NotAcceptable, match="list of dicts"):
        hfcodecs.encode("text", "text/csv", "application/json")


def test_predict_refuses_what_the_pipeline_cannot_take() -> None:
    defaults = HuggingFaceDefaults("application/json", task="text-classification")
    with pytest.raises(BadRequest, match="must be a JSON object"):
        defaults.default_predict_fn(["a"], model=None)
    with pytest.raises(BadRequest, match="parameters must be a JSON object"):
        defaults.default_predict_fn({"inputs": "a", "parameters": [1]}, model=None)
    streaming = HuggingFaceDefaults("application/json", task="text-classification", streaming=True)

    def classify(inputs: str, **parameters: object) -> list[dict[str, object]]:
        return [{"label": inputs, "score": 1.0, **parameters}]

    with pytest.raises(BadRequest, match='"stream": true is supported for text-generation only'):
        streaming.default_predict_fn({"inputs": "a", "stream": True}, model=classify)
    assert defaults.default_predict_fn({"inputs": "a", "parameters": {"top_k": 1}}, model=classify) == [
        {"label": "a", "score": 1.0, "top_k": 1}
    ]


def _config(folder: Path, architecture: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    return folder


@pytest.mark.parametrize(
    ("architecture", "task"),
    [
        ("BertForSequenceClassification", "text-classification"),
        ("GPT2LMHeadModel", "text-generation"),
        ("LlamaForCausalLM", "text-generation"),
        ("TapasForQuestionAnswering", "table-question-answering"),
        ("DistilBertForQuestionAnswering", "question-answering"),
    ],
)
def test_the_task_comes_from_the_architecture(tmp_path: Path, architecture: str, task: str) -> None:
    assert hftasks.infer_task(str(_config(tmp_path, architecture))) == task


def test_a_task_that_cannot_be_inferred_names_hf_task(tmp_path: Path) -> None:
    with pytest.raises(hftasks.TaskError, match="HF_TASK is not set and .* holds no config.json"):
        hftasks.infer_task(str(tmp_path))
    with pytest.raises(hftasks.TaskError, match="architecture 'BertModel'"):
        hftasks.infer_task(str(_config(tmp_path, "BertModel")))
    with pytest.raises(hftasks.TaskError, match="does not download models from the Hugging Face Hub"):
        hftasks.model_source(str(tmp_path), "distilbert/distilbert-base-uncased")
    (tmp_path / "sub").mkdir()
    assert hftasks.model_source(str(tmp_path), "sub") == str(tmp_path / "sub")
    with pytest.raises(MissingHook, match="set HF_TASK"):
        HuggingFaceDefaults("application/json", task=None).default_model_fn(str(tmp_path / "empty"))


def test_the_kits_missing_model_fn_points_a_transformers_folder_at_hf_task(tmp_path: Path) -> None:
    with pytest.raises(MissingHook, match="set HF_TASK .* in the container's environment"):
        DefaultHandlers().default_model_fn(str(_config(tmp_path, "BertForSequenceClassification")))


def test_packaging_a_transformers_folder_without_hf_task_or_handler_is_refused(tmp_path: Path) -> None:
    code, artifacts = tmp_path / "code", _config(tmp_path / "artifacts", "BertModel")
    code.mkdir()
    (code / "requirements.txt").write_text("")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: c\nenvironment: dev\nimage: {{source: build, context: {REPO}, dockerfile: container/Dockerfile}}\nmodel:\n  network_isolation: false\n  containers:\n    - name: c\n"
        "      model_data: {source: archive, path: model.tar.gz}\n      environment: {HF_MODEL_ID: .}\n"
        "endpoint:\n  type: realtime\n  variants: [{name: main, instance_type: ml.m5.large, initial_instance_count: 1}]\n"
    )
    args = [
        "package",
        "--code",
        str(code),
        "--artifacts",
        str(artifacts),
        "--output",
        str(tmp_path / "m.tar.gz"),
    ]
    plain = CliRunner().invoke(main, [*args, "--no-load-check", "--python", sys.executable])
    assert plain.exit_code == 1 and "inference.py: missing" in plain.output
    hf = CliRunner().invoke(main, [*args, "--config", str(config), "--no-load-check"])
    assert hf.exit_code == 1
    assert "cannot be inferred from the architecture 'BertModel'" in hf.output
    assert "set HF_TASK in model.containers[].environment of the config" in hf.output
    assert not (tmp_path / "m.tar.gz").exists()
