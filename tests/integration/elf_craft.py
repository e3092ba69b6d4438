"""Crafted ELF files for the attacks on native symbolization: real shared libraries built with
gcc from generated assembly, then edited in place where a compiler would never write what an
attacker can (symbol table entries that share or overlap one string). ELF64 little-endian only."""

import os
import struct
import subprocess
import zlib


def library(path, functions, long_names=(), size=16):
    """A shared library (no libc) with one `size`-byte local function per name of `functions`
    and one per name of `long_names`; returns {name: address} for `functions` (nm)."""
    asm = path + ".s"
    with open(asm, "w") as f:
        f.write(".text\n")
        for name in list(functions) + list(long_names):
            f.write(f".type {name}, @function\n{name}:\n" + "  nop\n" * (size - 1) +
                    f"  ret\n.size {name}, {size}\n")
    res = subprocess.run(["gcc", "-shared", "-nostdlib", "-o", path, asm], capture_output=True,
                         text=True, timeout=600)
    os.unlink(asm)
    if res.returncode != 0:
        raise RuntimeError("gcc: " + res.stderr[:500])
    addrs = {}
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    wanted = set(functions)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in wanted:
            addrs[parts[2]] = int(parts[0], 16)
    return addrs


def _sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    out = []
    for i in range(shnum):
        off = shoff + i * shentsize
        name, sh_type, flags, addr, offset, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, off)
        out.append({"type": sh_type, "offset": offset, "size": size, "link": link,
                    "entsize": entsize})
    return out


def point_names_at(path, pick):
    """Rewrites the st_name of the local function symbols of .symtab: `pick(i, names)` gets the
    index of the symbol among them and {name: st_name offset} of all, and returns the new
    offset (or None to leave it). Returns how many were rewritten."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    sections = _sections(data)
    symtab = next(s for s in sections if s["type"] == 2)  # SHT_SYMTAB
    strtab = sections[symtab["link"]]
    strings = bytes(data[strtab["offset"]:strtab["offset"] + strtab["size"]])
    entries = []
    for k in range(symtab["size"] // symtab["entsize"]):
        off = symtab["offset"] + k * symtab["entsize"]
        st_name, st_info = struct.unpack_from("<IB", data, off)
        if st_info & 0xF == 2 and st_info >> 4 == 0:  # STT_FUNC, STB_LOCAL
            end = strings.index(b"\0", st_name)
            entries.append((off, strings[st_name:end].decode()))
    names = {name: struct.unpack_from("<I", data, off)[0] for off, name in entries}
    changed = 0
    for i, (off, name) in enumerate(entries):
        new = pick(i, names)
        if new is not None:
            struct.pack_into("<I", data, off, new)
            changed += 1
    with open(path, "wb") as f:
        f.write(data)
    return changed


def base36(v):
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = ""
    while True:
        out = digits[v % 36] + out
        v //= 36
        if v == 0:
            return out


def doubling(levels, prefix="_Z", tag=""):
    """f<tag>(a, b<a, a>, b<b<a, a>, b<a, a> >, ...): 2^levels times its length when printed."""
    name = f"{prefix}{len(tag) + 1}f{tag}1a1bIS_S_E"
    for i in range(levels):
        ref = f"S{base36(i + 1)}_"
        name += f"S0_I{ref}{ref}E"
    return name


def compression_bomb(path, sections, mib):
    """A real program (gcc -g -gz=zlib: its debug sections SHF_COMPRESSED), then each section of
    `sections` replaced by a compression header claiming `mib` MiB and a zlib stream that does
    inflate to that many zero bytes (about 1 MiB each for 1024 MiB), appended to the file.
    Returns the address of main."""
    src = path + ".c"
    with open(src, "w") as f:
        f.write("int main(int argc, char** argv) { return argc > 1; }\n")
    subprocess.run(["gcc", "-O1", "-g", "-gz=zlib", "-o", path, src], check=True, timeout=600)
    os.unlink(src)
    stream = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    body = b"".join(stream.compress(chunk) for _ in range(mib)) + stream.flush()
    bomb = struct.pack("<IIQQ", 1, 0, mib << 20, 1) + body  # ELFCOMPRESS_ZLIB, size, align
    with open(path, "rb") as f:
        data = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    replaced = []
    for i in range(shnum):
        off = shoff + i * shentsize
        name_off, = struct.unpack_from("<I", data, off)
        end = data.index(b"\0", strtab_off + name_off)
        name = data[strtab_off + name_off:end].decode()
        if name not in sections:
            continue
        flags, = struct.unpack_from("<Q", data, off + 0x08)
        struct.pack_into("<Q", data, off + 0x08, flags | 0x800)  # SHF_COMPRESSED
        struct.pack_into("<QQ", data, off + 0x18, len(data), len(bomb))  # sh_offset, sh_size
        data += bomb
        replaced.append(name)
    if sorted(replaced) != sorted(sections):
        raise RuntimeError(f"sections {sections}: found {replaced}")
    with open(path, "wb") as f:
        f.write(data)
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    return next(int(l.split()[0], 16) for l in out.splitlines() if l.split()[-1] == "main")


def _dwarf_asm(kind, depth):
    """The .debug_abbrev, .debug_info (one DWARF 4 unit over the function `f`) and .debug_str of
    a DWARF attack, as assembly."""
    a = [".section .debug_abbrev,\"\",@progbits",
         # 1: the unit: name (string), low_pc (addr), high_pc (data8)
         ".uleb128 1", ".uleb128 0x11", ".byte 1",
         ".uleb128 0x03", ".uleb128 0x08", ".uleb128 0x11", ".uleb128 0x01",
         ".uleb128 0x12", ".uleb128 0x07", ".byte 0", ".byte 0",
         # 2: a subprogram with children: sibling (ref4), name (string), low_pc, high_pc (data4)
         ".uleb128 2", ".uleb128 0x2e", ".byte 1",
         ".uleb128 0x01", ".uleb128 0x13", ".uleb128 0x03", ".uleb128 0x08",
         ".uleb128 0x11", ".uleb128 0x01", ".uleb128 0x12", ".uleb128 0x06", ".byte 0", ".byte 0",
         # 3: a leaf subprogram: name (strp), low_pc, high_pc (data4)
         ".uleb128 3", ".uleb128 0x2e", ".byte 0",
         ".uleb128 0x03", ".uleb128 0x0e", ".uleb128 0x11", ".uleb128 0x01",
         ".uleb128 0x12", ".uleb128 0x06", ".byte 0", ".byte 0",
         ".byte 0",
         ".section .debug_info,\"\",@progbits",
         ".Lunit:", ".long .Lunit_end - .Lunit_body", ".Lunit_body:",
         ".short 4", ".long 0", ".byte 8",
         ".uleb128 1", ".string \"bomb.c\"", ".quad f", ".quad 4096"]
    if kind == "sibling":
        # Each subprogram's DW_AT_sibling is its own first child: a walk that believes it visits
        # level k 2^k times.
        for i in range(depth):
            a += [".uleb128 2", f".long .Ld{i + 1} - .Lunit", f".string \"f{i}\"",
                  f".quad f + {i}", f".long {4096 - 2 * i}", f".Ld{i + 1}:"]
        a += [".byte 0"] * (depth + 1)
    elif kind == "strings":
        # Names in .debug_str that do not end inside it (the section has no last NUL), and one
        # past its end.
        for i, off in enumerate((0, 3, 1 << 20)):
            a += [".uleb128 3", f".long {off}", f".quad f + {16 * i}", ".long 16"]
        a += [".byte 0"]
        a += [".Lunit_end:", ".section .debug_str,\"\",@progbits", ".ascii \"ok\"", ".byte 0",
              ".ascii \"" + "unterminated" * 20 + "\""]
        return "\n".join(a) + "\n"
    else:
        raise ValueError(kind)
    a += [".Lunit_end:"]
    return "\n".join(a) + "\n"


def dwarf_attack(path, kind, depth=40):
    """A shared library with one 4 KiB function `f` and hand-written DWARF over it: "sibling"
    (`depth` nested subprograms whose DW_AT_sibling is their own first child) or "strings"
    (names whose strings do not end in .debug_str). Returns f's address."""
    asm = path + ".s"
    with open(asm, "w") as f:
        f.write(".text\n.globl f\n.type f, @function\nf:\n" + "  nop\n" * 4095 +
                "  ret\n.size f, 4096\n")
        f.write(_dwarf_asm(kind, depth))
    res = subprocess.run(["gcc", "-shared", "-nostdlib", "-o", path, asm], capture_output=True,
                         text=True, timeout=600)
    os.unlink(asm)
    if res.returncode != 0:
        raise RuntimeError("gcc: " + res.stderr[:500])
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    return next(int(l.split()[0], 16) for l in out.splitlines() if l.split()[-1] == "f")
