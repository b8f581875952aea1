"""What a pickle-format file would import, read without running it (standard library only).

``pickle.load`` imports every global the stream names (``GLOBAL``, ``STACK_GLOBAL``, ``INST``) and calls
whatever the stream reduces, so the globals are what decides whether loading a file can run code. This
module walks the opcodes with :mod:`pickletools` and a small symbolic stack (no object is ever built) and
returns every ``(module, name)`` a load would import. It reads the containers models come in:

- plain pickles (protocols 0-5), several in a row (torch's legacy format);
- joblib files, whose NumPy arrays are raw bytes in the middle of the pickle stream (joblib's
  ``NumpyArrayWrapper``): their size is worked out from the wrapper's shape and dtype and skipped;
  joblib's zlib, gzip, bz2, xz and lzma compression;
- zip archives (``torch.save``'s format, TorchScript, ``.npz``): every ``*.pkl`` member, and every
  ``.npy`` member of object dtype (its data is a pickle);
- ``.npy`` files of object dtype.

Anything it cannot read to the end (a truncated stream, a computed global name, the copyreg extension
registry, lz4 compression) is reported as a :class:`ScanError`, so a caller can refuse the file: an
allowlist is only a defence when the walk sees every global. Why not picklescan, modelscan or fickling:
docs/security.md (all three stop at the first joblib array and miss what follows).
"""

from __future__ import annotations

import ast
import bz2
import gzip
import io
import lzma
import math
import pickletools
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# Files that are pickles by name even when their first bytes do not say so (protocols 0 and 1 have no header).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".pt", ".pth", ".ckpt", ".sav")
WHEEL_SUFFIX = ".whl"
PROTO = b"\x80"
ZIP_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"
GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
LZMA_MAGIC = b"]\x00\x00"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
JOBLIB_WRAPPER = ("joblib.numpy_pickle", "NumpyArrayWrapper")
NUMPY_DTYPE = {("numpy", "dtype"), ("numpy.core.multiarray", "dtype"), ("numpy._core.multiarray", "dtype")}
SKIP_CHUNK = 1 << 20
MAX_DEPTH = 4  # nested pickles (an object array inside a joblib file inside a zip)
_ITEMSIZE = re.compile(r"^[<>|=]?[a-zA-Z](\d+)$")


class ScanError(Exception):
    """The file cannot be read to the end, so what it imports is unknown; ``str()`` says where and why."""


@dataclass(frozen=True)
class Global:
    """A global the stream imports: ``module`` and ``name`` as ``pickle.Unpickler.find_class`` gets them."""

    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True)
class Obj:
    """An object the stream would build: what it calls, with which arguments; ``state`` after BUILD."""

    callable: Any
    args: Any
    state: list[Any] = field(default_factory=list, compare=False)


class _Opaque:
    """A value the walk does not need to know (bytes, buffers, persistent ids)."""


OPAQUE = _Opaque()
_MARK = object()


@dataclass(frozen=True)
class Finding:
    """The globals of one pickle stream, ``where`` naming it inside its file (``archive/data.pkl``)."""

    where: str
    globals: tuple[Global, ...]


def is_candidate(path: Path, head: bytes) -> bool:
    """Whether a file with these first bytes (or name) may hold a pickle and must be scanned.

    Wheels (``code/wheels/*.whl``) are not: pip installs them as code, which no pickle check covers, and
    their packages' own test data (joblib's old pickles) is never loaded by a model."""
    if path.name.lower().endswith(WHEEL_SUFFIX):
        return False
    return (
        _is_pickle_header(head)
        or head.startswith((ZIP_MAGIC, NPY_MAGIC, GZIP_MAGIC, BZ2_MAGIC, XZ_MAGIC, LZMA_MAGIC, LZ4_MAGIC))
        or path.name.lower().endswith(PICKLE_SUFFIXES)
        or (len(head) >= 2 and _is_zlib(head))
    )


def _is_pickle_header(head: bytes) -> bool:
    return len(head) >= 2 and head[:1] == PROTO and 2 <= head[1] <= 5


def _is_zlib(head: bytes) -> bool:
    return head[0] == 0x78 and (head[0] * 256 + head[1]) % 31 == 0


def scan_file(path: Path) -> list[Finding]:
    """Every pickle stream in ``path`` with its globals; ``[]`` when it holds none. Raises :class:`ScanError`."""
    with path.open("rb") as f:
        head = f.read(8)
        f.seek(0)
        named = path.name.lower().endswith(PICKLE_SUFFIXES)
        return _scan_stream(f, head, label="", named=named, depth=0)


def _scan_stream(f: IO[bytes], head: bytes, *, label: str, named: bool, depth: int) -> list[Finding]:
    if depth > MAX_DEPTH:
        raise ScanError(f"{label or 'file'}: pickles nested more than {MAX_DEPTH} deep")
    if head.startswith(ZIP_MAGIC):
        return _scan_zip(f, depth)
    if head.startswith(NPY_MAGIC):
        return _scan_npy(f, label or "array", depth)
    if head.startswith(LZ4_MAGIC):
        raise ScanError("lz4-compressed: cannot be read without lz4; dump with compress='zlib' (or none)")
    opened = _decompressor(f, head)
    if opened is not None:
        try:
            inner = opened.read(8)
        except (ScanError, OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
            if named:
                raise ScanError(f"{label or 'file'}: compressed, but not readable ({exc})") from None
            return []  # first bytes that only looked like a compression header (a text file starting 'x')
        if not _is_pickle_header(inner) and not named:
            return []  # a compressed file of something else (a .csv.gz): no pickle inside
        return _scan_pickles(_Reader(opened, inner), label or "compressed stream", depth)
    if _is_pickle_header(head) or named:
        return _scan_pickles(_Reader(f), label or "pickle", depth)
    return []


def _decompressor(f: IO[bytes], head: bytes) -> Any:
    if head.startswith(GZIP_MAGIC):
        return gzip.GzipFile(fileobj=f, mode="rb")
    if head.startswith(BZ2_MAGIC):
        return bz2.BZ2File(f, "rb")
    if head.startswith((XZ_MAGIC, LZMA_MAGIC)):
        return lzma.LZMAFile(f, "rb")
    if len(head) >= 2 and _is_zlib(head):
        return io.BufferedReader(_ZlibReader(f), SKIP_CHUNK)
    return None


class _ZlibReader(io.RawIOBase):
    """A zlib stream (joblib's ``compress='zlib'``) read as a file, in bounded chunks."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._z = zlib.decompressobj()
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._pending:
            if self._z.eof:
                return 0
            tail = self._z.unconsumed_tail
            data = tail if tail else self._raw.read(SKIP_CHUNK)
            if not data:
                raise ScanError("the zlib stream is truncated")
            try:
                self._pending = memoryview(self._z.decompress(data, SKIP_CHUNK))
            except zlib.error as exc:
                raise ScanError(f"not a valid zlib stream ({exc})") from None
        n = min(len(view), len(self._pending))
        view[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _seekable(raw: IO[bytes]) -> bool:
    try:
        return isinstance(raw, io.BufferedReader | io.FileIO) and raw.seekable()
    except (OSError, ValueError):
        return False


class _Reader:
    """What :func:`pickletools.genops` reads from: ``read``, ``readline`` and a ``tell`` that counts, over any
    stream (decompressed ones cannot seek), with bytes already read to sniff it put back in front."""

    def __init__(self, raw: IO[bytes], head: bytes = b"") -> None:
        self._raw = raw
        self._head = head
        self._pos = 0

    def push_back(self, data: bytes) -> None:
        self._head = data + self._head
        self._pos -= len(data)

    def tell(self) -> int:
        return self._pos

    def seek_ahead(self, count: int) -> int:
        """Skip up to ``count`` bytes by seeking where the stream allows it; return what is left to read."""
        if self._head or count <= 0 or not _seekable(self._raw):
            return count
        self._raw.seek(count, io.SEEK_CUR)
        self._pos += count
        return 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            out, self._head = self._head + self._raw.read(), b""
        elif self._head:
            out, self._head = self._head[:size], self._head[size:]
            if len(out) < size:
                out += self._raw.read(size - len(out))
        else:
            out = self._raw.read(size)
        self._pos += len(out)
        return out

    def readline(self, size: int | None = -1) -> bytes:
        line = bytearray()
        limit = 1 << 20 if size is None or size < 0 else size
        while not line.endswith(b"\n") and len(line) < limit:
            byte = self.read(1)
            if not byte:
                break
            line += byte
        return bytes(line)


def _scan_zip(f: IO[bytes], depth: int) -> list[Finding]:
    findings: list[Finding] = []
    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ScanError(f"not a readable zip archive ({exc})") from None
    with archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir():
                continue
            if name.endswith(".pkl") or name.endswith(".npy"):
                try:
                    with archive.open(info) as member:
                        head = member.read(8)
                    with archive.open(info) as member:
                        findings.extend(
                            _scan_stream(
                                member, head, label=name, named=name.endswith(".pkl"), depth=depth + 1
                            )
                        )
                except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
                    raise ScanError(f"{name}: cannot be read ({exc})") from None
    return findings


def _scan_npy(f: IO[bytes], label: str, depth: int) -> list[Finding]:
    """A ``.npy`` array: only object arrays hold a pickle (``np.save`` with ``allow_pickle``)."""
    magic = f.read(8)
    size_bytes = 2 if magic[6] == 1 else 4
    header_len = int.from_bytes(f.read(size_bytes), "little")
    if header_len > 1 << 20:
        raise ScanError(f"{label}: .npy header of {header_len} bytes")
    try:
        header = ast.literal_eval(f.read(header_len).decode("latin1"))
        descr = header["descr"]
    except (ValueError, SyntaxError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ScanError(f"{label}: not a readable .npy header ({exc})") from None
    if "O" not in str(descr):
        return []
    return _scan_pickles(_Reader(f), label, depth)


def _scan_pickles(f: _Reader, label: str, depth: int) -> list[Finding]:
    """One pickle, then any that follow it directly (each starting with a protocol 2+ header)."""
    found = [Finding(label, tuple(_walk(f, label, depth)))]
    while True:
        head = f.read(2)
        f.push_back(head)
        if not _is_pickle_header(head):
            return found
        found.append(Finding(label, tuple(_walk(f, label, depth))))


def _walk(f: _Reader, label: str, depth: int) -> Iterator[Global]:
    """The globals of one pickle stream up to its STOP; raises :class:`ScanError` if it does not parse."""
    machine = _Machine(label)
    try:
        for opcode, arg, pos in pickletools.genops(f):  # type: ignore[arg-type]  # read/readline/tell
            found = machine.step(opcode.name, arg, pos or 0)
            if found is not None:
                yield found
            if opcode.name == "BUILD":
                yield from _after_build(machine, f, label, depth)
            if opcode.name == "STOP":
                return
    except ScanError:
        raise
    except (ValueError, EOFError, IndexError, KeyError, TypeError, UnicodeDecodeError, OverflowError) as exc:
        raise ScanError(f"{label}: not a readable pickle ({exc})") from None
    raise ScanError(f"{label}: the pickle stream ends without STOP")


def _after_build(machine: _Machine, f: _Reader, label: str, depth: int) -> Iterator[Global]:
    """joblib writes an array's bytes right after its ``NumpyArrayWrapper`` is built: skip (or scan) them."""
    top = machine.stack[-1] if machine.stack else None
    if not (isinstance(top, Obj) and top.callable == Global(*JOBLIB_WRAPPER)):
        return
    state = _as_dict(top.state[-1] if top.state else None)
    shape, dtype = state.get("shape"), state.get("dtype")
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ScanError(f"{label}: a joblib array wrapper without a readable shape ({shape!r})")
    typestr, elsize = _dtype_of(dtype)
    if typestr is None:
        raise ScanError(f"{label}: a joblib array wrapper without a readable dtype")
    if typestr.lstrip("<>|=").startswith("O"):
        # Object arrays are written as a pickle of their own (joblib's write_array).
        for finding in _scan_pickles(f, label, depth + 1):
            yield from finding.globals
    else:
        if state.get("numpy_array_alignment_bytes") is not None:
            padding = f.read(1)
            if len(padding) != 1:
                raise ScanError(f"{label}: truncated before a joblib array")
            _skip(f, padding[0], label)
        itemsize = elsize if elsize is not None and elsize > 0 else _itemsize(typestr)
        if itemsize is None:
            raise ScanError(f"{label}: a joblib array of dtype {typestr!r} whose item size is unknown")
        _skip(f, math.prod(shape) * itemsize, label)
    machine.stack[-1] = OPAQUE


def _as_dict(value: Any) -> dict[Any, Any]:
    if isinstance(value, dict):
        return value
    return {}


def _dtype_of(value: Any) -> tuple[str | None, int | None]:
    """``(type string, element size)`` of a pickled ``numpy.dtype('f8', False, True)`` with its state."""
    if not (isinstance(value, Obj) and any(value.callable == Global(*g) for g in NUMPY_DTYPE)):
        return None, None
    args = value.args if isinstance(value.args, tuple) else ()
    typestr = args[0] if args and isinstance(args[0], str) else None
    state = value.state[-1] if value.state else None
    elsize = state[5] if isinstance(state, tuple) and len(state) > 5 and isinstance(state[5], int) else None
    return typestr, elsize


def _itemsize(typestr: str) -> int | None:
    match = _ITEMSIZE.match(typestr)
    return int(match.group(1)) if match else None


def _skip(f: _Reader, count: int, label: str) -> None:
    count = f.seek_ahead(count)
    while count > 0:
        chunk = f.read(min(SKIP_CHUNK, count))
        if not chunk:
            raise ScanError(f"{label}: truncated inside a joblib array")
        count -= len(chunk)


CONSTANTS = frozenset(
    {
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "STRING", "BINSTRING",
        "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "FLOAT", "BINFLOAT",
    }
)  # fmt: skip
OPAQUE_PUSH = frozenset({"BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8", "NEXT_BUFFER"})
NOOPS = frozenset({"PROTO", "FRAME", "READONLY_BUFFER", "STOP"})
GLOBAL_OPCODES = frozenset({"GLOBAL", "INST", "STACK_GLOBAL", "EXT1", "EXT2", "EXT4"})
OBJECT_OPCODES = frozenset({"OBJ", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "BUILD", "PERSID", "BINPERSID"})
MEMO_OPCODES = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET"})


class _Machine:
    """The unpickler's stack and memo, holding names and constants instead of objects."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.stack: list[Any] = []
        self.marks: list[list[Any]] = []
        self.memo: dict[int, Any] = {}

    def _pop_mark(self) -> list[Any]:
        items = self.stack
        if not self.marks:
            raise ScanError(f"{self.label}: an opcode needs a MARK the stream never set")
        self.stack = self.marks.pop()
        return items

    def _pop(self) -> Any:
        if not self.stack:
            raise ScanError(f"{self.label}: the stream pops an empty stack")
        return self.stack.pop()

    def step(self, name: str, arg: Any, pos: int) -> Global | None:
        """Run one opcode on the stack; the global it names, if it names one."""
        if name in GLOBAL_OPCODES:
            return self._global(name, arg, pos)
        if name in OBJECT_OPCODES:
            self._object(name, pos)
        elif name in MEMO_OPCODES:
            self._memo(name, arg, pos)
        else:
            self._value(name, arg, pos)
        return None

    def _value(self, name: str, arg: Any, pos: int) -> None:  # noqa: C901, PLR0912 - one opcode table
        """Constants, containers and marks."""
        stack = self.stack
        if name in CONSTANTS:
            stack.append(arg)
        elif name in OPAQUE_PUSH:
            stack.append(OPAQUE)
        elif name in NOOPS:
            pass
        elif name == "NONE":
            stack.append(None)
        elif name in ("NEWTRUE", "NEWFALSE"):
            stack.append(name == "NEWTRUE")
        elif name == "EMPTY_TUPLE":
            stack.append(())
        elif name in ("EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET"):
            stack.append({} if name == "EMPTY_DICT" else [])
        elif name == "MARK":
            self.marks.append(stack)
            self.stack = []
        elif name in ("TUPLE", "LIST", "FROZENSET"):
            items = self._pop_mark()
            self.stack.append(tuple(items) if name == "TUPLE" else list(items))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            if len(stack) < n:
                raise ScanError(f"{self.label}: {name} at byte {pos} on a short stack")
            top = tuple(stack[-n:])
            del stack[-n:]
            stack.append(top)
        elif name == "DICT":
            items = self._pop_mark()
            self.stack.append(_pairs(items))
        elif name in ("APPEND", "APPENDS", "ADDITEMS", "SETITEM", "SETITEMS"):
            self._extend(name)
        elif name == "POP":
            self._pop()
        elif name == "POP_MARK":
            self._pop_mark()
        elif name == "DUP":
            stack.append(stack[-1] if stack else self._pop())
        else:
            raise ScanError(f"{self.label}: opcode {name} at byte {pos} is not understood")

    def _memo(self, name: str, arg: Any, pos: int) -> None:
        stack = self.stack
        if name in ("PUT", "BINPUT", "LONG_BINPUT"):
            self.memo[int(arg)] = stack[-1] if stack else self._pop()
        elif name == "MEMOIZE":
            self.memo[len(self.memo)] = stack[-1] if stack else self._pop()
        else:  # GET, BINGET, LONG_BINGET
            if int(arg) not in self.memo:
                raise ScanError(f"{self.label}: memo entry {arg} read at byte {pos} was never stored")
            stack.append(self.memo[int(arg)])

    def _global(self, name: str, arg: Any, pos: int) -> Global:
        """The opcodes that name a global: what the scan is for."""
        if name in ("GLOBAL", "INST"):
            module, _, attr = str(arg).partition(" ")
            found = Global(module, attr)
            if name == "INST":
                self.stack = self.marks.pop() if self.marks else self._no_mark(pos)
                self.stack.append(Obj(found, OPAQUE))
            else:
                self.stack.append(found)
            return found
        if name == "STACK_GLOBAL":
            attr, module = self._pop(), self._pop()
            if not (isinstance(module, str) and isinstance(attr, str)):
                raise ScanError(f"{self.label}: a global at byte {pos} whose name is computed, not written")
            found = Global(module, attr)
        else:  # EXT1, EXT2, EXT4: the copyreg extension registry
            found = Global("copyreg", f"<extension {arg}>")
        self.stack.append(found)
        return found

    def _object(self, name: str, pos: int) -> None:
        """The opcodes that call or build an object (kept as :class:`Obj`, never run)."""
        stack = self.stack
        if name == "OBJ":
            items = self._pop_mark()
            if not items:
                raise ScanError(f"{self.label}: OBJ at byte {pos} without a class")
            self.stack.append(Obj(items[0], tuple(items[1:])))
        elif name == "REDUCE" or name == "NEWOBJ":
            args, func = self._pop(), self._pop()
            stack.append(Obj(func, args))
        elif name == "NEWOBJ_EX":
            _kwargs, args, cls = self._pop(), self._pop(), self._pop()
            stack.append(Obj(cls, args))
        elif name == "BUILD":
            state = self._pop()
            if not stack:
                raise ScanError(f"{self.label}: BUILD at byte {pos} on an empty stack")
            if isinstance(stack[-1], Obj):
                stack[-1].state.append(state)
        elif name == "PERSID":
            stack.append(OPAQUE)
        else:  # BINPERSID
            self._pop()
            stack.append(OPAQUE)

    def _no_mark(self, pos: int) -> list[Any]:
        raise ScanError(f"{self.label}: INST at byte {pos} without a MARK")

    def _extend(self, name: str) -> None:
        if name in ("APPEND", "SETITEM"):
            items = [self._pop()] if name == "APPEND" else [self._pop(), self._pop()][::-1]
        else:
            items = self._pop_mark()
        if not self.stack:
            raise ScanError(f"{self.label}: {name} on an empty stack")
        target = self.stack[-1]
        if name in ("SETITEM", "SETITEMS") and isinstance(target, dict):
            target.update(_pairs(items))
        elif isinstance(target, list):
            target.extend(items)


def _pairs(items: list[Any]) -> dict[Any, Any]:
    """A dict of the key/value pairs whose keys are plain constants (others do not matter to the walk)."""
    out: dict[Any, Any] = {}
    for key, value in zip(items[::2], items[1::2], strict=False):
        if isinstance(key, str | int | bool | float | type(None)):
            out[key] = value
    return out
