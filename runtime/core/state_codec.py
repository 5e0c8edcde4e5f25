"""Keyed state as data: the one encoding of every state timeweave writes to storage and reads back.

State lives where other people can write: streaming checkpoints (``transformWithState`` cells) and the
MATCH_RECOGNIZE backfill's ``<output>/_state`` directories, usually on shared buckets.  A state file is
therefore *data*: this module never executes anything it reads (no pickle, marshal or eval), it only
rebuilds a closed set of values and core objects from plain data.

**Blob layout** (every state cell, every backfill state value)::

    b"TWst"  format version (1 byte)  CRC-32 of the payload (4 bytes, little endian)  payload

The payload is MessagePack.  Plain values (``None``, bools, ints, floats, str, bytes, lists, dicts)
are MessagePack's own; everything else is an extension type with an explicit tag: tuples, sets,
``Decimal`` (its exact text), ``datetime``/``date``/``time``/``timedelta`` (their fields; aware datetimes
with a fixed offset or a ``zoneinfo`` key), integers beyond 64 bits (decimal text), ``ARRAY_AGG`` chains,
and the core's state objects (:class:`~timeweave.core.temporal_join.LeftBuffer`,
:class:`~timeweave.core.versioned.VersionHistory`, :class:`~timeweave.core.versioned.VersionEvent`,
:class:`~timeweave.core.pattern.operator.HeldMatcher`), each rebuilt by its own ``from_state`` from the
plain data its ``to_state`` gave.  An unknown version, a wrong magic, a bad checksum, an unknown tag or
a malformed structure raise :class:`StateFormatError` naming the state.  State written by releases
before this format (pickles) is refused with the same error, saying how to rebuild it.

>>> from decimal import Decimal
>>> from datetime import datetime
>>> value = {"n": 1, "t": (datetime(2024, 1, 1, 12), Decimal("1.50")), "s": {3}}
>>> decode(encode(value)) == value
True
>>> decode(b"TWst\\x07" + bytes(4), where="my state")
Traceback (most recent call last):
...
timeweave.core.errors.StateFormatError: my state: unknown state format version 7 (this release reads version 1); ...
"""

from __future__ import annotations

import threading
import zlib
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal, InvalidOperation
from operator import itemgetter
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgpack

from timeweave.core.errors import StateFormatError

# The helpers the state classes' to_state / from_state use live below them (state_data), so that this codec,
# which knows the closed set of state classes, sits above those classes without an import cycle.
from timeweave.core.state_data import expect, from_int64s, int64s, malformed

MAGIC = b"TWst"
#: The format version this release writes and the only one it reads.
VERSION = 1
_HEADER = len(MAGIC) + 1 + 4

#: What to do with state an earlier release wrote (quoted by the errors and the README).
REBUILD_HINT = (
    "state written by an earlier timeweave release (pickled) is not read, because loading it could run code: "
    "start the streaming job from a fresh checkpoint, or re-run the backfill from slice 0"
)


# -- extension tags (never renumber: they are the stored format) ------------------------------------
_TUPLE, _SET, _FROZENSET, _DECIMAL, _DATETIME, _DATE, _TIME, _TIMEDELTA, _BIGINT, _ARRAY_CHAIN = range(1, 11)
_TUPLES = 11  # a list of equal-length tuples, stored column-wise (see _columnar)
_LEFT_BUFFER, _VERSION_HISTORY, _VERSION_EVENT, _HELD_MATCHER = 20, 21, 22, 23
_TAGS = frozenset((*range(1, 12), _LEFT_BUFFER, _VERSION_HISTORY, _VERSION_EVENT, _HELD_MATCHER))


class _Tuples:
    """Marks a list of equal-length tuples for the column-wise encoding (one C-packed list per column)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows


def _columnar(value: Any) -> Any:
    """``value``, with a list of equal-length tuples marked for the column-wise encoding.

    Why: MessagePack packs lists, dicts, ints and strings in C but calls back into Python for every
    tuple; a key's buffered rows are thousands of ``(time, seq, row)`` tuples, read and written every
    micro-batch.  As columns they pack in C, and ``zip`` rebuilds the tuples in C.
    """
    if (value.__class__ is list and value and value[0] and set(map(type, value)) == {tuple}
            and len(set(map(len, value))) == 1):
        return _Tuples(value)
    return value


def _pack(value: Any) -> bytes:
    return msgpack.packb(value, default=_default, strict_types=True, use_bin_type=True)


def _default(value: Any) -> msgpack.ExtType:
    cls = value.__class__
    if cls is tuple:
        return msgpack.ExtType(_TUPLE, _pack(list(value)))
    if cls is _Tuples:
        columns = [_columnar(list(column)) for column in zip(*value.rows, strict=True)]
        return msgpack.ExtType(_TUPLES, _pack([len(value.rows), columns]))
    if cls is Decimal:
        return msgpack.ExtType(_DECIMAL, str(value).encode())
    if cls is datetime:
        fields = [value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond,
                  value.fold]
        if value.tzinfo is not None:
            fields.append(_zone(value))
        return msgpack.ExtType(_DATETIME, _pack(fields))
    if cls is date:
        return msgpack.ExtType(_DATE, _pack(value.toordinal()))
    if cls is time and value.tzinfo is None:
        return msgpack.ExtType(_TIME, _pack([value.hour, value.minute, value.second, value.microsecond]))
    if cls is timedelta:
        return msgpack.ExtType(_TIMEDELTA, _pack([value.days, value.seconds, value.microseconds]))
    if cls is set or cls is frozenset:
        return msgpack.ExtType(_SET if cls is set else _FROZENSET, _pack(list(value)))
    if cls is int:  # beyond MessagePack's 64 bits (a SUM may grow there)
        return msgpack.ExtType(_BIGINT, str(value).encode())
    from timeweave.core.pattern.aggregates import ArrayChain
    from timeweave.core.pattern.operator import HeldMatcher
    from timeweave.core.temporal_join import LeftBuffer
    from timeweave.core.versioned import VersionEvent, VersionHistory

    if cls is LeftBuffer:
        return msgpack.ExtType(_LEFT_BUFFER, _pack(value.to_state()))
    if cls is VersionHistory:
        return msgpack.ExtType(_VERSION_HISTORY, _pack(value.to_state()))
    if cls is VersionEvent:
        return msgpack.ExtType(_VERSION_EVENT, _pack(value.to_state()))
    if cls is HeldMatcher:
        return msgpack.ExtType(_HELD_MATCHER, _pack(value.to_state()))
    if cls is ArrayChain:
        return msgpack.ExtType(_ARRAY_CHAIN, _pack(value.values()))
    raise TypeError(f"timeweave state cannot hold a {cls.__module__}.{cls.__qualname__} value ({value!r:.80})")


def _zone(value: datetime) -> Any:
    tz = value.tzinfo
    if isinstance(tz, ZoneInfo):
        return tz.key
    if isinstance(tz, timezone):
        offset = tz.utcoffset(None)
        return [offset.days, offset.seconds, offset.microseconds]
    raise TypeError(f"timeweave state cannot hold a datetime with time zone {tz!r} (fixed offsets and zoneinfo only)")


def _unpack(data: bytes) -> Any:
    # Extension values nest through Python and MessagePack's C unpacker: a crafted state nesting them
    # thousands deep would overflow the C stack (a crash, not an exception), so the depth is bounded.
    depth = _DEPTH.value = getattr(_DEPTH, "value", 0) + 1
    try:
        if depth > MAX_NESTING:
            raise malformed(f"values nested deeper than {MAX_NESTING} levels")
        return msgpack.unpackb(data, ext_hook=_ext, raw=False, strict_map_key=False, use_list=True)
    finally:
        _DEPTH.value = depth - 1


#: The deepest nesting of tagged values (tuples in tuples, ...) a state may hold.
MAX_NESTING = 64
_DEPTH = threading.local()


def _ext(tag: int, data: bytes) -> Any:
    if tag == _DECIMAL:
        try:
            return Decimal(data.decode())
        except InvalidOperation as exc:
            raise malformed(f"bad decimal {data[:40]!r}") from exc
    if tag == _BIGINT:
        return int(data.decode())
    if tag not in _TAGS:
        raise malformed(f"unknown value tag {tag}")
    value = _unpack(data)
    if tag == _TUPLE:
        return tuple(_list(value, "tuple"))
    if tag == _TUPLES:
        count, columns = _list(value, "tuple columns")
        if not all(isinstance(c, list) and len(c) == count for c in _list(columns, "tuple columns")):
            raise malformed("tuple columns of unequal length")
        return list(zip(*columns, strict=True))
    if tag == _DATETIME:
        fields = _list(value, "datetime")
        if len(fields) not in (8, 9):
            raise malformed(f"datetime with {len(fields)} fields")
        tz = _tz(fields[8]) if len(fields) == 9 else None
        return datetime(*fields[:7], tzinfo=tz, fold=fields[7])
    if tag == _DATE:
        return date.fromordinal(value)
    if tag == _TIME:
        return time(*_list(value, "time"))
    if tag == _TIMEDELTA:
        return timedelta(*_list(value, "timedelta"))
    if tag == _SET:
        return set(_list(value, "set"))
    if tag == _FROZENSET:
        return frozenset(_list(value, "frozenset"))
    if tag == _ARRAY_CHAIN:
        from timeweave.core.pattern.aggregates import ArrayChain

        return ArrayChain.of(_list(value, "ARRAY_AGG state"))
    if tag == _LEFT_BUFFER:
        from timeweave.core.temporal_join import LeftBuffer

        return LeftBuffer.from_state(value)
    if tag == _VERSION_HISTORY:
        from timeweave.core.versioned import VersionHistory

        return VersionHistory.from_state(value)
    if tag == _VERSION_EVENT:
        from timeweave.core.versioned import VersionEvent

        return VersionEvent.from_state(value)
    if tag == _HELD_MATCHER:
        from timeweave.core.pattern.operator import HeldMatcher

        return HeldMatcher.from_state(value)
    raise malformed(f"unknown value tag {tag}")


def _tz(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise malformed(f"unknown time zone {value!r:.60}") from exc
    if value == [0, 0, 0]:
        return UTC
    return timezone(timedelta(*_list(value, "time zone offset")))


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise malformed(f"{what}: expected a list, found {type(value).__name__}")
    return value


# -- the blob ---------------------------------------------------------------------------------------
def encode(value: Any) -> bytes:
    """``value`` (plain data and the core's state objects) as a versioned, checksummed blob.

    Lists of equal-length tuples directly under ``value`` (or under its dict values) are stored
    column-wise (the same values come back).

    >>> blob = encode({"times": [1, 2], "rows": [(1, 0, "a"), (2, 1, "b")]})
    >>> blob[:5], decode(blob)
    (b'TWst\\x01', {'times': [1, 2], 'rows': [(1, 0, 'a'), (2, 1, 'b')]})
    """
    if value.__class__ is dict:
        value = {name: _columnar(item) for name, item in value.items()}
    else:
        value = _columnar(value)
    return _seal(_pack(value))


def _seal(payload: bytes) -> bytes:
    return MAGIC + bytes((VERSION,)) + zlib.crc32(payload).to_bytes(4, "little") + payload


def decode(blob: bytes | bytearray | memoryview, *, where: str | None = None) -> Any:
    """The value :func:`encode` stored; :class:`StateFormatError` (naming ``where``) for anything else.

    >>> decode(encode([1, "a", None]))
    [1, 'a', None]
    >>> decode(b"\\x80\\x05K\\x01.", where="checkpoint cell of key 'k'")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.StateFormatError: checkpoint cell of key 'k': state written by an earlier timeweave release ...
    """
    data = blob if blob.__class__ is bytes else bytes(blob)  # (no copy of a hot key's cell of 100s of MB)
    if data[:1] == b"\x80":  # a pickle (protocol 2 and later): every earlier release's state
        raise StateFormatError(REBUILD_HINT, where=where)
    if data[: len(MAGIC)] != MAGIC or len(data) < _HEADER:
        raise StateFormatError(f"not timeweave state (starts with {data[:8]!r}); {REBUILD_HINT}", where=where)
    version = data[len(MAGIC)]
    if version != VERSION:
        raise StateFormatError(
            f"unknown state format version {version} (this release reads version {VERSION}); the state was "
            "written by another timeweave release: run that release, or rebuild the state", where=where)
    payload = memoryview(data)[_HEADER:]  # no copy of a cell of hundreds of kB
    if zlib.crc32(payload) != int.from_bytes(data[len(MAGIC) + 1 : _HEADER], "little"):
        raise StateFormatError("bad checksum: the state is damaged or was modified", where=where)
    try:
        return _unpack(payload)
    except StateFormatError as exc:
        if exc.where is None and where is not None:
            raise StateFormatError(exc.message, where=where) from exc
        raise
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeDecodeError, RecursionError,
            msgpack.UnpackException) as exc:
        raise StateFormatError(f"malformed state: {type(exc).__name__}: {exc}", where=where) from exc


# -- the cell of one key (a KeyContext's whole state) ---------------------------------------------------
# A cell is ``[{name: [kind, data]}, timers, seq]``: each named value says how it is stored, and the
# core's big objects are stored inline as their plain ``to_state`` data (one pack and one unpack for the
# whole cell; a nested extension would pack and unpack their bytes twice).
_GENERIC, _CELL_LEFT_BUFFER, _CELL_VERSION_HISTORY, _CELL_VERSION_EVENT, _CELL_MATCHER, _CELL_TUPLES = range(6)
_CELL_INT64 = 6  # a column of 64-bit integers as little-endian bytes (int64s)
_INT = frozenset((int,))




def _cell_value(value: Any, column: bool = False) -> list[Any]:
    cls = value.__class__
    if cls is list and value and value[0].__class__ is tuple and value[0] and set(map(type, value)) == {tuple} \
            and len(set(map(len, value))) == 1:
        # itemgetter per column: in C, and cheaper than transposing with zip(*value) (one argument per row)
        columns = [_cell_value(list(map(itemgetter(i), value)), True) for i in range(len(value[0]))]
        return [_CELL_TUPLES, [len(value), columns]]
    if column and value and value[0].__class__ is int and set(map(type, value)) == _INT:
        try:
            return [_CELL_INT64, int64s(value)]
        except OverflowError:  # beyond 64 bits: the generic encoding keeps any integer
            pass
    kind = _CELL_KINDS.get(cls)
    if kind is None:
        return [_GENERIC, value]
    return [kind, value.to_state()]


def _cell_kinds() -> dict[type, int]:
    from timeweave.core.pattern.operator import HeldMatcher
    from timeweave.core.temporal_join import LeftBuffer
    from timeweave.core.versioned import VersionEvent, VersionHistory

    return {LeftBuffer: _CELL_LEFT_BUFFER, VersionHistory: _CELL_VERSION_HISTORY, VersionEvent: _CELL_VERSION_EVENT,
            HeldMatcher: _CELL_MATCHER}


class _Kinds(dict):  # type: ignore[type-arg]
    """:data:`_CELL_KINDS`: filled on first use (importing the state classes, MATCH_RECOGNIZE's among them, is deferred until a cell holds one)."""

    def get(self, cls: type, default: Any = None) -> Any:
        if not self:
            self.update(_cell_kinds())
        return dict.get(self, cls, default)


_CELL_KINDS = _Kinds()


def _cell_from(item: Any) -> Any:
    if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int):
        raise malformed("a cell value is [kind, data]")
    kind, data = item
    if kind == _GENERIC:
        return data
    if kind == _CELL_INT64:
        return from_int64s(data, "integer column")
    if kind == _CELL_TUPLES:
        count, columns = _list(data, "tuple columns")
        columns = [_cell_from(c) for c in _list(columns, "tuple columns")]
        if not columns or not all(isinstance(c, list) and len(c) == count for c in columns):
            raise malformed("tuple columns of unequal length")
        return list(zip(*columns, strict=True))
    if kind == _CELL_LEFT_BUFFER:
        from timeweave.core.temporal_join import LeftBuffer

        return LeftBuffer.from_state(data)
    if kind == _CELL_VERSION_HISTORY:
        from timeweave.core.versioned import VersionHistory

        return VersionHistory.from_state(data)
    if kind == _CELL_VERSION_EVENT:
        from timeweave.core.versioned import VersionEvent

        return VersionEvent.from_state(data)
    if kind == _CELL_MATCHER:
        from timeweave.core.pattern.operator import HeldMatcher

        return HeldMatcher.from_state(data)
    raise malformed(f"unknown cell value kind {kind}")


def encode_cell(values: dict[str, Any], timers: set[int], seq: int) -> bytes:
    """One key's state as one blob: its named values, its core timers (µs) and its arrival counter.

    A named value that is a list of equal-length tuples (a MATCH_RECOGNIZE key's buffered rows) is
    stored column-wise.

    >>> values, timers, seq = decode_cell(encode_cell({"mr-buffer": [(5, 0, (5, "{}"))], "mr-seq": 1}, {5}, 1))
    >>> values, timers, seq
    ({'mr-buffer': [(5, 0, (5, '{}'))], 'mr-seq': 1}, {5}, 1)
    """
    return _seal(_pack([{name: _cell_value(value) for name, value in values.items()}, list(timers), seq]))


def decode_cell(blob: bytes, *, where: str | None = None) -> tuple[dict[str, Any], set[int], int]:
    """The values, timers and arrival counter :func:`encode_cell` stored (checked)."""
    data = decode(blob, where=where)
    if not (isinstance(data, list) and len(data) == 3 and isinstance(data[0], dict) and isinstance(data[1], list)
            and set(map(type, data[1])) <= {int} and type(data[2]) is int
            and all(isinstance(name, str) for name in data[0])):
        raise StateFormatError("malformed state: a key's cell is [values by name, timers, sequence]", where=where)
    try:
        values = {name: _cell_from(item) for name, item in data[0].items()}
    except StateFormatError as exc:
        raise StateFormatError(exc.message, where=where) from exc
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise StateFormatError(f"malformed state: {type(exc).__name__}: {exc}", where=where) from exc
    return values, set(data[1]), data[2]


# -- pieces: a blob too big for one state value ------------------------------------------------------
#: The largest piece of a blob stored as one state value (:func:`split`).  Why: a transformWithState value
#: crosses the state server pickled, is unpickled, copied into a row and written to the state store by the
#: JVM, several copies at once: one key's cell of 1 M versions (190 MB) killed a 1 GB driver heap with
#: ``OutOfMemoryError`` (issue 20).  1 MiB pieces keep every state value small, whatever one key holds.
PIECE_BYTES = 1 << 20


def split(blob: bytes, piece_bytes: int = PIECE_BYTES) -> tuple[bytes, list[bytes]]:
    """``blob`` as a manifest and pieces of at most ``piece_bytes`` bytes, each piece a blob of its own
    (magic, version, its own checksum) that knows its place; :func:`join` puts them together again.

    The manifest records the number of pieces, the blob's size and its CRC-32, so a missing, stale,
    reordered or damaged piece is a :class:`StateFormatError`, never a wrong value.

    >>> manifest, pieces = split(b"abcdefghij", piece_bytes=4)
    >>> len(pieces), join(manifest, pieces.__getitem__)
    (3, b'abcdefghij')
    """
    if piece_bytes < 1:
        raise ValueError(f"piece_bytes must be positive, found {piece_bytes}")
    view = memoryview(blob)
    count = -(-len(view) // piece_bytes)
    pieces = [encode([i, count, bytes(view[i * piece_bytes : (i + 1) * piece_bytes])]) for i in range(count)]
    return encode({"pieces": count, "bytes": len(view), "crc": zlib.crc32(view)}), pieces


def join(manifest: bytes, piece: Any, *, where: str | None = None) -> bytes:
    """The blob :func:`split` cut into ``manifest`` and pieces; ``piece(i)`` returns the ``i``-th stored
    piece (or None when it is missing).  Anything that does not add up is a :class:`StateFormatError`
    naming ``where``.

    >>> manifest, pieces = split(b"abcdefghij", piece_bytes=4)
    >>> join(manifest, {0: pieces[0], 1: pieces[2], 2: pieces[1]}.get, where="cell of key 'k'")
    Traceback (most recent call last):
    ...
    timeweave.core.errors.StateFormatError: cell of key 'k': malformed state: piece 1 of 3 is piece 2 of 3
    """
    info = decode(manifest, where=where)
    if not (isinstance(info, dict) and set(info) == {"pieces", "bytes", "crc"}
            and all(type(v) is int and v >= 0 for v in info.values())):
        raise StateFormatError("malformed state: a manifest is {pieces, bytes, crc}", where=where)
    count = info["pieces"]
    parts = []
    for i in range(count):
        stored = piece(i)
        if stored is None:
            raise StateFormatError(f"malformed state: piece {i} of {count} is missing", where=where)
        value = decode(stored, where=where)
        if not (isinstance(value, list) and len(value) == 3 and type(value[0]) is int and type(value[1]) is int
                and isinstance(value[2], bytes)):
            raise StateFormatError(f"malformed state: piece {i} of {count} is not a piece", where=where)
        if value[:2] != [i, count]:
            raise StateFormatError(f"malformed state: piece {i} of {count} is piece {value[0]} of {value[1]}",
                                   where=where)
        parts.append(value[2])
    blob = b"".join(parts)
    if len(blob) != info["bytes"] or zlib.crc32(blob) != info["crc"]:
        raise StateFormatError("bad checksum: the pieces do not make up the stored value (damaged or mixed)",
                               where=where)
    return blob


__all__ = ["MAGIC", "PIECE_BYTES", "REBUILD_HINT", "VERSION", "StateFormatError", "decode", "decode_cell", "encode",
           "encode_cell", "expect", "from_int64s", "int64s", "join", "split"]
