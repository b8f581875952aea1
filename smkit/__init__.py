"""smkit: SageMaker inference deployment kit.

Layers (arrows point one way): a CDK app (the repository's ``app.py -> stacks``, or yours) ->
:mod:`smkit.cdk` (stacks -> constructs) -> :mod:`smkit.config`. Only :mod:`smkit.cdk` imports the CDK
libraries, and no other part of smkit imports it (the CLI runs its app as a process), so the serving
runtime never imports CDK; packaging never imports serving; :mod:`smkit.cli` is the only module that knows
every other one.
"""

__version__ = "0.1.0"
