"""kgguf.py - a small numpy-only GGUF v3 reader and streaming writer.

What it is for: the Python side of Kestrel Eval (hf2gguf.py, export_oracle.py and the
tools-* tests) reads and writes GGUF files with it, with no dependency beyond numpy
(Debian's numpy 1.24 and numpy 2.x both work).  What it is not: a general ggml library;
it knows the tensor types the project uses (f32, f16, bf16, q8_0, q4_0, i32) and the
quantisers are the ggml *reference* ones (quantize_row_q4_0_ref / quantize_row_q8_0_ref),
byte for byte, not the SIMD variants.

Format (ggml docs/gguf.md): little endian; magic "GGUF", u32 version 3, u64 n_tensors,
u64 n_kv; strings are u64 length + bytes; kv = key, u32 value type, value; arrays are
u32 element type + u64 count + elements; tensor info = name, u32 n_dims, u64 ne[n_dims]
(ne[0] contiguous, so ggml {in, out} is numpy shape (out, in)), u32 ggml type, u64 offset
relative to the data section (a multiple of general.alignment, default 32).

Shapes in this module are numpy shapes (slowest first) unless a name says `ne`.
"""

import os
import struct
import subprocess

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32

# metadata value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
VTYPE_NAMES = {UINT8: "u8", INT8: "i8", UINT16: "u16", INT16: "i16", UINT32: "u32", INT32: "i32",
               FLOAT32: "f32", BOOL: "bool", STRING: "str", ARRAY: "array", UINT64: "u64",
               INT64: "i64", FLOAT64: "f64"}
_SCALAR_FMT = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
               FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}

# ggml tensor types
F32, F16, Q4_0, Q8_0, I32, BF16 = 0, 1, 2, 8, 26, 30
TYPE_NAMES = {F32: "f32", F16: "f16", Q4_0: "q4_0", Q8_0: "q8_0", I32: "i32", BF16: "bf16"}
TYPE_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}
# (elements per block, bytes per block)
BLOCK = {F32: (1, 4), F16: (1, 2), BF16: (1, 2), I32: (1, 4), Q8_0: (32, 34), Q4_0: (32, 18)}
QK = 32


class GGUFError(Exception):
    """A malformed file or a bad call; the message names the file and where."""


def tensor_nbytes(gtype, shape):
    """Bytes of a tensor of ggml type gtype and numpy shape (rows ..., ne0)."""
    if gtype not in BLOCK:
        raise GGUFError("unsupported ggml type %d" % gtype)
    per, nb = BLOCK[gtype]
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if n % per:
        raise GGUFError("%d elements are not a whole number of %s blocks" % (n, TYPE_NAMES[gtype]))
    if len(shape) and shape[-1] % per:
        raise GGUFError("row length %d is not a multiple of %d for %s" % (shape[-1], per, TYPE_NAMES[gtype]))
    return n // per * nb


# ---------------------------------------------------------------------------------------
# conversions and the ggml reference quantisers
# ---------------------------------------------------------------------------------------

def f32_to_bf16(x):
    """x: float32 array (any shape) -> uint16 bf16 bits, round to nearest even (ggml's rule;
    NaN stays a quiet NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u.astype(np.uint64) + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 64).astype(np.uint16), rounded)


def bf16_to_f32(b):
    """b: uint16 bf16 bits (any shape) -> float32."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _roundf(v):
    """C roundf (half away from zero) of float32 values |v| <= 2^22, exactly (done in float64)."""
    v64 = v.astype(np.float64)
    return np.sign(v64) * np.floor(np.abs(v64) + 0.5)


def quantize_q8_0(x):
    """x: float32 (..., n) with n % 32 == 0 -> uint8 (..., n/32*34): blocks of f16 d + 32 int8.
    ggml quantize_row_q8_0_ref: amax = max|x|, d = amax/127, id = d ? 1/d : 0, q = roundf(x*id)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    lead = x.shape[:-1]
    b = x.reshape(-1, QK)                                     # (nb, 32)
    amax = np.max(np.abs(b), axis=1)                          # (nb,)
    d = (amax / np.float32(127.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, np.float32(1.0)), np.float32(0.0))
    idv = idv.astype(np.float32)
    q = _roundf((b * idv[:, None]).astype(np.float32)).astype(np.int8)
    out = np.empty((b.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(lead + (x.shape[-1] // QK * 34,))


def quantize_q4_0(x):
    """x: float32 (..., n) with n % 32 == 0 -> uint8 (..., n/32*18): blocks of f16 d + 16 bytes.
    ggml quantize_row_q4_0_ref: max = the first element of largest |x| (sign kept), d = max/-8,
    id = d ? 1/d : 0, q = min(15, (int8)(x*id + 8.5f)); byte j = q[j] | q[j+16] << 4."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    lead = x.shape[:-1]
    b = x.reshape(-1, QK)                                     # (nb, 32)
    imax = np.argmax(np.abs(b), axis=1)                       # first occurrence, like the strict '<'
    mx = b[np.arange(b.shape[0]), imax]                       # (nb,)
    mx = np.where(mx == 0, np.float32(0.0), mx).astype(np.float32)  # ggml starts from max = +0.0f
    d = (mx / np.float32(-8.0)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, np.float32(1.0)), np.float32(0.0))
    idv = idv.astype(np.float32)
    v = ((b * idv[:, None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.minimum(np.trunc(v), 15).astype(np.uint8)          # (nb, 32), v >= 0 so trunc == (int8) cast
    out = np.empty((b.shape[0], 18), dtype=np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.reshape(lead + (x.shape[-1] // QK * 18,))


def dequantize(raw, gtype, shape):
    """raw: uint8 bytes of one tensor; shape: numpy shape -> float32 (or int32 for i32) array."""
    raw = np.frombuffer(memoryview(raw), dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw
    if gtype == F32:
        return raw.view(np.float32).reshape(shape)
    if gtype == I32:
        return raw.view(np.int32).reshape(shape)
    if gtype == F16:
        return raw.view(np.float16).astype(np.float32).reshape(shape)
    if gtype == BF16:
        return bf16_to_f32(raw.view(np.uint16)).reshape(shape)
    if gtype == Q8_0:
        b = raw.reshape(-1, 34)
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)   # (nb, 1)
        q = b[:, 2:].view(np.int8).astype(np.float32)
        return (q * d).reshape(shape)
    if gtype == Q4_0:
        b = raw.reshape(-1, 18)
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)   # (nb, 1)
        qs = b[:, 2:]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
        return (q * d).reshape(shape)
    raise GGUFError("unsupported ggml type %d" % gtype)


def encode(arr, gtype):
    """arr: numpy array (any float/int dtype), numpy shape kept -> bytes of ggml type gtype."""
    if gtype == F32:
        return np.ascontiguousarray(arr, dtype="<f4").tobytes()
    if gtype == I32:
        return np.ascontiguousarray(arr, dtype="<i4").tobytes()
    if gtype == F16:
        return np.ascontiguousarray(arr, dtype=np.float32).astype("<f2").tobytes()
    if gtype == BF16:
        return f32_to_bf16(np.asarray(arr, dtype=np.float32)).astype("<u2").tobytes()
    if gtype == Q8_0:
        return quantize_q8_0(np.asarray(arr, dtype=np.float32)).tobytes()
    if gtype == Q4_0:
        return quantize_q4_0(np.asarray(arr, dtype=np.float32)).tobytes()
    raise GGUFError("unsupported ggml type %d" % gtype)


# ---------------------------------------------------------------------------------------
# writer
# ---------------------------------------------------------------------------------------

def _pack_str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _pack_value(vtype, value, where):
    if vtype in _SCALAR_FMT:
        try:
            return struct.pack(_SCALAR_FMT[vtype], value)
        except (struct.error, TypeError) as e:
            raise GGUFError("%s: bad %s value %r (%s)" % (where, VTYPE_NAMES[vtype], value, e))
    if vtype == STRING:
        if not isinstance(value, (str, bytes)):
            raise GGUFError("%s: bad str value %r" % (where, value))
        return _pack_str(value)
    if vtype == ARRAY:
        etype, items = value
        parts = [struct.pack("<IQ", etype, len(items))]
        parts += [_pack_value(etype, it, where) for it in items]
        return b"".join(parts)
    raise GGUFError("%s: unknown value type %r" % (where, vtype))


class Writer:
    """Streaming GGUF writer.  Declare metadata and tensors (name, numpy shape, ggml type and a
    producer called once, at write time, that returns the tensor as a numpy array), then
    write(): the header goes out first, then each tensor is produced, encoded and written in
    turn, so at most one converted tensor is in memory.  Output goes to PATH.tmp, renamed to
    PATH only when complete; on any error the .tmp file is removed."""

    def __init__(self, path, alignment=DEFAULT_ALIGNMENT):
        self.path = path
        self.alignment = alignment
        self.kv = []        # (key, vtype, value)
        self.tensors = []   # (name, shape, gtype, producer)
        self._names = set()

    def add(self, key, vtype, value):
        """value: python scalar/str; for ARRAY, (element type, list)."""
        if any(k == key for k, _, _ in self.kv):
            raise GGUFError("%s: duplicate key '%s'" % (self.path, key))
        _pack_value(vtype, value, "%s: key '%s'" % (self.path, key))  # validate now
        self.kv.append((key, vtype, value))

    def add_tensor(self, name, shape, gtype, producer):
        """shape: numpy shape (slowest first); producer() -> array of that shape."""
        if name in self._names:
            raise GGUFError("%s: duplicate tensor '%s'" % (self.path, name))
        if not 1 <= len(shape) <= 4:
            raise GGUFError("%s: tensor '%s' has %d dims" % (self.path, name, len(shape)))
        try:
            tensor_nbytes(gtype, shape)
        except GGUFError as e:
            raise GGUFError("%s: tensor '%s': %s" % (self.path, name, e))
        self._names.add(name)
        self.tensors.append((name, tuple(int(s) for s in shape), gtype, producer))

    def add_array(self, name, arr, gtype):
        """Convenience for small tensors already in memory."""
        self.add_tensor(name, arr.shape, gtype, lambda: arr)

    def _pad(self, n):
        return (-n) % self.alignment

    def write(self):
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "wb") as f:
                self._write(f)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _write(self, f):
        head = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))]
        for key, vtype, value in self.kv:
            head.append(_pack_str(key) + struct.pack("<I", vtype) + _pack_value(vtype, value, key))
        offset = 0
        offsets = []
        for name, shape, gtype, _ in self.tensors:
            ne = shape[::-1]
            head.append(_pack_str(name) + struct.pack("<I", len(ne)) +
                        struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", gtype, offset))
            offsets.append(offset)
            offset += tensor_nbytes(gtype, shape)
            offset += self._pad(offset)
        hdr = b"".join(head)
        f.write(hdr + b"\0" * self._pad(len(hdr)))
        for (name, shape, gtype, producer), off in zip(self.tensors, offsets):
            arr = np.asarray(producer())
            if tuple(arr.shape) != shape:
                raise GGUFError("%s: tensor '%s': produced shape %s, declared %s"
                                % (self.path, name, tuple(arr.shape), shape))
            # encode in slabs of rows (~16 M elements) so a huge tensor's quantiser temporaries stay small
            rows = arr.reshape(-1, shape[-1])
            step = max(1, (1 << 24) // max(1, shape[-1]))
            nbytes = 0
            for r0 in range(0, rows.shape[0], step):
                data = encode(rows[r0:r0 + step], gtype)
                f.write(data)
                nbytes += len(data)
            del arr, rows
            f.write(b"\0" * self._pad(nbytes))


# ---------------------------------------------------------------------------------------
# reader
# ---------------------------------------------------------------------------------------

class Tensor:
    def __init__(self, name, ne, gtype, offset):
        self.name, self.ne, self.type, self.offset = name, ne, gtype, offset
        self.shape = tuple(ne[::-1])   # numpy shape
        self.data = None               # raw uint8 view, set by Reader

    def array(self):
        """Dequantised float32 (or int32) numpy array of self.shape."""
        return dequantize(self.data, self.type, self.shape)


class Reader:
    """Reads a whole GGUF file (a .zst path is decompressed with the zstd command).
    kv: dict key -> (vtype, value) in file order (ARRAY value = (etype, list));
    tensors: dict name -> Tensor in file order."""

    def __init__(self, path):
        self.path = path
        if path.endswith(".zst"):
            try:
                buf = subprocess.run(["zstd", "-q", "-d", "-c", path], check=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout
            except (OSError, subprocess.CalledProcessError) as e:
                raise GGUFError("%s: cannot decompress (%s)" % (path, e))
            self.buf = np.frombuffer(buf, dtype=np.uint8)
        else:
            try:
                self.buf = np.memmap(path, dtype=np.uint8, mode="r") if os.path.getsize(path) else np.zeros(0, np.uint8)
            except OSError as e:
                raise GGUFError("%s: cannot read (%s)" % (path, e.strerror or e))
        self.pos = 0
        self.kv = {}
        self.tensors = {}
        self._parse()

    def _fail(self, what):
        raise GGUFError("%s: %s (offset %d)" % (self.path, what, self.pos))

    def _take(self, n):
        if self.pos + n > len(self.buf):
            self._fail("truncated file")
        b = self.buf[self.pos:self.pos + n].tobytes()
        self.pos += n
        return b

    def _scalar(self, vtype):
        fmt = _SCALAR_FMT[vtype]
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def _str(self):
        n = self._scalar(UINT64)
        if n > len(self.buf):
            self._fail("string length %d past the end" % n)
        b = self._take(n)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            self._fail("string is not UTF-8")

    def _value(self, vtype, depth=0):
        if vtype in _SCALAR_FMT:
            return self._scalar(vtype)
        if vtype == STRING:
            return self._str()
        if vtype == ARRAY and depth < 4:
            etype = self._scalar(UINT32)
            n = self._scalar(UINT64)
            if n > len(self.buf):
                self._fail("array count %d past the end" % n)
            return (etype, [self._value(etype, depth + 1) for _ in range(n)])
        self._fail("unknown value type %d" % vtype)

    def _parse(self):
        if self._take(4) != GGUF_MAGIC:
            self.pos = 0
            self._fail("not a GGUF file (bad magic)")
        version = self._scalar(UINT32)
        if version != GGUF_VERSION:
            self._fail("unsupported GGUF version %d" % version)
        n_tensors = self._scalar(UINT64)
        n_kv = self._scalar(UINT64)
        for _ in range(n_kv):
            key = self._str()
            vtype = self._scalar(UINT32)
            if key in self.kv:
                self._fail("duplicate key '%s'" % key)
            self.kv[key] = (vtype, self._value(vtype))
        self.alignment = self.kv.get("general.alignment", (UINT32, DEFAULT_ALIGNMENT))[1]
        infos = []
        for _ in range(n_tensors):
            name = self._str()
            nd = self._scalar(UINT32)
            if not 1 <= nd <= 4:
                self._fail("tensor '%s' has %d dims" % (name, nd))
            ne = struct.unpack("<%dQ" % nd, self._take(8 * nd))
            gtype = self._scalar(UINT32)
            off = self._scalar(UINT64)
            if gtype not in BLOCK:
                self._fail("tensor '%s' has unsupported type %d" % (name, gtype))
            if name in self.tensors:
                self._fail("duplicate tensor '%s'" % name)
            t = Tensor(name, tuple(ne), gtype, off)
            self.tensors[name] = t
            infos.append(t)
        self.data_offset = self.pos + (-self.pos) % self.alignment
        for t in infos:
            if t.offset % self.alignment:
                raise GGUFError("%s: tensor '%s' offset %d is not aligned to %d"
                                % (self.path, t.name, t.offset, self.alignment))
            start = self.data_offset + t.offset
            n = tensor_nbytes(t.type, t.shape)
            if start + n > len(self.buf):
                raise GGUFError("%s: tensor '%s' data runs past the end of the file" % (self.path, t.name))
            t.data = self.buf[start:start + n]

    def value(self, key):
        """The value of key (ARRAY values as a plain list); GGUFError naming the key if absent."""
        if key not in self.kv:
            raise GGUFError("%s: missing key '%s'" % (self.path, key))
        vtype, v = self.kv[key]
        return v[1] if vtype == ARRAY else v
