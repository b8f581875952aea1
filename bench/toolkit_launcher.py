"""Start the official sagemaker-inference 1.10.1 toolkit + Multi Model Server 1.1.11 for the benchmark.

Run by the toolkit's own venv (see ``bench/reference.py``), never imported by smkit. Usage:
``python toolkit_launcher.py CONFIG_PATH``. ``SAGEMAKER_BASE_DIR`` must be set in the environment
before this process starts (the toolkit reads it at import, docs/toolchain.md).

Two changes keep the reference off shared machine state and nothing else: the generated MMS
properties are written to CONFIG_PATH instead of ``/etc/sagemaker-mms.properties``, and the
addresses it generates (``http://0.0.0.0:PORT``) are rewritten to 127.0.0.1. Everything else -
handler service, worker count, Java frontend, Python workers - is the toolkit's default path.
"""

import sys

from sagemaker_inference import model_server

_generate = model_server._generate_mms_config_properties


def _loopback_properties(env, handler_service=None):
    return _generate(env, handler_service).replace("http://0.0.0.0:", "http://127.0.0.1:")


model_server._generate_mms_config_properties = _loopback_properties
model_server.MMS_CONFIG_FILE = sys.argv[1]
model_server.start_model_server()
