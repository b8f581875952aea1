"""Record the official stack's answers to the corpus: ``python tests/serving/corpus/record_toolkit.py``.

Serves every case of ``cases.py`` with sagemaker-inference 1.10.1 on Multi Model Server 1.1.11 (Java 17;
bench/reference.py builds the venv ``bench/.venvs/toolkit-corpus`` with the toolkit pins and this
environment's scikit-learn, NumPy, SciPy, pandas and joblib, so the same pickles load), sends it every
request of :data:`cases.REQUESTS` on 127.0.0.1 and writes ``toolkit_answers.json``: status, Content-Type
and body of each answer. Run once when a case or a request changes; the test only reads the file. Name
cases (``record_toolkit.py CASE ...``) to record only those and keep the other cases' answers, which needs
the stack the file was recorded with; answers of cases that no longer exist are dropped.

The cases of ``framework_cases.py`` run with their framework on ``PYTHONPATH``: the same environment layer
smkit serves them from (``smkit init --framework`` scaffolds its requirements), as a framework image has
the framework installed. The toolkit venv also holds scikit-learn and pandas, which some of those
environments lack: a framework case imports only what its own environment has, or the two stacks differ.
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[0:0] = [str(REPO), str(Path(__file__).resolve().parent)]

from cases import ANSWERS, CASES, HERE, REQUESTS  # noqa: E402
from framework_cases import FRAMEWORK_CASES, framework_environment  # noqa: E402

from bench.common import LOOPBACK, PORTS_BELOW, ManagedServer  # noqa: E402
from bench.envs import ensure_venv  # noqa: E402
from bench.reference import TOOLKIT_PINS, toolkit_spec  # noqa: E402
from smkit.process import free_port  # noqa: E402
from smkit.scaffold import REQUIREMENTS  # noqa: E402

SHARED = ("scikit-learn", "numpy", "scipy", "pandas", "joblib")


def model_folder(case_name: str, build: object, root: Path) -> Path:
    model = root / case_name
    shutil.copytree(HERE / case_name / "code", model / "code", ignore=shutil.ignore_patterns("__pycache__"))
    build(model)  # type: ignore[operator]
    return model


TRACEBACK = "\nTraceback (most recent call last):"
FRAMES_LEFT_OUT = "\n  (frames left out when recorded: they name the recording machine's files)\n"


def without_frames(text: str) -> str:
    """The toolkit's error body is the message, a newline and the traceback; the frames name this machine's
    files, so only the message and the traceback's first line are kept (the test compares the message)."""
    message, found, _ = text.partition(TRACEBACK)
    return message + TRACEBACK + FRAMES_LEFT_OUT if found else text


def answer(port: int, body: bytes, content_type: str, accept: str) -> dict[str, object]:
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=60)
    try:
        conn.request(
            "POST", "/invocations", body=body, headers={"Content-Type": content_type, "Accept": accept}
        )
        reply = conn.getresponse()
        data = reply.read()
    finally:
        conn.close()
    try:
        text: dict[str, str] = {"text": without_frames(data.decode("utf-8"))}
    except UnicodeDecodeError:
        text = {"base64": base64.b64encode(data).decode()}
    return {"status": reply.status, "content_type": reply.getheader("Content-Type"), **text}


def served(root: Path) -> list[tuple[str, str, Callable[[Path], Path], str]]:
    """Every case: its name, its program, how its model folder is made, and the ``PYTHONPATH`` it runs with."""
    plain = [
        (case.name, case.program, lambda models, case=case: model_folder(case.name, case.build, models), "")
        for case in CASES
    ]
    framework = []
    for case in FRAMEWORK_CASES:
        environment = framework_environment(case.framework)

        def build(models: Path, case=case, environment=environment) -> Path:  # type: ignore[no-untyped-def]
            case.build(environment, models / case.name)
            return models / case.name

        framework.append((case.name, case.program, build, os.pathsep.join(environment.extra_paths)))
    return plain + framework


def main() -> None:
    pins = [*TOOLKIT_PINS, *(f"{name}=={metadata.version(name)}" for name in SHARED)]
    names = sys.argv[1:]
    known = [case.name for case in CASES] + [case.name for case in FRAMEWORK_CASES]
    unknown = sorted(set(names) - set(known))
    if unknown:
        sys.exit(f"no case named {', '.join(unknown)}; the cases are {', '.join(known)}")
    # The framework cases' environments, by their scaffolded requirements: the test refuses stale answers.
    frameworks = {case.framework: list(REQUIREMENTS[case.framework]) for case in FRAMEWORK_CASES}
    recorded: dict[str, object] = {"stack": list(pins), "frameworks": frameworks, "cases": {}}
    if names:
        kept = json.loads(ANSWERS.read_text(encoding="utf-8"))
        if kept["stack"] != list(pins) or kept.get("frameworks", frameworks) != frameworks:
            sys.exit(
                f"{ANSWERS.name} was recorded with {kept['stack']} and {kept.get('frameworks')}, this "
                f"environment has {pins} and {frameworks}: record all"
            )
        recorded["cases"] = {name: answers for name, answers in kept["cases"].items() if name in known}
    python = ensure_venv("toolkit-corpus", pins)
    with tempfile.TemporaryDirectory(prefix="smkit-corpus-") as tmp:
        for name, program, build, pythonpath in served(Path(tmp) / "models"):
            if names and name not in names:
                continue
            model = build(Path(tmp) / "models")
            work = Path(tmp) / "work" / name
            work.mkdir(parents=True)
            port = free_port(LOOPBACK, below=PORTS_BELOW)  # MMS refuses ports from 32767
            spec = toolkit_spec(
                name=name, model_dir=model, work_dir=work, port=port, workers=1, python=python
            )
            env = {**spec.env, "SAGEMAKER_PROGRAM": program, "PYTHONPATH": pythonpath}
            server = ManagedServer(dataclasses.replace(spec, env=env), work / "server.log")
            try:
                server.wait_ready()
                answers = {r.name: answer(port, r.body, r.content_type, r.accept) for r in REQUESTS}
            finally:
                server.stop()
            recorded["cases"][name] = answers  # type: ignore[index]
            print(f"{name}: {sorted({a['status'] for a in answers.values()})}", flush=True)
    ANSWERS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
