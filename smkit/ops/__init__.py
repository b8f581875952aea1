"""The operations layer: each operation the command line, the release scripts, the emulator and the tests
perform, written once.

- :mod:`smkit.ops.server_process`: start a server process on 127.0.0.1 and wait until it answers (the
  serving runtime of the local endpoint and of local batch transform, moto's server), with one port rule and
  one readiness rule, in a blocking and an ``asyncio`` face;
- :mod:`smkit.ops.cdk_cli`: the pinned AWS CDK CLI, found and run one way;
- :mod:`smkit.ops.deploy_pipeline`: one deploy pipeline (package, synth, deploy, wait, record) that
  ``smkit deploy``, the release scripts and ``smkit emulator deploy`` run with their own targets;
- :mod:`smkit.ops.package_by_config`: packaging a config's model data from ``model_code/``, for the CLI and
  ``scripts/package_models.py``, stale by one record of each build (:class:`smkit.project.BuildRecord`).

Nothing here parses arguments or prints for a user: the callers (:mod:`smkit.cli`, :mod:`smkit.release`,
:mod:`smkit.emulator`, :mod:`smkit.local`, :mod:`smkit.batch`) decide what to say.
"""
