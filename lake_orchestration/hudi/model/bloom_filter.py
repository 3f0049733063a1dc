"""Hudi's parquet-footer bloom filter, byte-compatible with Java Hudi 0.14 / 0.15 (reference/hudi/base-file.md §2).

Java writes the filter of every base file (meta fields on) into the parquet key/value footer under
``org.apache.hudi.bloomfilter`` as base64 text, plus ``hoodie_bloom_filter_type_code`` for dynamic filters. The BLOOM
and GLOBAL_BLOOM indexes read it back to decide which files may hold an incoming key; a false negative there turns an
update into a duplicate insert, so the hash, the bit order, the growth rule and the layout below are exact ports.

* Parameters: ``m = ceil(n * (-ln p / ln(2)^2))`` bits, ``k = ceil(ln(2) * m / n)`` hashes (``BloomFilterUtils``).
* Hash: Hadoop/Hudi MurmurHash2 with sign-extended tail bytes; round ``i`` is seeded with the hash of round ``i-1``
  and maps to ``|h rem m|`` (``HashFunction``).
* Layout: ``InternalFilter`` header (version -1, k, hash type, m) then the bits LSB-first per byte
  (``InternalBloomFilter``); the dynamic filter adds nr, currentNbRecord and its rows (``InternalDynamicBloomFilter``).

``add_all`` hashes whole batches with numpy (keys grouped by UTF-8 length, the per-block Murmur mixing computed once
per key and reused by all k rounds), then sets the bits of each target row with one fancy assignment.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Iterable
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

FOOTER_BLOOM_KEY = "org.apache.hudi.bloomfilter"
"""Footer key of the serialized filter (``HoodieBloomFilterWriteSupport.HOODIE_AVRO_BLOOM_FILTER_METADATA_KEY``)."""
FOOTER_TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
"""Footer key of the type code, written only for dynamic filters (``HOODIE_BLOOM_FILTER_TYPE_CODE``)."""
LEGACY_FOOTER_BLOOM_KEY = "com.uber.hoodie.bloomfilter"
"""Pre-Apache key, still accepted by Java readers as a fallback; never written."""

TYPE_SIMPLE = "SIMPLE"
TYPE_DYNAMIC_V0 = "DYNAMIC_V0"
DYNAMIC_TYPE_CODE_PREFIX = "DYNAMIC"
"""A footer type code containing this selects the dynamic parser (``HoodieDynamicBoundedBloomFilter``)."""

DEFAULT_NUM_ENTRIES = 60000
"""``hoodie.index.bloom.num_entries``."""
DEFAULT_FPP = 0.000000001
"""``hoodie.index.bloom.fpp``."""
DEFAULT_FILTER_TYPE = TYPE_DYNAMIC_V0
"""``hoodie.bloom.index.filter.type``."""
DEFAULT_DYNAMIC_MAX_ENTRIES = 100000
"""``hoodie.bloom.index.filter.dynamic.max.entries``."""

JENKINS_HASH = 0
"""``Hash.JENKINS_HASH``: only implied by the pre-versioned serialization; never written."""
MURMUR_HASH = 1
"""``Hash.MURMUR_HASH``: what ``BloomFilterFactory`` always uses."""

_VERSION = -1
_HEADER = struct.Struct(">iibi")  # version, nbHash, hashType, vectorSize
_INT = struct.Struct(">i")
_INT_MAX = 2**31 - 1
_M = 0x5BD1E995
_M32 = np.uint32(_M)
_MASK32 = 0xFFFFFFFF
_LOG2_SQUARED = math.log(2) * math.log(2)
_CHUNK = 1 << 16  # keys hashed per numpy batch: bounds the (chunk x k) int64 position matrix to a few MiB


def _to_int32(x: int) -> int:
    """Java ``(int)`` narrowing of a non-negative Python int below 2**32."""
    return x - (1 << 32) if x & 0x80000000 else x


# ---------------------------------------------------------------------------------------------------------------
# Parameters (BloomFilterUtils)
# ---------------------------------------------------------------------------------------------------------------


def bloom_parameters(num_entries: int, fpp: float) -> tuple[int, int]:
    """Bit-vector size and hash count Hudi derives from the configured entries and false-positive rate.

    Mirrors ``BloomFilterUtils.getBitSize`` / ``getNumHashes`` (same double arithmetic and evaluation order).

    Args:
        num_entries: ``hoodie.index.bloom.num_entries`` (> 0).
        fpp: ``hoodie.index.bloom.fpp``, strictly between 0 and 1.

    Returns:
        ``(vector_size_bits, num_hashes)``.

    Raises:
        ValueError: a parameter is out of range or the filter would not fit Java's int sizes.
    """
    if isinstance(num_entries, bool) or not isinstance(num_entries, int) or not 0 < num_entries <= _INT_MAX:
        raise ValueError(f"bloom filter num_entries must be an int in 1..{_INT_MAX}, got {num_entries!r}")
    if not isinstance(fpp, (int, float)) or isinstance(fpp, bool) or not 0.0 < float(fpp) < 1.0:
        raise ValueError(f"bloom filter fpp must be a float strictly between 0 and 1, got {fpp!r}")
    bits = math.ceil(num_entries * (-math.log(float(fpp)) / _LOG2_SQUARED))
    if not 0 < bits <= _INT_MAX:
        raise ValueError(
            f"bloom filter of num_entries={num_entries}, fpp={fpp!r} needs {bits} bits, more than Java's int allows"
        )
    hashes = math.ceil(math.log(2) * bits / num_entries)
    return bits, hashes


# ---------------------------------------------------------------------------------------------------------------
# Hash functions (MurmurHash, JenkinsHash, HashFunction)
# ---------------------------------------------------------------------------------------------------------------


def murmur_hash(data: bytes, seed: int = 0) -> int:
    """Hudi's 32-bit MurmurHash2 of ``data`` (signed int32 result).

    Mirrors ``org.apache.hudi.common.util.hash.MurmurHash`` (a port of Hadoop's): the tail bytes are sign-extended
    Java bytes, unlike reference MurmurHash2, which matters for non-ASCII keys.

    Args:
        data: the bytes to hash.
        seed: signed or unsigned 32-bit seed.

    Returns:
        The hash as a signed 32-bit int.
    """
    length = len(data)
    h = (seed ^ length) & _MASK32
    n4 = length >> 2
    for (w,) in struct.iter_unpack("<I", data[: n4 << 2]):
        w = (w * _M) & _MASK32
        w ^= w >> 24
        w = (w * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ w
    left = length & 3
    if left:
        if left >= 3:
            h ^= (_sign_extend(data[length - 3]) << 16) & _MASK32
        if left >= 2:
            h ^= (_sign_extend(data[length - 2]) << 8) & _MASK32
        h ^= _sign_extend(data[length - 1]) & _MASK32
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _to_int32(h)


def _sign_extend(byte: int) -> int:
    return byte - 256 if byte >= 128 else byte


def _rot(v: int, k: int) -> int:
    return ((v << k) | (v >> (32 - k))) & _MASK32


def jenkins_hash(data: bytes, seed: int = 0) -> int:
    """Bob Jenkins' lookup3 ``hashlittle`` (signed int32 result).

    Mirrors ``org.apache.hudi.common.util.hash.JenkinsHash``. Only filters in the pre-versioned serialization use it;
    it is here so that such a blob can still be read and probed.

    Args:
        data: the bytes to hash.
        seed: the initial value.

    Returns:
        The hash as a signed 32-bit int.
    """
    length = len(data)
    a = b = c = (0xDEADBEEF + length + seed) & _MASK32
    off = 0
    while length > 12:
        x, y, z = struct.unpack_from("<III", data, off)
        a = (a + x) & _MASK32
        b = (b + y) & _MASK32
        c = (c + z) & _MASK32
        a = (a - c) & _MASK32
        a ^= _rot(c, 4)
        c = (c + b) & _MASK32
        b = (b - a) & _MASK32
        b ^= _rot(a, 6)
        a = (a + c) & _MASK32
        c = (c - b) & _MASK32
        c ^= _rot(b, 8)
        b = (b + a) & _MASK32
        a = (a - c) & _MASK32
        a ^= _rot(c, 16)
        c = (c + b) & _MASK32
        b = (b - a) & _MASK32
        b ^= _rot(a, 19)
        a = (a + c) & _MASK32
        c = (c - b) & _MASK32
        c ^= _rot(b, 4)
        b = (b + a) & _MASK32
        off += 12
        length -= 12
    if length == 0:
        return _to_int32(c)
    tail = data[off : off + length] + bytes(12 - length)
    x, y, z = struct.unpack("<III", tail)
    a = (a + x) & _MASK32
    b = (b + y) & _MASK32
    c = (c + z) & _MASK32
    c ^= b
    c = (c - _rot(b, 14)) & _MASK32
    a ^= c
    a = (a - _rot(c, 11)) & _MASK32
    b ^= a
    b = (b - _rot(a, 25)) & _MASK32
    c ^= b
    c = (c - _rot(b, 16)) & _MASK32
    a ^= c
    a = (a - _rot(c, 4)) & _MASK32
    b ^= a
    b = (b - _rot(a, 14)) & _MASK32
    c ^= b
    c = (c - _rot(b, 24)) & _MASK32
    return _to_int32(c)


_HASHES = {JENKINS_HASH: jenkins_hash, MURMUR_HASH: murmur_hash}


def key_bytes(key: str) -> bytes:
    """UTF-8 bytes of a record key, as ``String.getBytes(UTF_8)``; rejects what Java's ``HashFunction`` rejects.

    Raises:
        ValueError: the key is not a str, is empty, or holds a lone surrogate (Java would write ``?`` for it,
            which no Python writer can produce consistently).
    """
    if not isinstance(key, str):
        raise ValueError(f"bloom filter keys must be str, got {type(key).__name__}: {key!r}")
    if not key:
        raise ValueError("bloom filter key must be non-empty (Java HashFunction: 'key length must be > 0'), got ''")
    try:
        return key.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"bloom filter key is not valid Unicode (lone surrogate): {key!r}") from e


def hash_positions(data: bytes, num_hashes: int, vector_size: int, hash_type: int = MURMUR_HASH) -> list[int]:
    """The ``num_hashes`` bit positions of one key.

    Mirrors ``HashFunction.hash``: each round is seeded with the previous hash, position ``|h rem vector_size|``
    (Java's truncating remainder, so ``abs(h) % m`` rather than ``h % m``).

    Args:
        data: the key's UTF-8 bytes (non-empty).
        num_hashes: k.
        vector_size: m.
        hash_type: ``MURMUR_HASH`` (1) or ``JENKINS_HASH`` (0).

    Returns:
        The k positions, duplicates included, in round order.
    """
    fn = _HASHES.get(hash_type)
    if fn is None:
        raise ValueError(f"unknown bloom filter hash type {hash_type} (expected 0 = jenkins or 1 = murmur)")
    if not data:
        raise ValueError("bloom filter key must be non-empty (Java HashFunction: 'key length must be > 0')")
    out = []
    h = 0
    for _ in range(num_hashes):
        h = fn(data, h)
        out.append(abs(h) % vector_size)
    return out


def _as_string_array(keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> pa.Array:
    """Keys as one contiguous arrow utf8/large_utf8 array, validated like ``key_bytes``."""
    if isinstance(keys, pa.ChunkedArray):
        arr = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    elif isinstance(keys, pa.Array):
        arr = keys
    else:
        if not isinstance(keys, (list, tuple)):
            keys = list(keys)
        for k in keys:
            if not isinstance(k, str):
                raise ValueError(f"bloom filter keys must be str, got {type(k).__name__}: {k!r}")
        try:
            arr = pa.array(keys, pa.string())
        except (pa.ArrowInvalid, UnicodeEncodeError):
            for k in keys:
                key_bytes(k)  # raises with the offending key
            raise
        if isinstance(arr, pa.ChunkedArray):  # over 2 GiB of key bytes: one large_string array
            arr = arr.cast(pa.large_string()).combine_chunks()
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise ValueError(f"bloom filter keys must be strings, got an arrow array of type {arr.type}")
    if arr.null_count:
        raise ValueError(
            f"bloom filter keys must not be null: {arr.null_count} null key(s), "
            f"the first at index {pc.index(pc.is_null(arr), True).as_py()}"
        )
    if len(arr) and pc.min(pc.binary_length(arr)).as_py() == 0:
        raise ValueError(
            f"bloom filter key must be non-empty (Java HashFunction: 'key length must be > 0'); "
            f"empty key at index {pc.index(pc.equal(pc.binary_length(arr), 0), True).as_py()}"
        )
    return arr


def _arrow_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(start offsets as int64, UTF-8 data as uint8) of a non-null string array."""
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_type, count=len(arr) + 1 + arr.offset)[arr.offset :].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def _murmur_positions_fixed(mat: np.ndarray, num_hashes: int, vector_size: int, out: np.ndarray) -> None:
    """Bit positions of n keys of one byte length L, given as an (n, L) uint8 matrix, into ``out`` (k x n, uint32).

    ``|h rem m|`` is computed as ``a - (a // m) * m`` on ``a = |h|`` as uint32 (``|INT_MIN| = 2**31`` fits): numpy
    divides unsigned ints by a scalar with a multiply-shift (libdivide), several times faster than ``remainder``.
    """
    n, length = mat.shape
    n4 = length >> 2
    # Block words are independent of the seed: mix them once, reuse them in all k rounds.
    if n4:
        w = np.ascontiguousarray(mat[:, : n4 << 2]).view("<u4").astype(np.uint32).T.copy()  # (n4, n)
        w *= _M32
        w ^= w >> np.uint32(24)
        w *= _M32
    left = length & 3
    tail = None
    if left:
        sx = mat[:, n4 << 2 :].view(np.int8).astype(np.int32)
        t = np.zeros(n, np.int32)
        if left >= 3:
            t ^= sx[:, left - 3] << 16
        if left >= 2:
            t ^= sx[:, left - 2] << 8
        t ^= sx[:, left - 1]
        tail = t.view(np.uint32)
    seed = np.zeros(n, np.uint32)
    h = np.empty(n, np.uint32)
    tmp = np.empty(n, np.uint32)
    len32 = np.uint32(length)
    m32 = np.uint32(vector_size)
    s13, s15 = np.uint32(13), np.uint32(15)
    for i in range(num_hashes):
        np.bitwise_xor(seed, len32, out=h)
        for b in range(n4):
            h *= _M32
            h ^= w[b]
        if tail is not None:
            h ^= tail
            h *= _M32
        np.right_shift(h, s13, out=tmp)
        h ^= tmp
        h *= _M32
        np.right_shift(h, s15, out=tmp)
        h ^= tmp
        seed, h = h, seed
        row = out[i]
        np.abs(seed.view(np.int32), out=h.view(np.int32))  # h is free until the next round: |h| as uint32
        np.floor_divide(h, m32, out=tmp)
        tmp *= m32
        np.subtract(h, tmp, out=row)


def _batch_positions(arr: pa.Array, num_hashes: int, vector_size: int, hash_type: int) -> np.ndarray:
    """Bit positions (k x len(arr), uint32: round-major) of a non-null, non-empty string array, in array order."""
    n = len(arr)
    out = np.empty((num_hashes, n), np.uint32)
    if n == 0:
        return out
    if hash_type != MURMUR_HASH:
        for i, key in enumerate(arr.to_pylist()):
            out[:, i] = hash_positions(key.encode("utf-8"), num_hashes, vector_size, hash_type)
        return out
    offsets, data = _arrow_buffers(arr)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if int(lengths.min()) == int(lengths.max()):
        # One byte length (UUIDs, fixed-width ids): the data buffer already is the (n, L) matrix.
        length = int(lengths[0])
        mat = data[int(offsets[0]) : int(offsets[-1])].reshape(n, length)
        _murmur_positions_fixed(mat, num_hashes, vector_size, out)
        return out
    order = np.argsort(lengths, kind="stable")
    sorted_len = lengths[order]
    cuts = np.flatnonzero(np.diff(sorted_len)) + 1
    for lo, hi in zip(np.r_[0, cuts].tolist(), np.r_[cuts, n].tolist(), strict=True):
        idx = order[lo:hi]
        length = int(sorted_len[lo])
        mat = data[starts[idx][:, None] + np.arange(length, dtype=np.int64)]
        part = np.empty((num_hashes, hi - lo), np.uint32)
        _murmur_positions_fixed(mat, num_hashes, vector_size, part)
        out[:, idx] = part
    return out


# ---------------------------------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------------------------------


class _BitRow:
    """One standard bloom filter row: header parameters plus an unpacked bit vector.

    Mirrors ``InternalBloomFilter`` (Hadoop's ``BloomFilter``): serialized as the 13-byte ``InternalFilter`` header
    then ``ceil(m/8)`` bytes, bit ``i`` in byte ``i >> 3`` under mask ``1 << (i & 7)``.
    """

    __slots__ = ("bits", "hash_type", "num_hashes", "vector_size")

    def __init__(self, vector_size: int, num_hashes: int, hash_type: int, bits: np.ndarray | None = None) -> None:
        self.vector_size = vector_size
        self.num_hashes = num_hashes
        self.hash_type = hash_type
        self.bits = np.zeros(vector_size, np.bool_) if bits is None else bits

    def set_positions(self, positions: np.ndarray) -> None:
        self.bits[positions.astype(np.intp)] = True  # numpy scatters intp indices ~2x faster than uint32

    def test(self, positions: list[int]) -> bool:
        bits = self.bits
        return all(bits[p] for p in positions)

    def test_many(self, positions: np.ndarray) -> np.ndarray:
        """Per key (column of the k x n positions): all its bits set."""
        return self.bits[positions.astype(np.intp)].all(axis=0)

    def header(self) -> bytes:
        return _HEADER.pack(_VERSION, self.num_hashes, self.hash_type, self.vector_size)

    def to_bytes(self) -> bytes:
        return self.header() + np.packbits(self.bits, bitorder="little").tobytes()

    @staticmethod
    def read(blob: memoryview, pos: int, what: str) -> tuple[_BitRow, int]:
        """Parse one row at ``pos``; returns it and the position after it (``InternalFilter.readFields``)."""
        (num_hashes, hash_type, vector_size), pos = _read_header(blob, pos, what)
        nbytes = (vector_size + 7) // 8
        if pos + nbytes > len(blob):
            raise ValueError(
                f"bloom filter {what} is truncated: {nbytes} bytes of bits expected at offset {pos}, "
                f"only {len(blob) - pos} left"
            )
        packed = np.frombuffer(blob, np.uint8, count=nbytes, offset=pos)
        bits = np.unpackbits(packed, count=vector_size, bitorder="little").view(np.bool_)
        return _BitRow(vector_size, num_hashes, hash_type, bits), pos + nbytes


def _read_header(blob: memoryview, pos: int, what: str) -> tuple[tuple[int, int, int], int]:
    """``InternalFilter.readFields``: versioned header, or the old un-versioned one (k first, Jenkins implied)."""
    if pos + 4 > len(blob):
        raise ValueError(f"bloom filter {what} is truncated at offset {pos}: header expected")
    (ver,) = _INT.unpack_from(blob, pos)
    if ver > 0:
        num_hashes, hash_type, pos = ver, JENKINS_HASH, pos + 4
    elif ver == _VERSION:
        if pos + 9 > len(blob):
            raise ValueError(f"bloom filter {what} is truncated at offset {pos}: 13-byte header expected")
        num_hashes, hash_type = struct.unpack_from(">ib", blob, pos + 4)
        pos += 9
    else:
        raise ValueError(f"bloom filter {what}: unsupported serialization version {ver} at offset {pos}")
    if pos + 4 > len(blob):
        raise ValueError(f"bloom filter {what} is truncated at offset {pos}: vector size expected")
    (vector_size,) = _INT.unpack_from(blob, pos)
    if vector_size <= 0:
        raise ValueError(f"bloom filter {what}: vector size must be > 0, got {vector_size}")
    if num_hashes <= 0:
        raise ValueError(f"bloom filter {what}: number of hash functions must be > 0, got {num_hashes}")
    if hash_type not in _HASHES:
        raise ValueError(f"bloom filter {what}: unknown hash type {hash_type} (expected 0 = jenkins or 1 = murmur)")
    return (num_hashes, hash_type, vector_size), pos + 4


def _decode_base64(text: str) -> memoryview:
    if not isinstance(text, str):
        raise ValueError(f"serialized bloom filter must be str, got {type(text).__name__}")
    try:
        return memoryview(base64.b64decode(text.encode("ascii"), validate=True))
    except (binascii.Error, UnicodeEncodeError) as e:
        raise ValueError(f"serialized bloom filter is not valid base64 ({e}): {text[:64]!r}...") from e


class HoodieBloomFilter:
    """Common API of Hudi's two bloom filters; build one with ``create`` or ``deserialize``.

    Mirrors ``org.apache.hudi.common.bloom.BloomFilter`` (and ``BloomFilterFactory`` for the constructors).
    """

    type_code: ClassVar[str]

    @classmethod
    def create(
        cls,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        filter_type: str = DEFAULT_FILTER_TYPE,
        max_entries: int = DEFAULT_DYNAMIC_MAX_ENTRIES,
    ) -> HoodieBloomFilter:
        """A new empty filter, as ``BloomFilterFactory.createBloomFilter`` builds it (hash type always murmur).

        Args:
            num_entries: ``hoodie.index.bloom.num_entries``.
            fpp: ``hoodie.index.bloom.fpp``.
            filter_type: ``hoodie.bloom.index.filter.type``: ``SIMPLE`` or ``DYNAMIC_V0`` (case-insensitive).
            max_entries: ``hoodie.bloom.index.filter.dynamic.max.entries`` (dynamic filters only).

        Raises:
            ValueError: unknown filter type or parameters out of range.
        """
        if not isinstance(filter_type, str):
            raise ValueError(f"bloom filter type must be a str, got {filter_type!r}")
        if filter_type.upper() == TYPE_SIMPLE:
            return SimpleBloomFilter(num_entries, fpp)
        if filter_type.upper() == TYPE_DYNAMIC_V0:
            return DynamicBoundedBloomFilter(num_entries, fpp, max_entries)
        raise ValueError(f"Bloom Filter type code not recognizable {filter_type!r} (expected SIMPLE or DYNAMIC_V0)")

    @classmethod
    def deserialize(cls, text: str, type_code: str | None = None) -> HoodieBloomFilter:
        """Parse a footer value the way Java's base-file readers do.

        Mirrors ``BaseFileUtils.readBloomFilterFromMetadata`` + ``BloomFilterFactory.fromString``: a type code
        containing ``DYNAMIC`` selects the dynamic parser (and must then be ``DYNAMIC_V0``); a missing type code, or
        any other, means SIMPLE.

        Unlike Java, a blob with bytes left over after the filter is rejected: that is what a dynamic payload read
        without its type code looks like, and Java would silently return a filter with wrong bits.

        Args:
            text: the base64 footer value of ``org.apache.hudi.bloomfilter``.
            type_code: the ``hoodie_bloom_filter_type_code`` footer value, or None when absent.

        Raises:
            ValueError: bad base64, unknown type code, or a malformed / truncated / over-long payload.
        """
        if type_code is not None and DYNAMIC_TYPE_CODE_PREFIX in type_code:
            if type_code.upper() != TYPE_DYNAMIC_V0:
                raise ValueError(f"Bloom Filter type code not recognizable {type_code!r} (expected DYNAMIC_V0)")
            return DynamicBoundedBloomFilter.from_bytes(_decode_base64(text))
        return SimpleBloomFilter.from_bytes(_decode_base64(text))

    # --- API implemented by both filters -------------------------------------------------------------------------

    @property
    def vector_size(self) -> int:
        """m, the number of bits of each bit vector."""
        raise NotImplementedError

    @property
    def num_hashes(self) -> int:
        """k, the number of hash rounds per key."""
        raise NotImplementedError

    @property
    def hash_type(self) -> int:
        """1 (murmur) for every filter Hudi writes; 0 (jenkins) only for the pre-versioned serialization."""
        raise NotImplementedError

    def add(self, key: str) -> None:
        """Add one record key (its UTF-8 bytes)."""
        self.add_all([key])

    def add_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> None:
        """Add keys in order (the order matters once a dynamic filter grows past one row).

        Args:
            keys: str keys, or an arrow string / large_string array (e.g. the ``_hoodie_record_key`` column).

        Raises:
            ValueError: a key is null, empty or not a string.
        """
        raise NotImplementedError

    def might_contain(self, key: str) -> bool:
        """False only if ``key`` was certainly never added."""
        raise NotImplementedError

    def might_contain_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
        """``might_contain`` for many keys at once, vectorised; returns a bool array in key order."""
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """The binary (Java ``DataOutput``) serialization."""
        raise NotImplementedError

    def serialize(self) -> str:
        """The base64 text Java stores in the footer (``BloomFilter.serializeToString``)."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    def footer(self) -> dict[str, str]:
        """The footer entries ``HoodieBloomFilterWriteSupport.finalizeMetadata`` writes for this filter.

        The type code is written only when it contains ``DYNAMIC``; min/max record keys are not included.
        """
        meta = {FOOTER_BLOOM_KEY: self.serialize()}
        if DYNAMIC_TYPE_CODE_PREFIX in self.type_code:
            meta[FOOTER_TYPE_CODE_KEY] = self.type_code
        return meta


class SimpleBloomFilter(HoodieBloomFilter):
    """A fixed-size bloom filter (``hoodie.bloom.index.filter.type=SIMPLE``).

    Mirrors ``org.apache.hudi.common.bloom.SimpleBloomFilter`` over ``InternalBloomFilter`` (Hadoop's
    ``BloomFilter``): the blob is one 13-byte header and ``ceil(m/8)`` bytes of bits; no type code in the footer.
    """

    type_code: ClassVar[str] = TYPE_SIMPLE

    def __init__(self, num_entries: int = DEFAULT_NUM_ENTRIES, fpp: float = DEFAULT_FPP) -> None:
        """An empty filter sized for ``num_entries`` keys at false-positive rate ``fpp``.

        Raises:
            ValueError: parameters out of range.
        """
        m, k = bloom_parameters(num_entries, fpp)
        self._row = _BitRow(m, k, MURMUR_HASH)

    @classmethod
    def from_bytes(cls, blob: bytes | memoryview) -> SimpleBloomFilter:
        """Parse the binary form (``InternalBloomFilter.readFields``).

        Raises:
            ValueError: malformed, truncated, or followed by extra bytes.
        """
        view = memoryview(blob)
        row, end = _BitRow.read(view, 0, "(SIMPLE)")
        if end != len(view):
            raise ValueError(
                f"SIMPLE bloom filter has {len(view) - end} unexpected trailing byte(s) after {end} bytes "
                "(a DYNAMIC_V0 payload read without its type code?)"
            )
        self = cls.__new__(cls)
        self._row = row
        return self

    @property
    def vector_size(self) -> int:
        return self._row.vector_size

    @property
    def num_hashes(self) -> int:
        return self._row.num_hashes

    @property
    def hash_type(self) -> int:
        return self._row.hash_type

    @property
    def bits(self) -> np.ndarray:
        """The bit vector as a bool array of length m (read-only view)."""
        v = self._row.bits.view()
        v.flags.writeable = False
        return v

    def add(self, key: str) -> None:
        r = self._row
        r.bits[hash_positions(key_bytes(key), r.num_hashes, r.vector_size, r.hash_type)] = True

    def add_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> None:
        arr = _as_string_array(keys)
        r = self._row
        for start in range(0, len(arr), _CHUNK):
            r.set_positions(_batch_positions(arr.slice(start, _CHUNK), r.num_hashes, r.vector_size, r.hash_type))

    def might_contain(self, key: str) -> bool:
        r = self._row
        return r.test(hash_positions(key_bytes(key), r.num_hashes, r.vector_size, r.hash_type))

    def might_contain_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
        arr = _as_string_array(keys)
        r = self._row
        out = np.empty(len(arr), np.bool_)
        for start in range(0, len(arr), _CHUNK):
            pos = _batch_positions(arr.slice(start, _CHUNK), r.num_hashes, r.vector_size, r.hash_type)
            out[start : start + pos.shape[1]] = r.test_many(pos)
        return out

    def to_bytes(self) -> bytes:
        return self._row.to_bytes()

    def __repr__(self) -> str:
        return f"SimpleBloomFilter(m={self.vector_size}, k={self.num_hashes}, bits_set={int(self._row.bits.sum())})"


class DynamicBoundedBloomFilter(HoodieBloomFilter):
    """A bloom filter that adds rows as keys arrive, up to a bound (``hoodie.bloom.index.filter.type=DYNAMIC_V0``).

    Mirrors ``HoodieDynamicBoundedBloomFilter`` over ``InternalDynamicBloomFilter``. Every row is a standard filter
    of the same m and k sized for ``num_entries`` keys. A key goes to the last row until that row has taken
    ``num_entries`` keys; then a new row is opened while ``rows * num_entries < max_entries``; past that bound every
    key goes round-robin over all rows (row 0 first, twice in a row, exactly as Java does) and the fpp is no longer
    honoured. A key tests positive if any row holds it.

    Serialized as the outer header, ``nr``, ``currentNbRecord``, the number of rows, then each row.
    ``max_entries``, the bound flag and the round-robin index are not serialized: as in Java, a deserialized filter
    has ``max_entries = 0`` (it never grows again) and restarts the round robin at row 0.
    """

    type_code: ClassVar[str] = TYPE_DYNAMIC_V0

    def __init__(
        self,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        max_entries: int = DEFAULT_DYNAMIC_MAX_ENTRIES,
    ) -> None:
        """An empty filter with one row sized for ``num_entries`` keys.

        Raises:
            ValueError: parameters out of range.
        """
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or not 0 <= max_entries <= _INT_MAX:
            raise ValueError(f"bloom filter max_entries must be an int in 0..{_INT_MAX}, got {max_entries!r}")
        m, k = bloom_parameters(num_entries, fpp)
        self._m, self._k, self._hash_type = m, k, MURMUR_HASH
        self._nr = num_entries
        self._max_nr = max_entries
        self._current = 0
        self._reached_max = False
        self._cur_matrix_index = 0
        self._rows = [_BitRow(m, k, MURMUR_HASH)]

    @classmethod
    def from_bytes(cls, blob: bytes | memoryview) -> DynamicBoundedBloomFilter:
        """Parse the binary form (``InternalDynamicBloomFilter.readFields``).

        Raises:
            ValueError: malformed, truncated, rows whose parameters differ from the outer header, or extra bytes.
        """
        view = memoryview(blob)
        (k, hash_type, m), pos = _read_header(view, 0, "(DYNAMIC_V0 outer header)")
        if pos + 12 > len(view):
            raise ValueError(f"DYNAMIC_V0 bloom filter is truncated at offset {pos}: nr, count and row count expected")
        nr, current, nrows = struct.unpack_from(">iii", view, pos)
        pos += 12
        if nr <= 0:
            raise ValueError(f"DYNAMIC_V0 bloom filter: entries per row (nr) must be > 0, got {nr}")
        if nrows <= 0:
            raise ValueError(f"DYNAMIC_V0 bloom filter: number of rows must be > 0, got {nrows}")
        rows = []
        for i in range(nrows):
            row, pos = _BitRow.read(view, pos, f"(DYNAMIC_V0 row {i})")
            if (row.vector_size, row.num_hashes, row.hash_type) != (m, k, hash_type):
                raise ValueError(
                    f"DYNAMIC_V0 bloom filter row {i} has m={row.vector_size}, k={row.num_hashes}, "
                    f"hash type {row.hash_type}; the outer header says m={m}, k={k}, hash type {hash_type}"
                )
            rows.append(row)
        if pos != len(view):
            raise ValueError(f"DYNAMIC_V0 bloom filter has {len(view) - pos} unexpected trailing byte(s) after {pos}")
        self = cls.__new__(cls)
        self._m, self._k, self._hash_type = m, k, hash_type
        self._nr = nr
        self._max_nr = 0  # not serialized: Java's field default
        self._current = current
        self._reached_max = False
        self._cur_matrix_index = 0
        self._rows = rows
        return self

    @property
    def vector_size(self) -> int:
        return self._m

    @property
    def num_hashes(self) -> int:
        return self._k

    @property
    def hash_type(self) -> int:
        return self._hash_type

    @property
    def num_entries(self) -> int:
        """nr: keys per row before a new row is opened."""
        return self._nr

    @property
    def max_entries(self) -> int:
        """The growth bound (0 after deserialization, as in Java)."""
        return self._max_nr

    @property
    def current_nb_record(self) -> int:
        """Keys added since the last row was opened (keeps counting once the bound is reached)."""
        return self._current

    @property
    def num_rows(self) -> int:
        """Number of internal standard filters (``getMatrixLength``)."""
        return len(self._rows)

    def row_bits(self, index: int) -> np.ndarray:
        """Bit vector of row ``index`` as a bool array of length m (read-only view)."""
        v = self._rows[index].bits.view()
        v.flags.writeable = False
        return v

    def _targets(self, count: int) -> np.ndarray:
        """Row index of each of the next ``count`` keys; advances the growth state.

        Mirrors ``InternalDynamicBloomFilter.add`` / ``getActiveStandardBF`` one segment at a time.
        """
        out = np.empty(count, np.int64)
        i = 0
        while i < count:
            if self._reached_max:
                rest = count - i
                out[i:] = (self._cur_matrix_index + np.arange(rest, dtype=np.int64)) % len(self._rows)
                self._cur_matrix_index = (self._cur_matrix_index + rest) & _MASK32
                self._current += rest
                break
            if self._current >= self._nr:
                if len(self._rows) * self._nr < self._max_nr:
                    self._rows.append(_BitRow(self._m, self._k, self._hash_type))
                    self._current = 0
                else:
                    self._reached_max = True
                    out[i] = 0
                    self._current += 1
                    i += 1
                continue
            take = min(self._nr - self._current, count - i)
            out[i : i + take] = len(self._rows) - 1
            self._current += take
            i += take
        return out

    def add(self, key: str) -> None:
        positions = hash_positions(key_bytes(key), self._k, self._m, self._hash_type)
        self._rows[int(self._targets(1)[0])].bits[positions] = True

    def add_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> None:
        arr = _as_string_array(keys)
        for start in range(0, len(arr), _CHUNK):
            chunk = arr.slice(start, _CHUNK)
            targets = self._targets(len(chunk))
            first = int(targets[0])
            if (targets == first).all():
                self._rows[first].set_positions(_batch_positions(chunk, self._k, self._m, self._hash_type))
            else:
                # split the keys (cheaper than the k x n positions) by target row, then hash each part
                for r in np.unique(targets):
                    part = chunk.filter(pa.array(targets == r))
                    self._rows[int(r)].set_positions(_batch_positions(part, self._k, self._m, self._hash_type))

    def might_contain(self, key: str) -> bool:
        positions = hash_positions(key_bytes(key), self._k, self._m, self._hash_type)
        return any(row.test(positions) for row in self._rows)

    def might_contain_all(self, keys: Iterable[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
        arr = _as_string_array(keys)
        out = np.zeros(len(arr), np.bool_)
        for start in range(0, len(arr), _CHUNK):
            pos = _batch_positions(arr.slice(start, _CHUNK), self._k, self._m, self._hash_type)
            hit = np.zeros(pos.shape[1], np.bool_)
            for row in self._rows:
                hit |= row.test_many(pos)
            out[start : start + pos.shape[1]] = hit
        return out

    def to_bytes(self) -> bytes:
        parts = [
            _HEADER.pack(_VERSION, self._k, self._hash_type, self._m),
            struct.pack(">iii", self._nr, _to_int32(self._current & _MASK32), len(self._rows)),
        ]
        parts.extend(row.to_bytes() for row in self._rows)
        return b"".join(parts)

    def __repr__(self) -> str:
        return (
            f"DynamicBoundedBloomFilter(m={self._m}, k={self._k}, nr={self._nr}, max_entries={self._max_nr}, "
            f"rows={len(self._rows)}, current_nb_record={self._current})"
        )


def bloom_footer(
    keys: Iterable[str] | pa.Array | pa.ChunkedArray,
    *,
    num_entries: int = DEFAULT_NUM_ENTRIES,
    fpp: float = DEFAULT_FPP,
    filter_type: str = DEFAULT_FILTER_TYPE,
    max_entries: int = DEFAULT_DYNAMIC_MAX_ENTRIES,
) -> dict[str, str]:
    """The bloom footer entries Java writes for a base file whose records have these keys, in file row order.

    One key per written record, duplicates included (Java calls ``addKey`` per record). Returns
    ``org.apache.hudi.bloomfilter`` and, for dynamic filters, ``hoodie_bloom_filter_type_code``; the min/max record
    key entries are written elsewhere.

    Raises:
        ValueError: bad configuration, or a key that is null, empty or not a string.
    """
    bf = HoodieBloomFilter.create(num_entries, fpp, filter_type, max_entries)
    bf.add_all(keys)
    return bf.footer()
