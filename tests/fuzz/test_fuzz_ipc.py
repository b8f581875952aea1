"""The frame protocol between the front end and its workers (smkit/serving/wire/ipc.py), fed arbitrary bytes.

:class:`FrameReceiver` is the front end's end of every worker socket. Whatever bytes arrive, in whatever
pieces: it never raises, every frame it returns is exactly what the bytes say (re-encoding the frames gives
back the prefix of the input they came from), and the bytes it holds are the rest. Frame sizes in the headers
come from the kit's own worker code, so they are trusted: a header may claim up to 4 GiB of metadata and of
body, which the receiver allocates before reading (docs/security.md, what is not checked); the sizes drawn here
stay allocatable.
"""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from smkit.serving.wire import ipc

HEADER = ipc.HEADER


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """Frames of arbitrary tags, metadata and body sizes (some larger than the scratch buffer), then arbitrary
    trailing bytes, and the sizes of the reads they arrive in."""
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        meta = draw(st.binary(max_size=64))
        body_size = draw(
            st.integers(0, 300)
            | st.sampled_from([ipc.FrameReceiver.SCRATCH - 20, ipc.FrameReceiver.SCRATCH + 7])
        )
        parts.append(ipc.frame(draw(st.binary(min_size=4, max_size=4)), meta, bytes(body_size)))
    junk = draw(st.binary(max_size=40))
    if len(junk) >= HEADER.size:  # an incomplete frame whose claimed sizes the test can allocate
        junk = junk[:4] + struct.pack("!II", junk[4] % 200, junk[8] % 300_000) + junk[12:]
    parts.append(junk)
    return b"".join(parts), draw(st.lists(st.integers(1, 70_000), max_size=20))


def _frames_of(data: bytes) -> tuple[list[tuple[bytes, bytes, bytes]], int]:
    """What the bytes say: complete frames from the start, and where the incomplete rest begins."""
    frames, at = [], 0
    while len(data) - at >= HEADER.size:
        tag, meta_size, body_size = HEADER.unpack_from(data, at)
        end = at + HEADER.size + meta_size + body_size
        if end > len(data):
            break
        start = at + HEADER.size
        frames.append((tag, data[start : start + meta_size], data[start + meta_size : end]))
        at = end
    return frames, at


@given(streams())
def test_frames_are_what_the_bytes_say_in_any_pieces(stream: tuple[bytes, list[int]]) -> None:
    data, cuts = stream
    receiver = ipc.FrameReceiver()
    got: list[tuple[bytes, bytes, bytes]] = []
    at, i = 0, 0
    while at < len(data):
        buffer = receiver.get_buffer()
        assert len(buffer) > 0
        piece = max(cuts[i % len(cuts)] if cuts else len(data), len(data) // 100)  # <= ~100 reads per case
        size = min(len(buffer), len(data) - at, piece)
        buffer[:size] = data[at : at + size]
        got.extend((tag, bytes(meta), bytes(body)) for tag, meta, body in receiver.updated(size))
        at += size
        i += 1
    expected, _ = _frames_of(data)
    assert got == expected
    receiver.close()


@given(st.binary(max_size=200))
def test_a_reply_header_of_arbitrary_bytes_parses_or_raises_a_value_error(meta: bytes) -> None:
    try:
        job_id, status, content_type, headers, pid = ipc.parse_reply(meta)
    except (struct.error, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return
    assert isinstance(content_type, str) and isinstance(status, int)
    again = (
        ipc.reply_meta(job_id, status, content_type, headers, pid)
        if isinstance(headers, dict) and headers
        else None
    )
    if again is not None and all(isinstance(v, str) for v in headers.values()):
        assert ipc.parse_reply(again)[:3] == (job_id, status, content_type)
