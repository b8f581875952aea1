"""In-process checks of the layers under the HTTP adapter: env, codecs, hook binding, context."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from serving_models import Models

from smkit.hosting.env import ServingEnv, ServingEnvError
from smkit.serving.wire.errors import BadRequest, NotAcceptable, UnsupportedMediaType
from smkit.serving.worker import codecs
from smkit.serving.worker.context import Context
from smkit.serving.worker.handler import ModelHandler


@pytest.mark.parametrize(
    ("environ", "limit"),
    [
        ({}, 6_291_456),
        ({"SMKIT_PROFILE": "serverless"}, 4 * 1024 * 1024),
        ({"SMKIT_PROFILE": "serverless", "SAGEMAKER_MAX_PAYLOAD_IN_MB": "2"}, 2 * 1024 * 1024),
        ({"SAGEMAKER_MAX_PAYLOAD_IN_MB": "100"}, 100 * 1024 * 1024),
    ],
)
def test_payload_limits(environ: dict[str, str], limit: int) -> None:
    assert ServingEnv.from_environ(environ).max_payload_bytes == limit


def test_environment_defaults_and_overrides() -> None:
    default = ServingEnv.from_environ({})
    assert (default.port, default.timeout_seconds, default.default_accept) == (8080, 60.0, "application/json")
    env = ServingEnv.from_environ(
        {
            "SAGEMAKER_BIND_TO_PORT": "9000",
            "SAGEMAKER_MODEL_SERVER_TIMEOUT": "5",
            "SAGEMAKER_MULTI_MODEL": "TRUE",
            "SAGEMAKER_PROGRAM": "serve.py",
            "SMKIT_MODEL_CACHE_SETTING": "disabled",
        }
    )
    assert (env.port, env.timeout_seconds, env.multi_model, env.module_name) == (9000, 5.0, True, "serve")
    assert env.model_cache_enabled is False


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"SAGEMAKER_MULTI_MODEL": "maybe"}, "SAGEMAKER_MULTI_MODEL='maybe' is not a boolean"),
        ({"SAGEMAKER_BIND_TO_PORT": "0"}, "SAGEMAKER_BIND_TO_PORT='0' is below 1"),
        ({"SAGEMAKER_MODEL_SERVER_WORKERS": "1.5"}, "SAGEMAKER_MODEL_SERVER_WORKERS='1.5' is not a whole"),
        ({"SMKIT_PROFILE": "edge"}, "SMKIT_PROFILE='edge' is not one of realtime, serverless, async, batch"),
        ({"SAGEMAKER_PROGRAM": "../x.py"}, "must be a file name inside model_dir/code"),
    ],
)
def test_bad_environment_values_are_named(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ServingEnvError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ServingEnv.from_environ(environ)


def test_parse_accept() -> None:
    assert codecs.parse_accept("*/*", "text/csv") == ["text/csv"]
    # RFC 9110 section 12.5.1: ordered by q-value (ties keep the client's order); q=0 is "not acceptable".
    assert codecs.parse_accept("image/png, text/csv;q=0.5, */*") == [
        "image/png",
        "application/json",
        "text/csv",
    ]
    assert codecs.parse_accept("text/csv;q=0.5, application/json") == ["application/json", "text/csv"]
    assert codecs.parse_accept("application/json;q=0, */*") == ["text/csv"]
    assert codecs.parse_accept("text/csv;q=0") == []
    with pytest.raises(NotAcceptable, match="text/csv;q=0"):
        codecs.encode([1], "text/csv;q=0")


def test_decoders_match_the_toolkit_on_good_input_and_refuse_bad_input() -> None:
    for body in ("1,2\n3,4", "1,,3", "1.5,,3"):
        toolkit = np.genfromtxt(io.StringIO(body), dtype=None, delimiter=",")
        decoded = codecs.decode(body, "text/csv")
        assert decoded.dtype == toolkit.dtype
        np.testing.assert_array_equal(decoded, toolkit)
    with pytest.raises(BadRequest, match="not rectangular CSV"):
        codecs.decode("1,2\n3", "text/csv")
    with pytest.raises(UnsupportedMediaType, match="missing Content-Type"):
        codecs.decode(b"x", None)
    with pytest.raises(NotAcceptable, match="image/png"):
        codecs.encode([1], "image/png")


def test_npz_round_trip_of_a_sparse_matrix() -> None:
    import scipy.sparse

    matrix = scipy.sparse.csr_matrix(np.eye(3))
    decoded = codecs.decode(codecs.encode_npz(matrix), "application/x-npz")
    assert scipy.sparse.issparse(decoded) and (decoded != matrix).nnz == 0
    dense = codecs.decode(codecs.encode_npz(np.arange(3)), "application/x-npz")
    np.testing.assert_array_equal(dense["arr_0"], np.arange(3))


def test_context_api_is_case_insensitive_and_collects_response_headers() -> None:
    context = Context(model_name="m", model_dir="/m", headers={"Content-Type": "text/csv", "X-A": "1"})
    assert context.get_request_header(0, "content-type") == "text/csv"
    assert context.request_processor[0].get_request_properties()["x-a"] == "1"
    context.set_response_header(0, "X-Amzn-SageMaker-Custom-Attributes", "k=v")
    assert context.response_headers == {"X-Amzn-SageMaker-Custom-Attributes": "k=v"}
    assert context.system_properties["model_dir"] == "/m"


def test_transform_fn_with_input_fn_is_a_value_error(models: Models) -> None:
    handler = ModelHandler(
        name="mixed", model_dir=str(models.mixed), env=ServingEnv.from_environ({}), isolated=True
    )
    with pytest.raises(ValueError, match="transform_fn: is defined together with"):
        handler.load()


def test_missing_model_fn_asks_for_one(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    handler = ModelHandler(
        name="empty", model_dir=str(tmp_path), env=ServingEnv.from_environ({}), isolated=True
    )
    with pytest.raises(Exception, match="Please provide a model_fn implementation"):
        handler.load()


def test_error_bodies_hide_the_traceback_unless_debug() -> None:
    from smkit.serving.wire.reply import error_reply

    try:
        raise RuntimeError("inner detail")
    except RuntimeError as exc:
        quiet, loud = error_reply(exc, debug=False), error_reply(exc, debug=True)
    assert quiet.status == 500 and b"Traceback" not in quiet.body and b"inner detail" in quiet.body
    assert b"Traceback" in loud.body and b"test_error_bodies_hide_the_traceback_unless_debug" in loud.body


def test_frame_receiver_reads_frames_in_place_whatever_the_reads_deliver() -> None:
    """The front end's receiver: any read sizes, several frames per read, frames larger than its buffer."""
    from smkit.serving.wire import ipc

    meta = ipc.reply_meta(7, 200, "application/octet-stream", {"x-a": "1"}, 1234)
    sizes = (0, 1, 300, 700_000, 5, ipc.FrameReceiver.SCRATCH, 2_097_152, 64 * 1024, 3)
    frames = [(ipc.REPLY, meta, bytes([i]) * size) for i, size in enumerate(sizes)]
    wire = b"".join(ipc.frame(tag, meta, body) for tag, meta, body in frames)
    for read_size in (1, 4093, 100_000, 10_000_000):
        receiver = ipc.FrameReceiver()
        parsed, at = [], 0
        while at < len(wire):
            into = receiver.get_buffer()
            assert len(into) > 0
            count = min(len(into), read_size, len(wire) - at)
            into[:count] = wire[at : at + count]
            at += count
            parsed += receiver.updated(count)
        assert [(tag, meta, bytes(body)) for tag, meta, body in parsed] == frames, read_size


def test_job_queue_hands_each_job_to_one_reader_in_order_small_and_large() -> None:
    """The shared queue: jobs come out whole and in order; a body past the inline limit rides in a file."""
    import socket

    from smkit.serving.wire import ipc

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    headers = [(b"a", b"\xe9"), (b"content-type", b"text/csv")]
    bodies = [b"", b"1,2", b"y" * (ipc.INLINE_BODY + 1), b"z" * 3_000_000, b"last", b"0123456789" * 20_000]
    for job_id, body in enumerate(bodies, 1):
        # In the parts a request body arrives in: one, or (the last) more parts than writev takes at once.
        step = 10 if job_id == len(bodies) else max(1, len(body))
        parts = [body[i : i + step] for i in range(0, len(body), step)]
        message, fd = ipc.job_message(job_id, 12.5, 72.5, "POST", "/é", headers, parts)
        assert (fd >= 0) == (len(body) > ipc.INLINE_BODY)
        ipc.send_job(ours, message, fd)
        if fd >= 0:
            os.close(fd)  # the message holds its own reference
    board = ipc.Scoreboard.create(2)
    reader = ipc.JobReader(theirs, board.landing(1))
    for job_id, body in enumerate(bodies, 1):
        assert reader.read() == ((job_id, 12.5, 72.5, "POST", "/é", headers), body)
        assert board.taken(1) == job_id and board.taken(0) == 0  # written by the receiving call itself
    ours.close()
    assert reader.read() is None  # the front end closed the queue
    theirs.close()


def test_scoreboard_slots_are_shared_through_the_descriptor() -> None:
    from smkit.serving.wire import ipc

    board = ipc.Scoreboard.create(3)
    other = ipc.Scoreboard(board.fd, 3)  # what a worker maps from the inherited descriptor
    assert board.running(1) == (0, 0.0)
    other.landing(1)[:] = ipc.JOB_ID.pack(42)  # as the kernel writes it while the worker takes job 42
    other.run(1, 42)
    other.extend(1, 9.5)
    assert board.running(1) == (42, 10.0) and board.taken(1) == 42
    assert board.running(0)[0] == 0 and board.running(2)[0] == 0 and board.taken(2) == 0
    other.finish(1)
    assert board.running(1) == (0, 0.0) and board.taken(1) == 0


def test_reply_metadata_round_trips_content_types_and_headers() -> None:
    from smkit.serving.wire import ipc

    for status, content_type, headers in [
        (200, "application/json", {}),
        (504, "text/csv; charset=utf-8", {"X-Custom": "é", "Retry-After": "1"}),
        (599, "", {"a\u0000b": "\u0000"}),
    ]:
        meta = ipc.reply_meta(2**40, status, content_type, headers, 4_000_000)
        assert ipc.parse_reply(meta) == (2**40, status, content_type, headers, 4_000_000)
