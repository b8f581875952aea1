"""smkit: SageMaker inference deployment kit.

Layers (arrows point one way): ``app.py -> stacks -> constructs -> smkit.config``; the serving runtime
never imports CDK; packaging never imports serving; :mod:`smkit.cli` is the only module that knows every
other one.
"""

__version__ = "0.1.0"
