#!/usr/bin/env python3
"""The shape of the code, checked: no circles of files, no arrow that runs
back up a layer, no file over 1,000 lines and no function over 150.

    python3 tests/structure.py [BUILD_DIR]      (default: build)

Two kinds of arrow tie one file to another:

  - an include: `#include "graph/model.h"` (a bare name is a file of the
    including file's own folder);
  - a link: a file's object uses a symbol that another file's object
    defines. These are read from the build's objects with `nm`, so they are
    the calls and data the linker really resolves, not a guess from text.

A header and the source of the same name in the same folder are one unit
(model.h has no model.c and is a unit of its own). A circle is a set of
two or more units that reach each other; an arrow that runs back up goes
from a folder to one that LAYERS does not let it use. Each finding names
the files and the symbols or includes behind it. Exit status 1 when any
rule is broken.

The layout of the code is .clang-format's: every tracked .c, .h, .cu and
.cuh file that `clang-format --dry-run --Werror` would change is a problem
too (SYSLAB_CHECK_FORMAT=0 in the environment leaves it out); the check
needs clang-format 14, the version the configuration was tuned with (other
versions lay the same code out differently), and says that it skipped, and
why, when clang-format is missing or of another version.
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_layers(path=os.path.join(ROOT, "tests", "layers.txt")):
    """tests/layers.txt (the one statement of the layers, which
    tests/unit/test_layers.c reads too): each folder and the folders it may
    use, closed over, since a file may call what the folders it includes call"""
    direct = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            folder, _, uses = line.partition(":")
            direct[folder.strip()] = uses.split()
    closed = {}
    for folder in direct:
        seen, todo = [], list(direct[folder])
        while todo:
            f = todo.pop(0)
            if f not in seen:
                seen.append(f)
                todo += direct.get(f, [])
        closed[folder] = seen
    return closed


LAYERS = read_layers()
SOURCE_DIRS = list(LAYERS)
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150


def production_files():
    out = []
    for folder in SOURCE_DIRS:
        path = os.path.join(ROOT, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if name.endswith((".c", ".h", ".cu")):
                out.append(f"{folder}/{name}")
    return out


def unit_of(path):
    """engine/graph/model.h -> engine/graph/model (shared by model.c if any)"""
    return os.path.splitext(path)[0]


def folder_of(path):
    return os.path.dirname(path)


def include_edges(files):
    """(unit, unit, the include as written) for every #include "..." of ours"""
    known = set(files)
    edges = []
    for f in files:
        with open(os.path.join(ROOT, f), errors="replace") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                for cand in (f"{folder_of(f)}/{inc}", f"engine/{inc}", inc):
                    if cand in known:
                        if unit_of(cand) != unit_of(f):
                                edges.append((unit_of(f), unit_of(cand), f"#include \"{inc}\""))
                        break
    return edges


def objects(build):
    """source path -> object file, for the program's own objects"""
    out = {}
    for dirpath, _, names in os.walk(build):
        if "CMakeFiles" not in dirpath or "/tests" in dirpath or "/bench" in dirpath:
            continue
        for name in names:
            if not name.endswith(".o"):
                continue
            obj = os.path.join(dirpath, name)
            rel = obj.split(".dir/", 1)[-1][: -len(".o")]
            if rel in production_files_set:
                out[rel] = obj
    return out


def nm_symbols(obj):
    defined, used = set(), set()
    text = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        sym, kind = parts[0], parts[1]
        if kind == "U":
            used.add(sym)
        elif kind in "TDBRVWCG":   # global definitions
            defined.add(sym)
    return defined, used


def link_edges(objs):
    definer = {}
    uses = {}
    for src, obj in objs.items():
        d, u = nm_symbols(obj)
        uses[src] = u
        for s in d:
            definer.setdefault(s, set()).add(src)
    edges = []
    for src, syms in uses.items():
        for s in syms:
            for dst in definer.get(s, ()):
                if unit_of(dst) != unit_of(src):
                    edges.append((unit_of(src), unit_of(dst), s))
    return edges


def circles(edges):
    """strongly connected components of two or more units (Tarjan)"""
    graph = {}
    for a, b, _ in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# the engine's interface headers, which every file may include (the drivers
# not slcommand.h, which tests/unit/test_layers.c checks): syslab.h the
# driver API, slcommand.h the command-author API, slutil.h the shared helpers
INTERFACE = ("engine/syslab", "engine/slcommand", "engine/slutil")


def back_edges(edges):
    bad = []
    for a, b, why in edges:
        fa, fb = folder_of(a), folder_of(b)
        if fa == fb or b in INTERFACE:
            continue
        allowed = LAYERS.get(fa)
        if allowed is not None and fb not in allowed:
            bad.append((a, b, why))
    return bad


def strip_c(text):
    """comments and string/char literals blanked, newlines kept"""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, lines) of every function defined at file scope"""
    text = strip_c(open(os.path.join(ROOT, path), errors="replace").read())
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)   # preprocessor lines
    out, depth, start, i = [], 0, None, 0
    for m in re.finditer(r"[{}]", text):
        if m.group() == "{":
            if depth == 0:
                head = text[max(0, m.start() - 400):m.start()]
                fm = re.search(r"([A-Za-z_]\w*)\s*\(([^;{}()]|\([^;{}()]*\))*\)\s*(__attribute__\s*\(\(.*\)\)\s*)?$", head)
                start = (fm.group(1), text.count("\n", 0, m.start() - len(head) + fm.start()) + 1) if fm and \
                    fm.group(1) not in ("if", "while", "for", "switch", "sizeof") else None
            depth += 1
        else:
            depth -= 1
            if depth == 0 and start:
                end = text.count("\n", 0, m.start()) + 1
                out.append((start[0], start[1], end - start[1] + 1))
                start = None
    return out


def unnamed_units(files):
    """units of the program that docs/architecture.md does not name (by the
    name of one of their files), so that its map of the house stays whole"""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    named = set(re.findall(r"[A-Za-z0-9_]+\.(?:c|h|cu)\b", text))
    out = []
    for unit in sorted({unit_of(f) for f in files}):
        names = {os.path.basename(f) for f in files if unit_of(f) == unit}
        if not names & named:
            out.append(f"unnamed: {unit} ({', '.join(sorted(names))}) is not named in docs/architecture.md")
    return out


MODULE_FOLDERS = ("cuda/", "mpi/")   # reached through one table of entry points, which dlsym finds


def uncalled(objs, build):
    """public functions of the program that no other object calls (neither
    the program's nor a test's or benchmark's): dead, or meant to be static"""
    defined, used = {}, set()
    for src, obj in objs.items():
        d, u = nm_symbols(obj)
        used |= u
        if not src.startswith(MODULE_FOLDERS):
            for sym in d:
                defined[sym] = src
    for dirpath, _, names in os.walk(build):
        for name in names:
            path = os.path.join(dirpath, name)
            if name.endswith(".o") and path not in objs.values():
                used |= nm_symbols(path)[1]
    fuzz = os.path.join(ROOT, "tests", "fuzz")   # fuzz targets: built by `make fuzz` (clang), not here
    for name in os.listdir(fuzz):
        if name.endswith(".c"):
            used |= set(re.findall(r"\b\w+\b", strip_c(open(os.path.join(fuzz, name)).read())))
    return [f"uncalled: {src} defines {sym}, which no other file calls (make it static, or delete it)"
            for sym, src in sorted(defined.items(), key=lambda x: (x[1], x[0])) if sym not in used and sym != "main"]


def unlisted_docs():
    """pages of docs/ that README.md's documentation list leaves out"""
    readme = open(os.path.join(ROOT, "README.md")).read()
    return [f"unlisted: docs/{name} is not linked from README.md" for name in sorted(os.listdir(os.path.join(ROOT, "docs")))
            if name.endswith(".md") and f"(docs/{name})" not in readme]


FORMAT_MAJOR = 14   # the clang-format version .clang-format was tuned with
CHECK_FORMAT = os.environ.get("SYSLAB_CHECK_FORMAT", "1") != "0"
FORMATTED = ("*.c", "*.h", "*.cu", "*.cuh")


def unformatted():
    """tracked C and CUDA files that clang-format would change (each one a
    problem), or a line saying why the check was skipped"""
    if not CHECK_FORMAT:
        return [], "format: not checked (SYSLAB_CHECK_FORMAT=0 in the environment)"
    exe = shutil.which("clang-format")
    if not exe:
        return [], "format: skipped, clang-format is not on PATH (Debian package clang-format)"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.", version)
    if not m or int(m.group(1)) != FORMAT_MAJOR:
        return [], (f"format: skipped, {version.strip() or exe} is not clang-format {FORMAT_MAJOR}, "
                    "the version .clang-format was tuned with")
    listed = subprocess.run(["git", "ls-files", "-z", "--", *FORMATTED], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        return [], "format: skipped, not a git checkout (the check reads the tracked files from git)"
    files = [f for f in listed.stdout.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]
    bad = {}
    for i in range(0, len(files), 64):
        run = subprocess.run([exe, "--dry-run", "--Werror", "--style=file", *files[i:i + 64]], cwd=ROOT,
                             capture_output=True, text=True)
        found = re.findall(r"^(.+?):(\d+):\d+: error: code should be clang-formatted", run.stderr, re.M)
        for f, line in found:
            bad.setdefault(f, line)
        if run.returncode != 0 and not found:
            return [], f"format: skipped, clang-format failed: {run.stderr.strip()[:300]}"
    return [f"unformatted: {f} (first at line {line}): run clang-format -i {f}" for f, line in sorted(bad.items())], \
        f"format: {len(files)} files checked against .clang-format"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    files = production_files()
    global production_files_set
    production_files_set = set(files)
    failures = 0

    edges = include_edges(files)
    objs = objects(build)
    if not objs:
        print(f"no objects of the program under {build}: build it first")
        return 2
    edges += link_edges(objs)

    for comp in circles(edges):
        failures += 1
        members = set(comp)
        print(f"circle of {len(comp)} files: {', '.join(comp)}")
        ties = {}
        for a, b, why in edges:
            if a in members and b in members:
                ties.setdefault((a, b), set()).add(why)
        for (a, b), why in sorted(ties.items()):
            print(f"  {a} -> {b}: {', '.join(sorted(why)[:6])}{' ...' if len(why) > 6 else ''}")
    backs = {}
    for a, b, why in back_edges(edges):
        backs.setdefault((a, b), set()).add(why)
    for (a, b), why in sorted(backs.items()):
        failures += 1
        print(f"back up: {a} -> {b} ({folder_of(a)}/ may not use {folder_of(b)}/): {', '.join(sorted(why)[:6])}")

    for f in files:
        if f.endswith(".h"):
            pass
        lines = sum(1 for _ in open(os.path.join(ROOT, f), errors="replace"))
        if lines > MAX_FILE_LINES:
            failures += 1
            print(f"too long: {f} has {lines} lines (at most {MAX_FILE_LINES})")
        if f.endswith((".c", ".cu")):
            for name, line, n in functions(f):
                if n > MAX_FUNCTION_LINES:
                    failures += 1
                    print(f"too long: {f}:{line} {name}() has {n} lines (at most {MAX_FUNCTION_LINES})")

    for problem in unnamed_units(files) + unlisted_docs() + uncalled(objs, build):
        failures += 1
        print(problem)
    badly_laid_out, format_note = unformatted()
    for problem in badly_laid_out:
        failures += 1
        print(problem)
    print(format_note)

    units = {unit_of(f) for f in files}
    print(f"{len(files)} files in {len(units)} units, {len(edges)} arrows ({len(objs)} objects read): "
          f"{failures} problem(s)")
    return 1 if failures else 0


production_files_set = set()

if __name__ == "__main__":
    sys.exit(main())
