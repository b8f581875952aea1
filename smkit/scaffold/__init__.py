"""``smkit init NAME``: a model folder and a deployment config, in any folder (a project of your own).

Writes ``model_code/NAME/`` (``code/inference.py``, ``code/rows.py``, ``code/requirements.txt``,
``train.py`` with ``samples_io.py``, ``artifacts/``, ``samples/``) and ``config/NAME.yaml`` (a realtime endpoint on the kit's image
with network isolation, model data ``../build/NAME/model.tar.gz``: paths in a config are relative to the
config file; for ``huggingface`` no handler code at all: the config's container environment sets
``HF_TASK``, docs/hugging-face.md; a commented ``pipeline:`` section whose pipeline runs the smkit CLI),
or, with ``--multi-model SET``, adds the model to the multi-model endpoint ``config/SET.yaml``
(smkit.scaffold.multi_model); plus, once per project, ``cdk.json`` (the kit's CDK app, for the CDK CLI's own commands) and
``.gitignore``. For an LLM serving image (``vllm``) only the config: smkit.scaffold.llm. Nothing names the
kit's installation. Model files are never overwritten; an existing one is an error naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from smkit.scaffold.llm import LLM_FRAMEWORKS, llm_config
from smkit.scaffold.llm_handler import handler_files
from smkit.scaffold.multi_model import JoinError, join

TEMPLATES = Path(__file__).resolve().parent / "templates"
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")  # config name rule (smkit.config.models.DeploymentConfig.name)

# Pinned, so that a scaffold builds the same environment and vendors the same wheels everywhere.
REQUIREMENTS: dict[str, tuple[str, ...]] = {
    # pandas: a Pipeline fitted on a DataFrame (named, categorical columns) is served a DataFrame.
    "sklearn": ("scikit-learn==1.9.1", "pandas==3.1.1"),
    "lightgbm": ("lightgbm==4.7.0",),
    # xgboost-cpu: the same library without the CUDA runtime (xgboost on Linux pulls nvidia-nccl-cu12).
    "xgboost": ("xgboost-cpu==3.2.0",),
    # On Linux, PyPI's torch wheel is the CUDA build (several GB with its nvidia-* dependencies): point pip at
    # a CPU-only index (docs/bring-your-own-model.md) or deploy on AWS's PyTorch image.
    "pytorch": ("torch==2.13.0",),
    "tensorflow": ("tensorflow-cpu==2.21.0",),
    # pandas: the handler hands CatBoost a DataFrame with its categorical columns as text.
    "catboost": ("catboost==1.2.10", "pandas==3.1.1"),
    # onnx: only train.py's example builds its graph with it; drop it when you bring your own model.onnx.
    "onnx": ("onnxruntime==1.31.1", "onnx==1.23.2"),
    # No inference.py: HF_TASK in the config's container environment picks a transformers pipeline
    # (docs/hugging-face.md). transformers 4.x, the line AWS's Hugging Face inference images ship.
    "huggingface": ("torch==2.13.0", "transformers==4.57.6"),
}
FRAMEWORKS = tuple(REQUIREMENTS)  # model frameworks: a handler (or the image's defaults) and train.py
# What ``smkit init --framework`` takes: the model frameworks and the LLM serving images, which get a config
# and no model code (smkit.scaffold.llm).
CHOICES = (*FRAMEWORKS, *LLM_FRAMEWORKS)
# Where the scaffolded handler loads the model from, under artifacts/ (its MODEL_FILE / MODEL_DIR).
MODEL_FILES: dict[str, str] = {
    "sklearn": "model.joblib",
    "lightgbm": "model.txt",
    "xgboost": "model.json",
    "pytorch": "model.pt",
    "tensorflow": "model/1/ (a SavedModel folder)",
    "catboost": "model.cbm",
    "onnx": "model.onnx",
    "huggingface": "config.json, model.safetensors and tokenizer files (save_pretrained() of model and tokenizer)",
}
# Frameworks served by their image's default handlers alone, and the container environment that says how.
DEFAULTS_ONLY: dict[str, dict[str, str]] = {"huggingface": {"HF_TASK": "text-classification"}}


class ScaffoldError(ValueError):
    """The scaffold cannot be written; the message names the problem and the fix."""


@dataclass(frozen=True)
class Scaffold:
    """What ``smkit init`` wrote."""

    model_dir: Path
    config: Path
    files: tuple[Path, ...]


CONFIG = """\
# {name}: a realtime endpoint for model_code/{name} ({framework}), written by `smkit init`.
# Paths are relative to this file. Package: smkit package --config config/{name}.yaml; try it locally:
# smkit local-endpoint --config config/{name}.yaml; deploy: smkit deploy --config config/{name}.yaml.
name: {name}
environment: dev

image:
  source: build            # the kit's serving image, built from any folder; or dlc with an AWS image uri

model:
  # No internet in the container: `smkit package --config` vendors the wheels of requirements.txt into
  # the archive (code/wheels), installed offline at start.
  network_isolation: true
  containers:
    - name: {name}
      model_data:
        source: archive
        path: ../build/{name}/model.tar.gz{environment}

endpoint:
  type: realtime
  variants:
    - name: main
      instance_type: ml.m5.large   # CPU; GPU instance types need a GPU image (docs/bring-your-own-model.md)
      initial_instance_count: 1

# A delivery pipeline (CDK Pipelines: source -> synth -> staging + smoke test -> approval -> production):
# uncomment, fill in your accounts, commit the project and deploy it once with
# smkit deploy --config config/{name}.yaml -c pipeline=true. Its steps run this project's own commands:
# pip install smkit, smkit synth, smkit smoke-test (smkit.cdk.PipelineCommands.for_project).
# pipeline:
#   account: "111111111111"        # tooling account that runs the pipeline
#   region: eu-west-1
#   source:
#     type: connection             # a CodeConnections connection to GitHub/GitLab/Bitbucket | codecommit
#     connection_arn: arn:aws:codeconnections:eu-west-1:111111111111:connection/ID
#     repository: my-org/my-repo
#     branch: main
#   staging: {{account: "222222222222", region: eu-west-1}}
#   production: {{account: "333333333333", region: eu-west-1}}
"""


# The CDK CLI's own commands (`npx aws-cdk@VERSION diff`, `destroy`) run the kit's app with the venv's python.
CDK_JSON = """\
{{
  "app": "python -m smkit.cdk.app",
  "context": {{
    "config": "config/{name}.yaml"
  }}
}}
"""
GITIGNORE = """\
build/
cdk.out/
.smkit/
__pycache__/
"""


def scaffold(
    root: Path, name: str, framework: str, multi_model: str | None = None, *, handler: bool = False
) -> Scaffold:
    """Write the model folder and config for ``name`` under ``root`` (the project holding model_code/);
    with ``multi_model``, the model joins the multi-model endpoint ``config/<multi_model>.yaml`` instead
    (smkit.scaffold.multi_model); with ``handler`` (an LLM serving image only), also the custom handler
    file ``model_code/NAME/model/model.py`` and its ``requirements.txt`` (smkit.scaffold.llm_handler)."""
    if handler and framework not in LLM_FRAMEWORKS:
        raise ScaffoldError(
            f"--handler writes model.py for AWS's vLLM image; --framework {framework} has inference.py "
            f"(model_code/{name}/code/): use --framework {', '.join(LLM_FRAMEWORKS)} with --handler"
        )
    if not NAME.match(name):
        raise ScaffoldError(
            f"NAME {name!r}: must be lowercase letters, digits and hyphens, starting with a letter, "
            "<= 40 characters (it becomes the config's name), e.g. churn-model"
        )
    if framework in LLM_FRAMEWORKS:
        if multi_model is not None:
            raise ScaffoldError(
                f"--framework {framework}: an LLM runs in its engine's container as inference components, not "
                "on a multi-model endpoint; drop --multi-model"
            )
        return _llm(root, name, framework, handler=handler)
    if framework not in REQUIREMENTS:
        raise ScaffoldError(f"framework {framework!r}: choose one of {', '.join(CHOICES)}")
    if multi_model is not None and not NAME.match(multi_model):
        raise ScaffoldError(
            f"--multi-model {multi_model!r}: must be lowercase letters, digits and hyphens, starting with a "
            "letter, <= 40 characters (it becomes the config's name), e.g. tenants"
        )
    model_dir = root / "model_code" / name
    config = root / "config" / f"{multi_model or name}.yaml"
    environment = DEFAULTS_ONLY.get(framework)
    if multi_model is not None and environment is not None:
        raise ScaffoldError(
            f"--framework {framework} has no handler code (the container's environment configures the image's "
            "handlers, one model per container); a multi-model endpoint needs each model's own "
            "code/inference.py: choose another framework"
        )
    contents = _model_files(model_dir, framework, handlers=environment is None)
    variables = "".join(f"\n        {key}: {value}" for key, value in (environment or {}).items())
    if multi_model is None:
        contents[config] = CONFIG.format(
            name=name,
            framework=framework,
            environment=f"\n      environment:{variables}" if variables else "",
        )
    project_files = {
        root / "cdk.json": CDK_JSON.format(name=multi_model or name),
        root / ".gitignore": GITIGNORE,
    }
    contents.update({path: text for path, text in project_files.items() if not path.exists()})
    existing = [path for path in contents if path.exists()]
    if existing:
        raise ScaffoldError(
            f"{existing[0]} exists already; choose another NAME or remove model_code/{name} and config/{name}.yaml"
        )
    if multi_model is not None:
        try:
            contents[config] = join(config, multi_model, name)
        except JoinError as exc:
            raise ScaffoldError(str(exc)) from None
    for path, text in contents.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in ("artifacts", "samples"):
        (model_dir / folder).mkdir(exist_ok=True)
    return Scaffold(model_dir, config, tuple(contents))


def _model_files(model_dir: Path, framework: str, *, handlers: bool) -> dict[Path, str]:
    """The model folder from the framework's templates: with ``handlers``, ``code/inference.py`` and its helper
    (none when the image's own handlers serve it), then the requirements and the training script."""
    contents: dict[Path, str] = {}
    if handlers:
        contents[model_dir / "code" / "inference.py"] = (TEMPLATES / framework / "inference.py").read_text(
            encoding="utf-8"
        )
        contents[model_dir / "code" / "rows.py"] = (TEMPLATES / "common" / "rows.py").read_text(
            encoding="utf-8"
        )
    contents.update(
        {
            model_dir / "code" / "requirements.txt": "".join(f"{line}\n" for line in REQUIREMENTS[framework]),
            model_dir / "train.py": (TEMPLATES / framework / "train.py").read_text(encoding="utf-8"),
            # What every train.py shares; beside it, since train.py runs where smkit may not be installed.
            model_dir / "samples_io.py": (TEMPLATES / "common" / "samples_io.py").read_text(encoding="utf-8"),
        }
    )
    return contents


def _llm(root: Path, name: str, framework: str, *, handler: bool) -> Scaffold:
    """config/NAME.yaml of an LLM serving image, with ``handler`` model.py and requirements.txt in its
    model folder, and, once per project, cdk.json and .gitignore."""
    config = root / "config" / f"{name}.yaml"
    contents = {config: llm_config(framework, name)}
    if handler:
        files = handler_files(name, root / "model_code" / name / "model")
        for path in files:
            if path.exists():
                raise ScaffoldError(f"{path} exists already; remove it, or leave out --handler")
        contents.update(files)
    for path, text in {root / "cdk.json": CDK_JSON.format(name=name), root / ".gitignore": GITIGNORE}.items():
        if not path.exists():
            contents[path] = text
    if config.exists():
        raise ScaffoldError(f"{config} exists already; choose another NAME or remove it")
    for path, text in contents.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Scaffold(root / "model_code" / name, config, tuple(contents))
