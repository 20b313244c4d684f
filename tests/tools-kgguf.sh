#!/bin/sh
# tools-kgguf.sh - tools/kgguf.py: ggml reference quantisers (known answers worked out by hand),
# bf16 rounding, GGUF metadata round trip of every value type, exact header bytes, tensor round
# trip of every tensor type, reader errors.
. "$top_srcdir/tests/lib.sh"
need_python

# The python side prints one line per check: "desc<TAB>expected<TAB>actual".
cat >"$T/checks.py" <<'EOF'
import struct, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import kgguf as k

def check(desc, expected, actual):
    print("%s\t%s\t%s" % (desc, expected, actual))

hexs = lambda b: bytes(b).hex()

# ---- q8_0: d = amax/127, q = roundf(x/d), half away from zero --------------------------------
# block 1: amax 127 -> d = 1 (f16 0x3c00); 2.5 -> 3, -2.5 -> -3, 0.5 -> 1, 1.5 -> 2, 3.49 -> 3
b1 = [127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 3.49, -127, 0.4999] + [0] * 22
q1 = [127, 3, -3, 1, -1, 2, -2, 3, -127, 0] + [0] * 22
# block 2: amax 254 -> d = 2 (f16 0x4000), x/2: 5 -> 3, -3 -> -2, 1 -> 1, 254 -> 127
b2 = [5, -3, 1, 254] + [0] * 28
q2 = [3, -2, 1, 127] + [0] * 28
# block 3: all zero -> d = 0, id = 0, q = 0
b3 = [0] * 32
want = ("003c" + bytes(np.array(q1, np.int8).view(np.uint8)).hex() +
        "0040" + bytes(np.array(q2, np.int8).view(np.uint8)).hex() +
        "0000" + "00" * 32)
got = hexs(k.quantize_q8_0(np.array([b1 + b2 + b3], np.float32)))
check("q8_0 known answer (3 blocks, ties away from zero, zero block)", want, got)
check("q8_0 output shape (2 rows of 64 -> 2 x 68 bytes)", "(2, 68)",
      str(k.quantize_q8_0(np.zeros((2, 64), np.float32)).shape))

# ---- q4_0: max = first element of largest |x| keeping its sign, d = max/-8, q = min(15, (int8)(x/d + 8.5))
# block A: max -8 -> d = 1 (0x3c00); q = trunc(x + 8.5)
a = [-8, 7, 7.4, 0, -0.5, 0.49, 0.5, -7.6, -1] + [0] * 23
qa = [0, 15, 15, 8, 8, 8, 9, 0, 7] + [8] * 23
# block B: 8 at index 5 comes before -8 at index 6: max = +8, d = -1 (0xbc00); q = trunc(-x + 8.5)
bb = [0] * 5 + [8, -8, 1, -1, 3.2] + [0] * 22
qb = [8] * 5 + [0, 15, 7, 9, 5] + [8] * 22          # -8 -> 16.5 -> 16 -> clamped to 15
# block C: all zero (written as -0.0) -> ggml's max stays +0.0f, d = 0.0f/-8 = -0.0 (f16 0x8000),
# id = 0, q = 8
qc = [8] * 32
def pack(q):
    return bytes((q[j] | (q[j + 16] << 4)) for j in range(16)).hex()
want = "003c" + pack(qa) + "00bc" + pack(qb) + "0080" + pack(qc)
got = hexs(k.quantize_q4_0(np.array(a + bb + [-0.0] * 32, np.float32)))
check("q4_0 known answer (3 blocks, sign of max, first max wins, clamp 15, zero block)", want, got)
check("q4_0 dequantised block A", str([float(v) for v in qa[:9]]),
      str([float(v) + 8.0 for v in k.dequantize(k.quantize_q4_0(np.array(a, np.float32)), k.Q4_0, (32,))[:9]]))

# q8_0 of a random row: every dequantised value within d/2 of the input
rng = np.random.default_rng(1)
x = rng.standard_normal((8, 256)).astype(np.float32)
y = k.dequantize(k.quantize_q8_0(x), k.Q8_0, x.shape)
d = np.abs(x).reshape(-1, 32).max(1) / 127
err = np.abs(x - y).reshape(-1, 32).max(1)
check("q8_0 random: error <= d/2 + f16 rounding in every block", "True", str(bool(np.all(err <= d * 0.5 + np.abs(x).reshape(-1, 32).max(1) * 1e-3))))

# ---- bf16 round to nearest even ----------------------------------------------------------------
bits = np.array([0x3F800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x7FC00000, 0x7F800000, 0x80000000,
                 0x7F7FFFFF, 0xFF800000], np.uint32)
want = "3f80 3f80 3f82 3f81 7fc0 7f80 8000 7f80 ff80"
got = " ".join("%04x" % v for v in k.f32_to_bf16(bits.view(np.float32)))
check("bf16 RNE (tie to even both ways, sticky bit, NaN, inf, -0, overflow to inf)", want, got)

# ---- metadata: exact bytes of a tiny file --------------------------------------------------------
p = sys.argv[2] + "/tiny.gguf"
w = k.Writer(p)
w.add("a", k.UINT32, 7)
w.write()
want = ("47475546" + "03000000" + "0000000000000000" + "0100000000000000" +
        "0100000000000000" + "61" + "04000000" + "07000000")
want += "00" * ((-len(bytes.fromhex(want))) % 32)
check("exact bytes of a GGUF with one u32 key and no tensors", want, open(p, "rb").read().hex())

# ---- metadata round trip of every value type ----------------------------------------------------
kvs = [("t.u8", k.UINT8, 255), ("t.i8", k.INT8, -128), ("t.u16", k.UINT16, 65535), ("t.i16", k.INT16, -32768),
       ("t.u32", k.UINT32, 2**32 - 1), ("t.i32", k.INT32, -2**31), ("t.f32", k.FLOAT32, -0.15625),
       ("t.bool", k.BOOL, True), ("t.bool0", k.BOOL, False), ("t.str", k.STRING, "h\u00e9llo \u2603"),
       ("t.empty", k.STRING, ""), ("t.u64", k.UINT64, 2**64 - 1), ("t.i64", k.INT64, -2**63),
       ("t.f64", k.FLOAT64, 3.141592653589793),
       ("t.arr_i32", k.ARRAY, (k.INT32, [11, 11, 10, 0])), ("t.arr_str", k.ARRAY, (k.STRING, ["a", "", "\u00fc"])),
       ("t.arr_f32", k.ARRAY, (k.FLOAT32, [0.5, -2.0])), ("t.arr_u8", k.ARRAY, (k.UINT8, [0, 255])),
       ("t.arr_i8", k.ARRAY, (k.INT8, [-1])), ("t.arr_u16", k.ARRAY, (k.UINT16, [1])), ("t.arr_i16", k.ARRAY, (k.INT16, [-2])),
       ("t.arr_u32", k.ARRAY, (k.UINT32, [3])), ("t.arr_bool", k.ARRAY, (k.BOOL, [True, False])),
       ("t.arr_u64", k.ARRAY, (k.UINT64, [2**63])), ("t.arr_i64", k.ARRAY, (k.INT64, [-5])),
       ("t.arr_f64", k.ARRAY, (k.FLOAT64, [1e300])), ("t.arr_empty", k.ARRAY, (k.UINT32, [])),
       ("t.arr_nested", k.ARRAY, (k.ARRAY, [(k.INT32, [1, 2]), (k.STRING, ["x"])]))]
p = sys.argv[2] + "/kv.gguf"
w = k.Writer(p)
for key, vt, v in kvs:
    w.add(key, vt, v)
w.write()
r = k.Reader(p)
for key, vt, v in kvs:
    check("kv round trip %s (%s)" % (key, k.VTYPE_NAMES[vt]), repr((vt, v)), repr(r.kv.get(key)))
check("kv order kept", repr([x[0] for x in kvs]), repr(list(r.kv)))

# ---- tensors: every type, shapes, alignment -------------------------------------------------------
p = sys.argv[2] + "/t.gguf"
x = rng.standard_normal((3, 64)).astype(np.float32)
w = k.Writer(p)
w.add("general.alignment", k.UINT32, 32)
for t in (k.F32, k.F16, k.BF16, k.Q8_0, k.Q4_0):
    w.add_array("x.%s" % k.TYPE_NAMES[t], x, t)
w.add_array("ids", np.array([5, -1, 7], np.int32), k.I32)
w.add_array("vec", np.arange(3, dtype=np.float32), k.F32)   # 12 bytes: the next offset must be padded
w.add_array("after", x[:1], k.Q8_0)
w.write()
r = k.Reader(p)
check("tensor names in order", "x.f32 x.f16 x.bf16 x.q8_0 x.q4_0 ids vec after", " ".join(r.tensors))
check("ne order reversed from numpy shape", "(64, 3)", str(r.tensors["x.q4_0"].ne))
check("f32 exact", "True", str(bool(np.array_equal(r.tensors["x.f32"].array(), x))))
check("f16 = numpy's float16 rounding", "True", str(bool(np.array_equal(r.tensors["x.f16"].array(), x.astype(np.float16).astype(np.float32)))))
check("bf16 = f32_to_bf16", "True", str(bool(np.array_equal(r.tensors["x.bf16"].data.view(np.uint16).reshape(3, 64), k.f32_to_bf16(x)))))
check("q8_0 bytes = quantize_q8_0", "True", str(bool(np.array_equal(r.tensors["x.q8_0"].data, k.quantize_q8_0(x).reshape(-1)))))
check("q4_0 bytes = quantize_q4_0", "True", str(bool(np.array_equal(r.tensors["x.q4_0"].data, k.quantize_q4_0(x).reshape(-1)))))
check("i32 exact", "[5, -1, 7]", str(r.tensors["ids"].array().tolist()))
check("every offset aligned to 32", "True", str(all(t.offset % 32 == 0 for t in r.tensors.values())))
check("data section aligned to 32", "0", str(r.data_offset % 32))
check("offset after a 12-byte tensor padded", str(r.tensors["vec"].offset + 32), str(r.tensors["after"].offset))

# ---- errors ---------------------------------------------------------------------------------------
def err(fn):
    try:
        fn()
    except k.GGUFError as e:
        return str(e)
    return "no error"
open(sys.argv[2] + "/bad.gguf", "wb").write(b"GGUX" + b"\0" * 40)
check("bad magic", sys.argv[2] + "/bad.gguf: not a GGUF file (bad magic) (offset 0)", err(lambda: k.Reader(sys.argv[2] + "/bad.gguf")))
blob = open(p, "rb").read()
open(sys.argv[2] + "/trunc.gguf", "wb").write(blob[:-40])
check("truncated data names the tensor", sys.argv[2] + "/trunc.gguf: tensor 'after' data runs past the end of the file",
      err(lambda: k.Reader(sys.argv[2] + "/trunc.gguf")))
w = k.Writer(sys.argv[2] + "/q.gguf")
check("q4_0 row not a multiple of 32", sys.argv[2] + "/q.gguf: tensor 'w': row length 48 is not a multiple of 32 for q4_0",
      err(lambda: w.add_tensor("w", (2, 48), k.Q4_0, None)))
import os
w = k.Writer(sys.argv[2] + "/partial.gguf")
w.add_tensor("w", (2, 32), k.F32, lambda: np.zeros((2, 31), np.float32))
e = err(w.write)
check("producer shape mismatch is an error", sys.argv[2] + "/partial.gguf: tensor 'w': produced shape (2, 31), declared (2, 32)", e)
check("no output and no .tmp left after a failed write", "False False",
      "%s %s" % (os.path.exists(sys.argv[2] + "/partial.gguf"), os.path.exists(sys.argv[2] + "/partial.gguf.tmp")))
EOF

py_checks "$T/checks.py" "$top_srcdir/tools" "$T"
done_testing
