"""What the front end and a model worker say to each other beyond the frame format of :mod:`.ipc`.

- Streamed replies (:mod:`smkit.serving.worker.streams`): the worker sends ``STRM`` (the head, with the
  first chunk), ``CHNK`` per chunk and ``DONE``; the front end sends ``CANC`` when the client has gone and
  ``MESG`` per WebSocket message of a bidirectional session (:mod:`smkit.serving.worker.bidi`).
- Internal routes: requests only the front end sends (stateful sessions and adapters), with a method no
  HTTP client can send (the parser accepts only the standard methods).
- Worker features: what a worker takes part in, in its configuration and its ``REDY`` frame
  (:mod:`smkit.serving.front.pinning`).
"""

from __future__ import annotations

import struct

# Streamed replies and bidirectional sessions.
STREAM = b"STRM"  # head of a streamed reply: reply_meta, body = the first chunk
CHUNK = b"CHNK"  # one chunk: meta = job id
DONE = b"DONE"  # end of a stream: meta = job id, body = the error message (empty: complete)
CANCEL = b"CANC"  # front end -> worker: the client is gone, stop the stream (meta = job id)
MESSAGE = b"MESG"  # front end -> worker: a WebSocket message of a session (meta = job id)
STREAM_JOB_ID = struct.Struct("!Q")  # the meta of CHNK, DONE, CANC and MESG frames
BIDI_PATH = "/invocations-bidirectional-stream"
TEXT = b"t"  # first byte of a session message: a text frame
BINARY = b"b"  # first byte of a session message: a binary frame

# Routes only the front end sends (smkit/serving/front/sessions.py and adapters.py).
INTERNAL = "SMKIT"
SESSION_START = "/session/start"
SESSION_CLOSE = "/session/close"
ADAPTER_LOAD = "/adapter/load"
ADAPTER_UNLOAD = "/adapter/unload"

# Keys of the worker's configuration and of its REDY frame.
CONFIG_FD = "pinned_fd"
FEATURE_PINNED = "pinned"  # its handler takes part in stateful sessions or adapters (jobs only it may run)
FEATURE_DISPATCH = "dispatch"  # it reads its own queue, where the front end may put any job while it is idle
FEATURE_ADAPTERS = "adapters"  # the handler defines load_adapter_fn / unload_adapter_fn

# The worker template (smkit/serving/worker/template.py) and the front end that asks it for workers
# (smkit/serving/front/forking.py).
TEMPLATE_NAME = "smkit-template"  # its process name (/proc/PID/comm); a worker's is "smkit-worker"
# Configuration keys naming the descriptors a worker inherits, in the order they travel (SCM_RIGHTS).
FD_KEYS = ("fd", "queue_fd", "board_fd", CONFIG_FD)


def describe_done(error: bytes) -> str:
    """A ``DONE`` frame's error text."""
    return error.decode("utf-8", "replace")
