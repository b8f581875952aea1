"""``model_data.source: model-package``: a model registry version, in the forms CreateModel takes."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from config_harness import raw

from smkit.config import ConfigError, parse_config
from smkit.config.model_data_rules import MODEL_PACKAGE_NAME, PACKAGE_VERSION
from smkit.config.resolved import resolve

FIELD = "model.containers[0].model_data"
IMAGE = "683313688378.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-xgboost:1.7-1"
ARN = "arn:aws:sagemaker:eu-west-1:123456789012:model-package/churn/3"


def _with(model_data: dict[str, Any], *, base: str = "realtime.yaml", **top: Any) -> dict[str, Any]:
    data = copy.deepcopy(raw(base))
    data["image"] = {"source": "dlc", "uri": IMAGE}
    data["model"]["containers"][0]["model_data"] = model_data
    data.update(top)
    return data


def test_the_name_pattern_is_botocores_word_for_word() -> None:
    model = botocore.session.get_session().get_service_model("sagemaker")
    container = model.shape_for("ContainerDefinition")
    assert container.members["ModelPackageName"].metadata["pattern"] == MODEL_PACKAGE_NAME
    # Every version smkit takes is a name CreateModel takes.
    for name in (ARN, "churn/3", "a/1"):
        assert PACKAGE_VERSION.match(name) and re.fullmatch(MODEL_PACKAGE_NAME, name)


@pytest.mark.parametrize("package", [ARN, "churn/3"])
def test_a_package_version_resolves_to_a_model_package_container(package: str) -> None:
    cfg = parse_config(
        _with(
            {"source": "model-package", "package": package, "uri": "s3://models-eu/churn/"},
            region="eu-west-1",
        ),
        source="c",
    )
    [container] = resolve(cfg, Path.cwd()).containers
    data = container.model_data
    assert (data.kind, data.package, data.uri, data.path) == (
        "model-package",
        package,
        "s3://models-eu/churn/",
        None,
    )
    assert container.image.uri == IMAGE


INVALID = [
    ({"source": "model-package", "uri": "s3://m/churn/"}, {}, "package", None, "GROUP/VERSION"),
    ({"source": "model-package", "package": "churn", "uri": "s3://m/churn/"}, {}, "package", "churn",
     "name a model package version"),
    ({"source": "model-package", "package": "churn-/3", "uri": "s3://m/churn/"}, {}, "package", "churn-/3",
     "name a model package version"),
    ({"source": "model-package", "package": ARN.replace("eu-west-1", "us-east-1"), "uri": "s3://m/churn/"}, {},
     "package", ARN.replace("eu-west-1", "us-east-1"), "copy it into a eu-west-1 group"),
    ({"source": "model-package", "package": "churn/3"}, {}, "uri", None, "ending with /"),
    ({"source": "model-package", "package": "churn/3", "uri": "s3://m/churn/model.tar.gz"}, {}, "uri",
     "s3://m/churn/model.tar.gz", "ending with /"),
    ({"source": "model-package", "package": "churn/3", "uri": "s3://m/churn/", "path": "build/model.tar.gz"},
     {}, "path", "build/model.tar.gz", "brings its own model data"),
    ({"source": "s3", "uri": "s3://m/model.tar.gz", "package": "churn/3"}, {}, "package", "churn/3",
     "applies only to source: model-package"),
]  # fmt: skip


@pytest.mark.parametrize(("model_data", "top", "field", "value", "fix"), INVALID)
def test_invalid_package_names_field_value_and_fix(
    model_data: dict[str, Any], top: dict[str, Any], field: str, value: Any, fix: str
) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(_with(model_data, region="eu-west-1", **top), source="config/realtime.yaml")
    issues = [i for i in excinfo.value.issues if i.path == f"{FIELD}.{field}"]
    assert issues, str(excinfo.value)
    assert any(i.value == value and fix in i.message for i in issues), str(excinfo.value)


def test_a_package_runs_its_own_image_given_as_a_uri() -> None:
    data = _with({"source": "model-package", "package": "churn/3", "uri": "s3://m/churn/"})
    data["image"] = {"source": "build"}
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data, source="c")
    [issue] = [i for i in excinfo.value.issues if i.path == "image.source"]
    assert issue.value == "build" and "a model package runs the image it names" in issue.message


def test_a_package_is_not_deployed_on_a_multi_model_endpoint() -> None:
    data = _with(
        {"source": "model-package", "package": "churn/3", "uri": "s3://m/churn/"}, base="multi-model.yaml"
    )
    with pytest.raises(ConfigError, match="smkit deploys a model package on a realtime, serverless or async"):
        parse_config(data, source="c")
