"""Hugging Face models with ``HF_TASK`` and no ``inference.py``, served as AWS's Hugging Face images serve them.

Tiny models built here (random or briefly trained weights, a tokenizer trained on a few sentences: nothing
from the Hub) in the environment of a scaffolded ``huggingface`` model (torch + transformers). Each is
packaged with ``smkit package --config`` (the config's container environment sets ``HF_TASK``), served
through the local endpoint in the model's environment, and asked through boto3 (text generation also
streamed); every answer equals what ``transformers.pipeline`` computes for the same request in the same
environment. An ``inference.py`` with one hook replaces that default and keeps the others.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner
from framework_harness import run_in, write_requirements
from serving_harness import start_server, wait_ready

from smkit.cli import main
from smkit.local import LocalEndpoint
from smkit.modelenv import ModelEnvironment

CONFIG = """\
name: {name}
environment: dev
image:
  source: build
  context: {repo}
  dockerfile: container/Dockerfile
model:
  network_isolation: false  # the kit's image installs code/requirements.txt at start
  containers:
    - name: {name}
      model_data:
        source: archive
        path: build/model.tar.gz
      environment:
        HF_TASK: {task}
        SAGEMAKER_MODEL_SERVER_WORKERS: "1"
endpoint:
  type: realtime
  variants:
    - name: main
      instance_type: ml.m5.large
      initial_instance_count: 1
"""
REPO = Path(__file__).resolve().parents[2]

CLASSIFY = [
    {"inputs": "i loved the story"},
    {"inputs": ["i loved the story", "a terrible boring film"], "parameters": {"top_k": None}},
]
# The scaffold's train.py, then the pipeline's answers for CLASSIFY and for the CSV rows, in one process.
TRAIN_AND_EXPECT = """
    import json, runpy, sys
    train, requests = sys.argv[1], json.loads(sys.argv[2])
    sys.argv = [train]
    sys.path.insert(0, train.rsplit("/", 1)[0])  # as `python train.py` does: its samples_io.py beside it
    runpy.run_path(train, run_name="__main__")
    from transformers import pipeline
    folder = train.rsplit("/", 1)[0] + "/artifacts"
    pipe = pipeline("text-classification", model=folder, tokenizer=folder, device=-1)
    answers = [pipe(r["inputs"], **r.get("parameters", {})) for r in requests]
    answers.append(pipe(["i loved the story", "a terrible boring film"]))
    print(json.dumps(answers))
"""

OUTPUT_FN_ONLY = """\
import json


def output_fn(prediction, accept):
    return json.dumps({"top": [labels[0]["label"] for labels in prediction]}), "application/json"
"""

PROMPT = "the movie was"
GENERATE = {"max_new_tokens": 8, "do_sample": False}
# A tiny GPT-2 with a word-level tokenizer, trained for a few steps so that it does not repeat one word.
BUILD_GENERATOR = """
    import json, sys
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, pipeline
    out, prompt, parameters = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    text = ["the movie was great and the acting was wonderful", "the movie was long and the plot was slow",
            "the story was moving and the music was great", "the acting was poor and the story was dull"]
    words = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    words.normalizer = normalizers.Lowercase()
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.train_from_iterator(text, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[EOS]"]))
    tok = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=tok.vocab_size, n_embd=16, n_layer=2, n_head=2, n_positions=64,
                        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(config)
    batch = tok(text, padding=True, return_tensors="pt")
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.02)
    for _ in range(40):
        optimizer.zero_grad()
        model(**batch, labels=batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)).loss.backward()
        optimizer.step()
    model.eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    pipe = pipeline("text-generation", model=out, tokenizer=out, device=-1)
    print(json.dumps({"full": pipe(prompt, **parameters),
                      "new": pipe(prompt, **parameters, return_full_text=False)}))
"""


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """One OpenMP thread in the processes these tests start (training, the check, the reference pipeline).

    Models this small gain nothing from more, and on busy shared cores two spinning OpenMP threads per
    process cost several times the CPU time (21 s instead of 4 s for the scaffold's train.py, measured).
    """
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _close(got: Any, want: Any) -> None:
    """Equal structure and strings; scores within 1e-5 (the same arithmetic, in another process)."""
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-5)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (got, want)
        for key in want:
            _close(got[key], want[key])
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (got, want)
        for g, w in zip(got, want, strict=True):
            _close(g, w)
    else:
        assert got == want


def _run(environment: ModelEnvironment, script: str, *args: str) -> Any:
    done = run_in(environment, ["-c", textwrap.dedent(script), *args])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _package(tmp_path: Path, code: Path, artifacts: Path, config: Path) -> str:
    """``smkit package --config``: checked in the model's environment (the cached one of ``hf_env``)."""
    packaged = CliRunner().invoke(
        main,
        ["package", "--code", str(code), "--artifacts", str(artifacts), "--output",
         str(tmp_path / "build" / "model.tar.gz"), "--config", str(config), "--no-progress"],
    )  # fmt: skip
    assert packaged.exit_code == 0, packaged.output
    return packaged.output


def _invoke(
    client: Any, name: str, body: str, content_type: str = "application/json", accept: str = ""
) -> Any:
    answer = client.invoke_endpoint(
        EndpointName=name, ContentType=content_type, Body=body, **({"Accept": accept} if accept else {})
    )
    return answer


def _refused(client: Any, name: str, body: str, content_type: str = "application/json") -> tuple[int, str]:
    """The container's status and message of a request boto3 gets as a ModelError."""
    with pytest.raises(ClientError) as refused:
        _invoke(client, name, body, content_type)
    response = refused.value.response
    assert response["Error"]["Code"] == "ModelError"
    return response["OriginalStatusCode"], json.loads(response["OriginalMessage"])["message"]


def test_scaffolded_text_classifier_served_by_hf_task_alone(
    tmp_path: Path, framework_env: Callable[[str], ModelEnvironment]
) -> None:
    hf_env = framework_env("huggingface")
    made = CliRunner().invoke(
        main, ["init", "reviews", "--framework", "huggingface", "--root", str(tmp_path)]
    )
    assert made.exit_code == 0, made.output
    model_dir = tmp_path / "model_code" / "reviews"
    assert sorted(p.name for p in (model_dir / "code").iterdir()) == ["requirements.txt"]  # no inference.py
    expected = _run(hf_env, TRAIN_AND_EXPECT, str(model_dir / "train.py"), json.dumps(CLASSIFY))
    assert (model_dir / "samples" / "expected.json").is_file()

    config = tmp_path / "reviews.yaml"
    config.write_text(CONFIG.format(name="reviews", repo=REPO, task="text-classification"))
    output = _package(tmp_path, model_dir / "code", model_dir / "artifacts", config)
    assert (
        "no inference.py: the Hugging Face defaults serve pipeline('text-classification') "
        "(TextClassificationPipeline over BertForSequenceClassification)"
    ) in output
    assert "transformers==4.57.6" in output  # the archive records what the pipeline was checked with

    with LocalEndpoint(config, root=tmp_path) as endpoint:
        client = endpoint.client()
        for request, want in zip(CLASSIFY, expected, strict=False):
            answer = _invoke(client, "reviews", json.dumps(request))
            assert answer["ContentType"] == "application/json"
            _close(json.loads(answer["Body"].read()), want)
        csv_body = "inputs\ni loved the story\na terrible boring film\n"
        answer = _invoke(client, "reviews", csv_body, "text/csv", "text/csv")
        rows = answer["Body"].read().decode().splitlines()
        assert rows[0] == "label,score"
        _close([{"label": r.split(",")[0], "score": float(r.split(",")[1])} for r in rows[1:]], expected[-1])

        status, message = _refused(
            client, "reviews", json.dumps({"inputs": "great", "parameters": {"x_arg": 1}})
        )
        assert status == 400
        assert message.startswith("the text-classification pipeline failed on this request: TypeError")
        assert "x_arg" in message
        status, message = _refused(client, "reviews", json.dumps(["i loved the story"]))
        assert (status, message) == (
            400,
            'the request must be a JSON object {"inputs": ..., "parameters": {...}}, got a list',
        )
        status, message = _refused(client, "reviews", "i loved the story\n", "text/csv")
        assert status == 400 and "header row naming the column 'inputs'" in message
        status, message = _refused(client, "reviews", "{}", "application/xml")
        assert status == 415 and "Content-Type 'application/xml' is not supported" in message
        # The server keeps serving after bad requests.
        _close(json.loads(_invoke(client, "reviews", json.dumps(CLASSIFY[0]))["Body"].read()), expected[0])

    # An inference.py with output_fn alone: the pipeline and the request format stay the defaults'.
    (model_dir / "code" / "inference.py").write_text(OUTPUT_FN_ONLY)
    output = _package(tmp_path, model_dir / "code", model_dir / "artifacts", config)
    assert "no model_fn: the Hugging Face defaults serve pipeline('text-classification')" in output
    server = start_server(
        tmp_path,
        ["--model", str(tmp_path / "build" / "model.tar.gz")],
        env={
            "SMKIT_WORKER_PYTHON": hf_env.python,
            **hf_env.environ(),
            "HF_TASK": "text-classification",
            "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
        },
        ready=False,
    )
    try:
        wait_ready(server, timeout=300)
        answer = server.invoke(json.dumps(CLASSIFY[1]), "application/json", "application/json")
        assert answer.status == 200, answer.body
        assert answer.json() == {"top": [labels[0]["label"] for labels in expected[1]]}
    finally:
        assert server.stop() == 0


def test_text_generator_served_by_hf_task_alone(
    tmp_path: Path, framework_env: Callable[[str], ModelEnvironment]
) -> None:
    hf_env = framework_env("huggingface")
    code, artifacts = tmp_path / "code", tmp_path / "artifacts"
    write_requirements(tmp_path, "huggingface")  # the scaffold's requirements: the same cached environment
    expected = _run(hf_env, BUILD_GENERATOR, str(artifacts), PROMPT, json.dumps(GENERATE))
    assert expected["full"][0]["generated_text"].startswith(PROMPT)

    config = tmp_path / "writer.yaml"
    config.write_text(CONFIG.format(name="writer", repo=REPO, task="text-generation"))
    output = _package(tmp_path, code, artifacts, config)
    assert "pipeline('text-generation') (TextGenerationPipeline over GPT2LMHeadModel)" in output

    with LocalEndpoint(config, root=tmp_path) as endpoint:
        client = endpoint.client()
        request = {"inputs": PROMPT, "parameters": GENERATE}
        assert json.loads(_invoke(client, "writer", json.dumps(request))["Body"].read()) == expected["full"]
        request["parameters"] = {**GENERATE, "return_full_text": False}
        assert json.loads(_invoke(client, "writer", json.dumps(request))["Body"].read()) == expected["new"]

        # "stream": true: TGI's server-sent events, one per token, through InvokeEndpointWithResponseStream.
        streamed = client.invoke_endpoint_with_response_stream(
            EndpointName="writer",
            ContentType="application/json",
            Body=json.dumps({"inputs": PROMPT, "parameters": GENERATE, "stream": True}),
        )
        assert streamed["ContentType"] == "text/event-stream"
        body = b"".join(event["PayloadPart"]["Bytes"] for event in streamed["Body"])
        events = [json.loads(chunk.removeprefix(b"data:")) for chunk in body.split(b"\n\n") if chunk]
        generated = expected["new"][0]["generated_text"]
        assert "".join(event["token"]["text"] for event in events) == generated
        assert [event["index"] for event in events] == list(range(1, len(events) + 1))
        assert all(event["generated_text"] is None for event in events[:-1])
        assert events[-1]["generated_text"] == generated
        assert events[-1]["details"]["generated_tokens"] == len(events)
        assert events[-1]["details"]["finish_reason"] in ("length", "eos_token")

        # A parameter the pipeline refuses is an ordinary 400 before the stream starts.
        with pytest.raises(ClientError) as refused:
            client.invoke_endpoint_with_response_stream(
                EndpointName="writer",
                ContentType="application/json",
                Body=json.dumps({"inputs": PROMPT, "parameters": {"x_arg": 1}, "stream": True}),
            )
        assert refused.value.response["OriginalStatusCode"] == 400
        assert "x_arg" in refused.value.response["OriginalMessage"]
