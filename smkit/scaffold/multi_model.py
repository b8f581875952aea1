"""``smkit init NAME --multi-model SET``: the model joins the multi-model endpoint ``config/SET.yaml``.

The first model of a set writes ``config/SET.yaml``: a multi-model endpoint on the kit's image whose model data
is the folder ``build/SET``, with the set's models listed in ``model_data.models`` (each a ``model_code/NAME``
folder that ``smkit package --config`` archives as ``build/SET/NAME.tar.gz``, the ``TargetModel`` a client
names). Each further model is added to that list, the rest of the file (the user's edits) kept as it is.
docs/multi-model.md tells the journey.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CONFIG = """\
# {name}: a multi-model endpoint, written by `smkit init NAME --multi-model {name}`. One container serves
# every model of the set; each request names one with TargetModel (NAME.tar.gz); a model loads on its first
# request and the least recently used ones are unloaded when memory runs short (docs/multi-model.md).
# Paths are relative to this file. Package: smkit package --config config/{name}.yaml; try it locally:
# smkit local-endpoint --config config/{name}.yaml; deploy: smkit deploy --config config/{name}.yaml.
name: {name}
environment: dev

image:
  source: build            # the kit's serving image: it serves multi-model endpoints

model:
  # No internet in the container: `smkit package --config` vendors each model's requirements (wheels) into
  # its archive, installed offline at the model's first load.
  network_isolation: true
  containers:
    - name: models
      model_data:
        source: multi-model
        path: ../build/{name}       # build/{name}/NAME.tar.gz of each model below
        models: [{first}]           # model_code/NAME folders; smkit init NAME --multi-model {name} adds one

endpoint:
  type: multi-model
  variants:
    - name: main
      instance_type: ml.m5.large   # CPU; memory bounds how many models stay loaded at once
      initial_instance_count: 1
"""
MODELS = re.compile(r"^(?P<head>[ \t]*models:[ \t]*\[)(?P<names>[^\]\n]*)(?P<tail>\].*)$", re.M)


class JoinError(ValueError):
    """The set's config cannot take the model; the message names the file and the fix."""


def _listed(text: str) -> list[str] | None:
    """The ``model_data.models`` of the set's only multi-model container, or None if there is none."""
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    containers = data.get("model", {}).get("containers", []) if isinstance(data, dict) else []
    found = [
        c["model_data"].get("models") or []
        for c in containers
        if isinstance(c, dict) and isinstance(c.get("model_data"), dict)
        and c["model_data"].get("source") == "multi-model"
    ]  # fmt: skip
    return list(found[0]) if len(found) == 1 else None


def join(config: Path, set_name: str, model: str) -> str:
    """The text of ``config`` (``config/SET.yaml``) with ``model`` in its set: a new config when there is
    none, else the existing one with ``model`` added to its ``models: [...]`` line."""
    if not config.exists():
        return CONFIG.format(name=set_name, first=model)
    text = config.read_text(encoding="utf-8")
    listed = _listed(text)
    match = MODELS.search(text)
    if listed is None or match is None:
        raise JoinError(
            f"{config} is not a multi-model config with a one-line `models: [...]` list under model_data; add "
            f"{model} to its model_data.models by hand, or choose another set name"
        )
    if model in listed:
        return text
    names = [n.strip() for n in match["names"].split(",") if n.strip()]
    edited = MODELS.sub(lambda m: f"{m['head']}{', '.join([*names, model])}{m['tail']}", text, count=1)
    if _listed(edited) != [*listed, model]:
        raise JoinError(f"{config}: could not add {model} to model_data.models; add it by hand")
    return edited
