#!/usr/bin/env python3
"""kernel-metrics.py [FILE...]: the shape of the kernel source's functions.

For every function defined in the files (default: the kernel's .k files under kernels/,
not ref_attn.k), its length in lines (signature to closing brace) and the deepest
preprocessor conditional nesting inside its body (#if/#ifdef/#ifndef opened within the
body; a file's own guard around the function does not count), and the number of
preprocessor lines in its body. Prints the functions longest first, then the longest
function and the deepest nesting over all of them. Braces are counted on code outside
comments and strings, over every preprocessor branch (the kernel keeps the branches of a
conditional brace-balanced)."""
import glob
import os
import re
import sys

FUNC = re.compile(r"^(KERNEL|INLINE|static|__device__)\b.*\(")


def strip(line, state):
    """The line's code outside comments and strings; state[0]: inside a block comment."""
    out, i, n = [], 0, len(line)
    while i < n:
        if state[0]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state[0], i = False, j + 2
            continue
        c = line[i]
        if line.startswith("/*", i):
            state[0], i = True, i + 2
        elif line.startswith("//", i):
            break
        elif c in "\"'":
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    lines = open(path).read().split("\n")
    state, res = [False], []
    cur = None  # [name, start, depth_braces, pp_base, pp_depth, pp_max, pp_lines, opened]
    pp = 0
    for no, raw in enumerate(lines, 1):
        code = strip(raw, state)
        s = code.strip()
        if s.startswith("#"):
            d = s[1:].strip()
            if re.match(r"if(n?def)?\b", d):
                pp += 1
            elif d.startswith("endif"):
                pp -= 1
            if cur and cur[7]:
                cur[6] += 1
                cur[5] = max(cur[5], pp - cur[3])
            continue
        if cur is None and FUNC.match(s):
            name = re.findall(r"(\w+)\s*\(", s)
            name = [x for x in name if x not in ("__launch_bounds__", "__attribute__", "aligned")]
            cur = [name[0] if name else "?", no, 0, pp, 0, 0, 0, False]
        if cur is not None:
            for ch in code:
                if ch == "{":
                    cur[2] += 1
                    cur[7] = True
                elif ch == "}":
                    cur[2] -= 1
            if cur[7] and cur[2] == 0:
                res.append((cur[0], os.path.basename(path), cur[1], no - cur[1] + 1, cur[5], cur[6]))
                cur = None
            elif not cur[7] and s.endswith(";"):  # a declaration, not a definition
                cur = None
    return res


def main(argv):
    files = argv[1:] or sorted(f for f in glob.glob(os.path.join(os.path.dirname(__file__), "..", "kernels", "*.k"))
                               if not f.endswith("ref_attn.k"))
    allf = [f for p in files for f in functions(p)]
    allf.sort(key=lambda f: -f[3])
    print("%-24s %-18s %6s %6s %7s %9s" % ("function", "file", "line", "lines", "nesting", "pp_lines"))
    for name, fn, line, n, nest, ppl in allf:
        print("%-24s %-18s %6d %6d %7d %9d" % (name, fn, line, n, nest, ppl))
    if allf:
        longest = allf[0]
        deepest = max(allf, key=lambda f: f[4])
        print("longest function: %s (%s:%d) %d lines; deepest nesting in a body: %d (%s); %d preprocessor lines in bodies"
              % (longest[0], longest[1], longest[2], longest[3], deepest[4], deepest[0], sum(f[5] for f in allf)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
