"""One construct per SageMaker serving concept.

Constructs take typed keyword-only arguments and never read config files, CDK context or environment
variables; :mod:`smkit.cdk.serving_stack` maps a deployment config onto them.
"""
