"""The ctypes mirrors of the C structs against the compiler: sizeof, and offsetof and
sizeof of every field, from a small C program built from api/qgmm.h (skipped without a
C compiler or the header, e.g. for an installed package)."""
import os
import shutil
import subprocess
import tempfile
import unittest

from support import _lib

HEADER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "api")
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def c_program():
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "qgmm.h"', "int main(void) {"]
    for cname, struct in _lib.STRUCTS.items():
        lines.append(f'    printf("{cname} . %zu %zu\\n", (size_t)0, sizeof({cname}));')
        for field, _ in struct._fields_:
            lines.append(f'    printf("{cname} {field} %zu %zu\\n", offsetof({cname}, {field}), '
                         f"sizeof((({cname} *)0)->{field}));")
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


@unittest.skipUnless(CC and os.path.exists(os.path.join(HEADER_DIR, "qgmm.h")),
                     "needs a C compiler and api/qgmm.h")
class LayoutTest(unittest.TestCase):
    def test_structs_match_the_header(self):
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
            with open(src, "w") as f:
                f.write(c_program())
            subprocess.run([CC, "-std=c99", "-I", HEADER_DIR, src, "-o", exe], check=True)
            out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        seen = 0
        for line in out.splitlines():
            cname, field, offset, size = line.split()
            struct = _lib.STRUCTS[cname]
            if field == ".":
                self.assertEqual(__import__("ctypes").sizeof(struct), int(size), cname)
            else:
                desc = getattr(struct, field)
                self.assertEqual((desc.offset, desc.size), (int(offset), int(size)), f"{cname}.{field}")
            seen += 1
        self.assertEqual(seen, sum(1 + len(s._fields_) for s in _lib.STRUCTS.values()))

    def test_every_function_declared(self):
        with open(os.path.join(HEADER_DIR, "qgmm.h")) as f:
            text = f.read()
        import re
        declared = set(re.findall(r"QGMM_API[^;(]*?\b(qgmm_\w+)\s*\(", text))
        self.assertEqual(declared, set(_lib.SIGNATURES))


if __name__ == "__main__":
    unittest.main()
