"""Helpers of the stack tests: one synthesized app covering every file in config/ plus derived configs.

Synthesis runs the cdk-nag packs (AwsSolutions, HIPAA Security, NIST 800-53 R5) and aws-cdk's own
template validation with ``@aws-cdk/core:validateAgainstDefaultRules`` from cdk.json, so any
unacknowledged finding fails the fixture with the findings listed.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Template
from cfnlint.config import ConfigMixIn
from cfnlint.runner import Runner

from smkit.cdk import FEATURE_FLAGS
from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.serving_stage import ServingStacks, add_serving_stacks
from smkit.config import DeploymentConfig, parse_config
from smkit.config.resolved import resolve

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "config"
CONFIG_FILES = sorted(CONFIG_DIR.glob("*.yaml"))
SUPPLIED_KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ROLE = "arn:aws:iam::123456789012:role/serving"  # an existing role, for constructs built on their own
# Model data already in S3 (source: s3): a training job's output, a large uncompressed model, MME models.
S3_ARCHIVE = "s3://training-output-eu/jobs/xgb-2026-01/output/model.tar.gz"
S3_SOURCE_KEY = "arn:aws:kms:eu-west-1:123456789012:key/abcd1234-12ab-34cd-56ef-1234567890ab"
S3_PREFIX = "s3://large-models-eu/llm/v3/"
S3_MME = "s3://large-models-eu/mme/tabular/"
DLC_URI = "683313688378.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
# A model registry version (source: model-package) and the prefix its training jobs write model data under.
PACKAGE = "churn/3"
PACKAGE_DATA = "s3://training-output-eu/churn/"
# A channel already in S3 (an uncompressed prefix): e.g. a speculative-decoding head trained elsewhere.
S3_CHANNEL = "s3://large-models-eu/heads/v1/"


def cfn_lint_findings(templates: Sequence[Path], *, ignore: Sequence[str] = ()) -> list[str]:
    """cfn-lint (us-east-1, every rule but ``ignore``) over ``templates`` in one run: ``FILE:LINE: RULE
    message`` per finding. One run loads cfn-lint's rules once (about 0.6 s of CPU each time,
    ``cfnlint.api.lint_file`` loads them per file)."""
    assert templates, "no template to lint"
    config = ConfigMixIn(
        ["--template", *map(str, templates)], regions=["us-east-1"], ignore_checks=list(ignore)
    )
    return [f"{Path(m.filename).name}:{m.linenumber}: {m.rule.id} {m.message}" for m in Runner(config).run()]


def cdk_context() -> dict[str, Any]:
    """The app's feature flags and cdk.json's context: tests synthesize exactly what ``cdk synth`` does."""
    context: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return {**FEATURE_FLAGS, **context}


def _yaml(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CONFIG_DIR / name).read_text())
    return data


def shadow_scaled(shadow_instance_type: str = "ml.m5.large") -> dict[str, Any]:
    """config/realtime-shadow.yaml with the production and the shadow variant autoscaled."""
    data = _yaml("realtime-shadow.yaml")
    data["name"] = "tabular-shadow-scaled"
    scaling = {"min_capacity": 1, "max_capacity": 2, "target_invocations_per_instance": 200}
    data["endpoint"]["variants"][0]["autoscaling"] = scaling
    data["endpoint"]["shadow_variants"][0]["autoscaling"] = scaling
    data["endpoint"]["shadow_variants"][0]["instance_type"] = shadow_instance_type
    return data


def channel_archive(prefix_dir: Path) -> Path:
    """A channel's .tar.gz beside the session's uncompressed model folder (written on first use)."""
    archive = prefix_dir.with_name(f"{prefix_dir.name}-lookup.tar.gz")
    if not archive.is_file():
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(prefix_dir / "model.joblib", arcname="lookup.bin")
    return archive


def derived_configs(prefix_dir: Path) -> dict[str, DeploymentConfig]:
    """Variants no shipped file covers: autoscaled shadow variant; supplied KMS key + VPC + ECR image; DLC
    image + uncompressed prefix; additional model data sources (channels)."""
    byo = _yaml("realtime.yaml")
    byo["name"] = "tabular-byo"
    byo["image"] = {"source": "ecr", "tag": "v1.2.3"}
    # Opt-in core dumps (data bucket, KMS key) and SSM access: clean under cdk-nag and cfn-lint.
    byo["endpoint"]["variants"][0]["core_dumps"] = {"prefix": "crashes"}
    byo["endpoint"]["variants"][0]["ssm_access"] = True
    byo["security"] = {
        "kms": {"key_arn": SUPPLIED_KEY},
        "vpc": {
            "subnet_ids": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
            "security_group_ids": ["sg-0123456789abcdef0"],
        },
    }
    prefix = _yaml("async.yaml")
    prefix["name"] = "tabular-prefix"
    prefix["image"] = {"source": "dlc", "uri": DLC_URI}
    prefix["model"]["containers"][0]["model_data"] = {"source": "prefix", "path": str(prefix_dir)}
    in_s3 = _yaml("realtime.yaml")
    in_s3["name"] = "tabular-in-s3"
    in_s3["model"]["containers"][0]["model_data"] = {
        "source": "s3",
        "uri": S3_ARCHIVE,
        "kms_key_arn": S3_SOURCE_KEY,
    }
    s3_prefix = _yaml("async.yaml")
    s3_prefix["name"] = "tabular-s3-prefix"
    s3_prefix["model"]["containers"][0]["model_data"] = {"source": "s3", "uri": S3_PREFIX}
    package = _yaml("realtime.yaml")
    package["name"] = "tabular-package"
    package["image"] = {"source": "dlc", "uri": DLC_URI}
    package["model"]["containers"][0]["model_data"] = {
        "source": "model-package",
        "package": PACKAGE,
        "uri": PACKAGE_DATA,
        "kms_key_arn": S3_SOURCE_KEY,
    }
    s3_mme = _yaml("multi-model.yaml")
    s3_mme["name"] = "tabular-s3-mme"
    s3_mme["model"]["containers"][0]["model_data"] = {"source": "s3", "uri": S3_MME}
    # The container environment's own settings: workers, timeout and program written by the user.
    tuned = _yaml("async.yaml")
    tuned["name"] = "tabular-async-tuned"
    tuned["model"]["containers"][0]["environment"] = {
        "SAGEMAKER_MODEL_SERVER_WORKERS": "3",
        "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "300",
        "SAGEMAKER_PROGRAM": "inference.py",
    }
    uncached = _yaml("multi-model.yaml")
    uncached["name"] = "tabular-mme-uncached"
    uncached["model"]["containers"][0]["model_data"]["cache"] = "disabled"
    rolling = _yaml("realtime.yaml")
    rolling["name"] = "tabular-rolling"
    rolling["endpoint"]["variants"] = rolling["endpoint"]["variants"][:1]
    rolling["endpoint"]["variants"][0]["initial_instance_count"] = 4
    rolling["endpoint"]["variants"][0]["autoscaling"]["min_capacity"] = 4
    rolling["endpoint"]["deployment"] = {
        "strategy": "rolling",
        "batch_percent": 25,
        "rollback_batch_instances": 2,
        "wait_interval_seconds": 300,
        "max_execution_timeout_seconds": 7200,
    }
    rolling["endpoint"]["data_capture"]["json_content_types"] = ["application/json", "application/jsonlines"]
    rolling["endpoint"]["data_capture"]["csv_content_types"] = []
    # A component whose container serves its metrics on a path of its own; enhanced metrics every 10 s.
    observed = _yaml("inference-components.yaml")
    observed["name"] = "tabular-components-observed"
    observed["endpoint"]["inference_components"]["components"][1]["metrics_path"] = "/server/metrics"
    observed["endpoint"]["metrics"] = {"enhanced_metrics": True, "publish_frequency_seconds": 10}
    observed["endpoint"]["variants"][0]["core_dumps"] = {}
    # Additional model data sources: a local folder (uncompressed), a local .tar.gz and a KMS-encrypted S3 prefix,
    # named to the container by AWS's path; the model is a Custom::SageMakerModel (smkit.cdk.constructs.api_model).
    channels = _yaml("realtime.yaml")
    channels["name"] = "tabular-channels"
    channels["region"] = "eu-west-1"
    container = channels["model"]["containers"][0]
    container["additional_model_data"] = [
        {"channel": "draft", "source": "prefix", "path": str(prefix_dir)},
        {"channel": "lookup.v2", "source": "archive", "path": str(channel_archive(prefix_dir))},
        {"channel": "heads", "source": "s3", "uri": S3_CHANNEL, "kms_key_arn": S3_SOURCE_KEY},
    ]
    container["environment"]["DRAFT_MODEL"] = "/opt/ml/additional-model-data-sources/draft"
    return {
        "realtime-channels": parse_config(channels, source="derived realtime-channels", base_dir=CONFIG_DIR),
        "components-observed": parse_config(
            observed, source="derived components-observed", base_dir=CONFIG_DIR
        ),
        "realtime-rolling": parse_config(rolling, source="derived realtime-rolling", base_dir=CONFIG_DIR),
        "async-tuned": parse_config(tuned, source="derived async-tuned", base_dir=CONFIG_DIR),
        "multi-model-uncached": parse_config(
            uncached, source="derived multi-model-uncached", base_dir=CONFIG_DIR
        ),
        "realtime-s3": parse_config(in_s3, source="derived realtime-s3", base_dir=CONFIG_DIR),
        "realtime-package": parse_config(package, source="derived realtime-package", base_dir=CONFIG_DIR),
        "async-s3-prefix": parse_config(s3_prefix, source="derived async-s3-prefix", base_dir=CONFIG_DIR),
        "multi-model-s3": parse_config(s3_mme, source="derived multi-model-s3", base_dir=CONFIG_DIR),
        "realtime-shadow-scaled": parse_config(
            shadow_scaled(), source="derived realtime-shadow-scaled", base_dir=CONFIG_DIR
        ),
        "realtime-byo": parse_config(byo, source="derived realtime-byo", base_dir=CONFIG_DIR),
        "async-prefix": parse_config(prefix, source="derived async-prefix", base_dir=CONFIG_DIR),
    }


@dataclass
class SynthesizedApp:
    """The session's synthesized app: configs by case name, their stacks and templates."""

    outdir: Path
    configs: dict[str, DeploymentConfig]
    stacks: dict[str, ServingStacks]
    _templates: dict[str, Template] = field(default_factory=dict)

    def template_json(self, case: str, which: str = "serving") -> dict[str, Any]:
        stacks = self.stacks[case]
        stack = stacks.serving if which == "serving" else stacks.ecr
        assert stack is not None
        data: dict[str, Any] = json.loads((self.outdir / stack.template_file).read_text())
        return data

    def template(self, case: str, which: str = "serving") -> Template:
        key = f"{case}/{which}"
        if key not in self._templates:
            self._templates[key] = Template.from_json(self.template_json(case, which))
        return self._templates[key]

    def template_files(self) -> list[Path]:
        return sorted(self.outdir.glob("*.template.json"))


def validation_findings(outdir: Path) -> list[str]:
    """Readable lines from CDK's validation report (cdk-nag and CloudFormation default rules)."""
    report = outdir / "validation-report.json"
    if not report.exists():
        return []
    lines = []
    for plugin in json.loads(report.read_text()).get("pluginReports", []):
        for violation in plugin.get("violations", []):
            for construct in violation.get("violatingConstructs", []):
                lines.append(
                    f"{plugin['pluginName']}: {violation['ruleName']} at {construct.get('constructPath')}"
                )
    return lines


def synthesize(configs: dict[str, DeploymentConfig], outdir: Path) -> dict[str, ServingStacks]:
    """Build and synthesize one app holding the stacks of every config; fail with the findings."""
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    stacks = {
        case: add_serving_stacks(app, deployment=resolve(cfg, Path.cwd())) for case, cfg in configs.items()
    }
    add_compliance_checks(app)
    try:
        app.synth()
    except RuntimeError as exc:
        findings = "\n".join(validation_findings(outdir)) or str(exc)
        pytest.fail(f"synth failed validation:\n{findings}", pytrace=False)
    return stacks
