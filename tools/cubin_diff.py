#!/usr/bin/env python3
"""tools/cubin_diff.py - which kernels' machine code differs between two CUDA builds.

usage: tools/cubin_diff.py A B
  A, B: a cubin (`nvcc -cubin`), or a host object, library or program with the device code
  embedded (`nvcc -c`: the sm_XX cubin inside its .nv_fatbin; the first one found is compared).
Prints one line per kernel whose code (its ELF section .text.NAME) differs or is in one side only
("differs NAME", "only-a NAME", "only-b NAME"), then "summary: N kernels, S same, D differ, A only-a,
B only-b". Exit 0 when every kernel is in both and the same, 1 otherwise, 2 on bad usage or input.

Why (cuda/PERF-NOTES.md v30): NVVM compiled one kernel of the same source differently from one run
to the next, so two builds of one commit gave two libraries and a SHA-256 did not name its source.
`make check` compiles the kernels twice (the library's object, and the PTX that the ptxas report is
made from); tests/cuda-build-determinism.sh compares the two with this.
"""
import struct
import sys

EM_CUDA = 190


def cuda_elf(data, path):
    """the first embedded ELF image whose machine is CUDA, as bytes"""
    i = data.find(b'\x7fELF')
    while i >= 0:
        if len(data) >= i + 0x40 and data[i + 4] == 2 and data[i + 5] == 1:  # ELF64, little-endian
            machine = struct.unpack_from('<H', data, i + 18)[0]
            if machine == EM_CUDA:
                shoff = struct.unpack_from('<Q', data, i + 0x28)[0]
                shentsize, shnum = struct.unpack_from('<HH', data, i + 0x3A)
                end = i + shoff + shentsize * shnum
                if shentsize < 64 or shnum == 0 or end > len(data):
                    raise ValueError('%s: a CUDA ELF image at offset %d is cut short' % (path, i))
                return data[i:end]
        i = data.find(b'\x7fELF', i + 4)
    raise ValueError('%s: no CUDA device code (no ELF image for machine %d) in it' % (path, EM_CUDA))


def kernel_texts(path):
    """{kernel name: its code} from the .text.NAME sections of the file's CUDA ELF image"""
    with open(path, 'rb') as f:
        elf = cuda_elf(f.read(), path)
    shoff = struct.unpack_from('<Q', elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3A)
    heads = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + k * shentsize) for k in range(shnum)]
    if shstrndx >= shnum:
        raise ValueError('%s: the CUDA ELF image has no section name table' % path)
    names_at = heads[shstrndx][4]
    out = {}
    for name_off, kind, _flags, _addr, off, size, _link, _info, _align, _ent in heads:
        end = elf.find(b'\0', names_at + name_off)
        name = elf[names_at + name_off:end].decode('ascii', 'replace')
        if name.startswith('.text.') and kind != 8:  # 8: SHT_NOBITS
            if off + size > len(elf):
                raise ValueError('%s: section %s runs past the image' % (path, name))
            out[name[len('.text.'):]] = elf[off:off + size]
    if not out:
        raise ValueError('%s: the CUDA ELF image has no kernel code (.text.* sections)' % path)
    return out


def main(argv):
    if len(argv) != 3:
        print('usage: tools/cubin_diff.py A B', file=sys.stderr)
        return 2
    try:
        a, b = kernel_texts(argv[1]), kernel_texts(argv[2])
    except (OSError, ValueError, struct.error) as e:
        print('cubin_diff: %s' % e, file=sys.stderr)
        return 2
    same = differ = only_a = only_b = 0
    for name in sorted(set(a) | set(b)):
        if name not in b:
            only_a += 1
            print('only-a ' + name)
        elif name not in a:
            only_b += 1
            print('only-b ' + name)
        elif a[name] != b[name]:
            differ += 1
            print('differs ' + name)
        else:
            same += 1
    print('summary: %d kernels, %d same, %d differ, %d only-a, %d only-b' %
          (same + differ + only_a + only_b, same, differ, only_a, only_b))
    return 0 if differ + only_a + only_b == 0 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
