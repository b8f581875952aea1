"""``smkit init --framework vllm`` then ``smkit synth`` (the real CDK app, offline): the adapter's local
folder is uploaded by the stack and the template's ArtifactUrl names that copy of ``smkit package``'s archive;
the names ``smkit synth`` prints are the template's. No engine runs (the folders are written as Hugging
Face and PEFT save them, tests/cli/test_init_llm.py)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from smkit.cdk.constructs.model_copy import MODELS_PREFIX


def test_synth_uploads_the_adapter_archive_and_prints_the_deployed_names(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from test_init_llm import init_project

    config = init_project(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "smkit.cli",
            "synth",
            "--config",
            str(config),
            "-o",
            str(tmp_path / "cdk.out"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    archive = tmp_path / "build" / "chat" / "adapters" / "chat-adapter.tar.gz"
    assert archive.is_file()  # synth packaged the adapter first
    template = json.loads((tmp_path / "cdk.out" / "ChatDevServing.template.json").read_text())
    resources = template["Resources"].values()
    components = {
        r["Properties"]["InferenceComponentName"]: r["Properties"]
        for r in resources
        if r["Type"] == "AWS::SageMaker::InferenceComponent"
    }
    (endpoint,) = [
        r["Properties"]["EndpointName"] for r in resources if r["Type"] == "AWS::SageMaker::Endpoint"
    ]
    printed = [
        line.removeprefix("deployed as ") for line in done.stdout.splitlines() if "deployed as" in line
    ]
    assert printed[0] == f"endpoint: {endpoint} (stack ChatDevServing)"
    names = dict(line.removeprefix("inference component ").split(": ") for line in printed[1:])
    assert sorted(names) == ["chat", "chat-adapter"] and sorted(names.values()) == sorted(components)
    adapter = components[names["chat-adapter"]]["Specification"]
    assert adapter["BaseInferenceComponentName"] == names["chat"]
    url = adapter["Container"]["ArtifactUrl"]["Fn::Join"][1]
    assert (
        url[0] == "s3://"
        and url[2].startswith(f"/{MODELS_PREFIX}")
        and url[2].endswith("/chat-adapter.tar.gz")
    )
    # The uploaded asset is the archive itself, byte for byte.
    assets = [p for p in (tmp_path / "cdk.out").glob("asset.*") if (p / "chat-adapter.tar.gz").is_file()]
    assert assets, "the adapter archive is an asset of the assembly"
    staged = (assets[0] / "chat-adapter.tar.gz").read_bytes()
    assert hashlib.sha256(staged).digest() == hashlib.sha256(archive.read_bytes()).digest()
