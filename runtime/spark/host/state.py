"""The state bridge of the streaming host: a key's cell in its bucket's MapState, the core's ``KeyContext`` over
it, and the bucket's timer index (see "Buckets", "The state bridge" and "Big cells" in :mod:`timeweave.spark.host`).

State cells are data (:mod:`timeweave.core.state_codec`: versioned, checksummed MessagePack, never pickle): a
checkpoint directory is storage other people can write to, and loading a pickle runs code.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.streaming import StatefulProcessorHandle

from timeweave.core.errors import StateFormatError
from timeweave.core.event_time import END_OF_INPUT_MS, spark_timer_ms
from timeweave.core.state_codec import PIECE_BYTES, decode, decode_cell, encode, encode_cell, join, split


class SparkKeyContext:
    """The core's ``KeyContext`` for one key over a Spark ValueState and Spark event-time timers.

    All named values, the core's timer set (µs) and the key's arrival counter live in one dict,
    encoded into one binary ValueState cell (:func:`timeweave.core.state_codec.encode_cell`, never pickle):
    each state call is a round trip to the JVM, so the
    context reads once when created and writes at most once in :meth:`commit`.  Timers are applied
    in :meth:`commit` too, as the difference between the Spark timers before and after (with
    ``handle=None`` no Spark timer is touched: the temporal join's buckets keep their own, see
    :mod:`timeweave.spark.host`).  ``state`` is anything with ValueState's ``get``/``update``/``clear``.

    Example (``state`` is a ValueState whose ``get`` returns None: a new key)::

        ctx = SparkKeyContext(handle, state, watermark=20_000)
        ctx.put("left", [row]); ctx.register_timer(15_000)
        ctx.commit()   # one state write, one Spark timer at 15 ms
    """

    def __init__(self, handle: StatefulProcessorHandle | None, state: Any, watermark: int) -> None:
        self._handle = handle
        self._state = state
        self._watermark = watermark
        stored = state.get()
        self._values: dict[str, Any]
        self._timers: set[int]
        self._next_seq: int
        if stored and stored[0] is not None:
            self._values, self._timers, self._next_seq = decode_cell(
                stored[0], where=getattr(state, "where", "streaming checkpoint state"))
        else:
            self._values, self._timers, self._next_seq = {}, set(), 0
        self._spark_timers = {spark_timer_ms(t) for t in self._timers}
        self._dirty = False
        # The core calls get() several times per row; the dict's bound method saves a Python frame each.
        self.get = self._values.get  # type: ignore[method-assign]

    # -- KeyContext -------------------------------------------------------------------------------
    def get(self, name: str) -> Any | None:
        return self._values.get(name)  # (shadowed per instance by the dict's own get, see __init__)

    def put(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._dirty = True

    def clear(self, name: str) -> None:
        if self._values.pop(name, None) is not None:
            self._dirty = True

    def register_timer(self, time: int) -> None:
        if time not in self._timers:
            self._timers.add(time)
            self._dirty = True

    def delete_timer(self, time: int) -> None:
        if time in self._timers:
            self._timers.discard(time)
            self._dirty = True

    def timers(self) -> list[int]:
        return sorted(self._timers)

    @property
    def watermark(self) -> int:
        return self._watermark

    @property
    def key(self) -> str | None:
        """The key's text (Flink's ``getCurrentKey``), when the cell knows it."""
        return getattr(self._state, "key", None)

    # -- adapter side -----------------------------------------------------------------------------
    def reserve_seqs(self, count: int) -> int:
        """Reserve ``count`` arrival numbers for the key (ties between equal times break by them); the first."""
        first = self._next_seq
        if count:
            self._next_seq += count
            self._dirty = True
        return first

    def expire_timers(self) -> None:
        """Forget the core timers at or below the watermark: Spark fires (and deletes) them in this batch.

        Same effect as :meth:`fired` for every Spark timer ``<= watermark``; the bucketed processor
        calls it after ``on_watermark`` has run for the key.
        """
        watermark = self._watermark
        due = {t for t in self._timers if t <= watermark}
        if due:
            self._timers -= due
            self._dirty = True

    def smallest_timer(self) -> int | None:
        """The smallest core timer (µs) the key holds, or None."""
        return min(self._timers) if self._timers else None

    def fired(self, timer_ms: int) -> None:
        """Spark fired (and deletes) the timer at ``timer_ms``: forget the core timers it stood for."""
        self._spark_timers.discard(timer_ms)
        due = {t for t in self._timers if spark_timer_ms(t) == timer_ms}
        if due:
            self._timers -= due
            self._dirty = True

    def commit(self) -> None:
        """Write the key's state back (or clear it when empty) and bring Spark's timers in line."""
        wanted = {spark_timer_ms(t) for t in self._timers}
        if self._handle is not None:
            for ms in sorted(self._spark_timers - wanted):
                self._handle.deleteTimer(ms)
            for ms in sorted(wanted - self._spark_timers):
                self._handle.registerTimer(ms)
        self._spark_timers = wanted
        if not self._dirty:
            return
        if not self._values and not self._timers:
            # Nothing buffered, no timer: the arrival counter may restart, no event is left to compare with.
            self._state.clear()
        else:
            self._state.update((encode_cell(self._values, self._timers, self._next_seq),))
        self._dirty = False


class MapEntry:
    """One key's cell of the bucket's MapState, with the ValueState calls :class:`SparkKeyContext` makes.

    A cell larger than :data:`~timeweave.core.state_codec.PIECE_BYTES` is stored in pieces (see "Big cells"
    in :mod:`timeweave.spark.host`): the key's own entry holds a manifest (:data:`PIECES` and
    :func:`~timeweave.core.state_codec.split`'s manifest), piece ``i`` lives at :func:`piece_key`, and no
    state value is ever larger than a piece, however many versions or rows one key holds.

    >>> class Map(dict):
    ...     getValue, updateValue, removeKey = dict.get, dict.__setitem__, dict.pop
    >>> m = Map(); big = bytes(range(256)) * 10240  # 2.5 MiB: three pieces
    >>> MapEntry(m, "k").update((big,))
    >>> sorted(m), MapEntry(m, "k").get() == (big,)
    ([('\\x00p0\\x00k',), ('\\x00p1\\x00k',), ('\\x00p2\\x00k',), ('k',)], True)
    >>> e = MapEntry(m, "k"); _ = e.get(); e.update((b"small",)); sorted(m)
    [('k',)]
    """

    __slots__ = ("_key", "_map", "_pieces", "_text")

    def __init__(self, map_state: Any, key: str | None) -> None:
        self._map = map_state
        self._text = key
        self._key = (cell_key(key),)
        self._pieces: int | None = None  # how many pieces the stored cell has (None: not read yet)

    @property
    def key(self) -> str | None:
        """The key (its ``tw_key`` text) whose cell this is."""
        return self._text

    @property
    def where(self) -> str:
        """The cell, for errors (the state format's)."""
        return f"streaming checkpoint state of key {self._text!r}"

    def get(self) -> tuple | None:
        stored = self._map.getValue(self._key)
        if not stored or stored[0] is None or stored[0][:1] != PIECES:
            self._pieces = 0
            return stored
        read: list[int] = []  # the pieces join asked for: as many as the manifest says (whatever size wrote them)
        blob = join(memoryview(stored[0])[1:], lambda i: self._piece(i, read), where=self.where)
        self._pieces = len(read)
        return (blob,)

    def _piece(self, i: int, read: list[int]) -> bytes | None:
        read.append(i)
        stored = self._map.getValue((piece_key(self._text, i),))
        return stored[0] if stored else None

    def update(self, value: tuple) -> None:
        data = value[0]
        before = self._stored_pieces()
        after = 0
        if len(data) > PIECE_BYTES:
            manifest, pieces = split(data)
            for i, piece in enumerate(pieces):
                self._map.updateValue((piece_key(self._text, i),), (piece,))
            data = PIECES + manifest
            after = len(pieces)
        self._map.updateValue(self._key, (data,))
        self._drop_pieces(after, before)

    def clear(self) -> None:
        before = self._stored_pieces()
        self._map.removeKey(self._key)
        self._drop_pieces(0, before)

    def _stored_pieces(self) -> int:
        if self._pieces is None:  # written without a read first: find out what is stored
            MapEntry.get(self)
        return self._pieces or 0

    def _drop_pieces(self, keep: int, before: int) -> None:
        for i in range(keep, before):
            self._map.removeKey((piece_key(self._text, i),))
        self._pieces = keep


#: The first byte of a key's entry that is a manifest of pieces (a state blob starts with b"T", an LZ4-packed
#: MATCH_RECOGNIZE cell with b"\x01").
PIECES = b"\x02"


def cell_key(text: str | None) -> str | None:
    """The MapState key of a key's cell: its text; a text starting with NUL gets one more NUL in front, so
    no cell key starts with ``"\\x00p"`` (the pieces' keys, :func:`piece_key`).

    >>> cell_key("USD"), cell_key("\\x00p0\\x00USD")
    ('USD', '\\x00\\x00p0\\x00USD')
    """
    return "\x00" + text if text is not None and text.startswith("\x00") else text


def piece_key(text: str | None, i: int) -> str:
    """The MapState key of piece ``i`` of a key's cell (disjoint from every cell key, see :func:`cell_key`)."""
    return f"\x00p{i}" if text is None else f"\x00p{i}\x00{text}"


class PackedEntry(MapEntry):
    """A key's MapState cell, LZ4-compressed above :data:`_PACK_MIN` bytes (see "Buckets" in :mod:`timeweave.spark.host`).

    A key's cell holds its buffered rows: hundreds of kB per key and micro-batch at 250 k rows per batch.
    Every byte of it crosses the state server twice (pickled by Pyrolite in the JVM towards Python) and is
    written to RocksDB and its checkpoint; the wire text compresses ~4x (measured: a 224 kB cell to 59 kB
    in 0.3 ms, back in 0.1 ms).  A cell starts with
    :data:`PACKED` when compressed; any other cell is the state blob itself (:mod:`timeweave.core.state_codec`:
    magic, version, checksum), which the state codec checks after decompression too.

    >>> class Map(dict):
    ...     getValue, updateValue = dict.get, dict.__setitem__
    >>> m = Map(); e = PackedEntry(m, "k"); e.update((b"x" * 5000,))
    >>> len(m[("k",)][0]) < 100, e.get() == (b"x" * 5000,)
    (True, True)
    """

    __slots__ = ()

    def get(self) -> tuple | None:
        stored = super().get()  # (a big cell is read from its pieces first)
        if not stored or stored[0] is None or stored[0][:1] != PACKED:
            return stored
        data = stored[0]
        size = int.from_bytes(data[1:9], "little")
        if len(data) < 9 or size > _PACK_MAX:
            raise StateFormatError(f"malformed state: a compressed cell of {size} bytes", where=self.where)
        try:
            return (_LZ4.decompress(memoryview(data)[9:], decompressed_size=size, asbytes=True),)
        except (OSError, ValueError, pa.ArrowException) as exc:  # damaged bytes: the checksum could not be reached
            raise StateFormatError(f"malformed state: the compressed cell does not decompress ({exc})",
                                   where=self.where) from exc

    def update(self, value: tuple) -> None:
        data = value[0]
        if len(data) >= _PACK_MIN:
            data = PACKED + len(data).to_bytes(8, "little") + _LZ4.compress(data, asbytes=True)
        super().update((data,))  # in pieces when still big


#: The first byte of a compressed cell (a state blob starts with b"T"), then the size (8 bytes), then LZ4 frames.
PACKED = b"\x01"
_PACK_MIN = 2048
#: A cell's largest decompressed size accepted (Spark's value limit): a damaged size must not allocate more.
_PACK_MAX = 2**31
_LZ4 = pa.Codec("lz4")


class TimerIndex:
    """A bucket's timer index: each key's smallest core timer (µs) and the bucket's single Spark timer (ms).

    One Spark timer per bucket, at the smallest core timer of its keys: when it fires, every key
    with a timer at or below the watermark runs, and the timer moves to the next smallest.  Core µs
    become Spark ms by :func:`timeweave.core.event_time.spark_timer_ms` (the one rule, both ends included).
    """

    __slots__ = ("_dirty", "_fired", "spark", "timers")

    def __init__(self, timers: dict[str, int], spark: int | None) -> None:
        self.timers = timers
        self.spark = spark
        self._dirty = False
        self._fired: int | None = None

    @classmethod
    def load(cls, state: Any) -> TimerIndex:
        stored = state.get()
        if not stored or stored[0] is None:
            return cls({}, None)
        where = "streaming checkpoint state (the bucket's timer index)"
        data = decode(stored[0], where=where)
        if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], dict)
                and all(isinstance(k, str) and type(t) is int for k, t in data[0].items())
                and (data[1] is None or type(data[1]) is int)):
            raise StateFormatError("malformed state: the timer index is [timers by key, Spark timer]", where=where)
        return cls(data[0], data[1])

    def set(self, text: str, timer: int | None) -> None:
        if timer is None:
            if self.timers.pop(text, None) is not None:
                self._dirty = True
        elif self.timers.get(text) != timer:
            self.timers[text] = timer
            self._dirty = True

    def due(self, watermark: int) -> list[str]:
        return [text for text, timer in self.timers.items() if timer <= watermark]

    def fired(self, timer_ms: int) -> None:
        """Spark fired (and deletes) the bucket's timer at ``timer_ms``."""
        self._fired = timer_ms
        if self.spark == timer_ms:
            self.spark = None
            self._dirty = True

    def store(self, state: Any, handle: StatefulProcessorHandle | None, end_ms: int = END_OF_INPUT_MS) -> None:
        """Move the bucket's Spark timer to the smallest key timer, write the index back (or clear it).

        ``end_ms``: the watermark (ms) of the end of input, the latest Spark timer that can fire.
        """
        wanted = spark_timer_ms(min(self.timers.values()), end_ms) if self.timers else None
        if wanted is not None and wanted == self._fired:
            # PySpark deletes a fired timer after handleExpiredTimer returns: registering the same time
            # again here would leave the bucket with no timer (its keys' rows never emitted).  A key due
            # at the fired time has run and dropped its timers, so this needs a timer the watermark did
            # not pass (spark_timer_ms keeps that from happening); one ms later keeps the bucket awake.
            wanted += 1
        if wanted != self.spark:
            if handle is not None:
                if self.spark is not None:
                    handle.deleteTimer(self.spark)
                if wanted is not None:
                    handle.registerTimer(wanted)
            self.spark = wanted
            self._dirty = True
        if not self._dirty:
            return
        if self.timers or self.spark is not None:
            state.update((encode([self.timers, self.spark]),))
        else:
            state.clear()
        self._dirty = False


__all__ = ["PIECES", "MapEntry", "PackedEntry", "SparkKeyContext", "TimerIndex", "cell_key", "piece_key"]
