"""CDK stacks: thin compositions of :mod:`stacks.constructs`, driven by a validated deployment config.

Entry points: :func:`stacks.serving_stage.add_serving_stacks` (any scope) and
:class:`stacks.serving_stage.ServingStage` (a deployable stage, used by the CI pipeline).
"""
