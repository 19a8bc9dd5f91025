"""The lab notebooks' prose, read without running them: every inline value
names only what a code cell above it has assigned (so JupyterLab's Run
All, which evaluates a Markdown cell when it reaches it, shows no error),
and no result number is typed by hand (a number in the prose is an inline
value, code, math, a structural reference such as "Lab 1", or a seed's
claim listed below with its source)."""
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

INLINE = re.compile(r"\{eval(?:\s+\.[\w-]+)*\}`([^`\n]*)`|\{\{(.*?)\}\}")
# left to right: a role, a code span, a pair of braces (a role's backticks are not a code span)
PIECES = re.compile(r"\{eval(?:\s+\.[\w-]+)*\}`(?P<role>[^`\n]*)`|(?P<code>`+).*?(?P=code)|\{\{(?P<braces>.*?)\}\}", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
FIG_CAP = re.compile(r"^#\|\s*fig-cap:(.*)$", re.M)

# names an expression may use without a code cell assigning them: the keywords, and the language's
# commands (called as `(params m)`), read from their reference
BUILTINS = {"true", "false", "nil", "and", "or", "not", "in"}
COMMANDS = set(re.findall(r"^### (\w+)$", (ROOT / "docs" / "commands.md").read_text(), re.M))


def source(cell):
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def expressions(text):
    """The expressions of a Markdown text's inline values, outside code spans and math."""
    out = []
    for m in PIECES.finditer(MATH.sub(" ", text)):
        if m.group("role") is not None:
            out.append(m.group("role"))
        elif m.group("braces") is not None:
            out.append(re.split(r"\s[!:]", m.group("braces"))[0].strip())
    return out


def root_names(expr):
    """The variables an expression reads: identifiers that are not attributes, calls, strings or keywords."""
    expr = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', " ", expr)
    names = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)", expr):
        rest = expr[m.end():].lstrip()
        called = expr[:m.start()].rstrip().endswith("(") and m.group(1) in COMMANDS
        if rest.startswith("(") or m.group(1) in BUILTINS or called:
            continue
        names.add(m.group(1))
    return names


def assigned(code):
    """The names a code cell assigns: `name = ...`, `for name in ...`, including inside blocks."""
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
    names = set(re.findall(r"(?:^|[{;]|\n)\s*([A-Za-z_]\w*)\s*=(?!=)", code))
    names |= set(re.findall(r"\bfor\s+([A-Za-z_]\w*)\s+in\b", code))
    return names


def test_inline_values_name_only_what_earlier_code_cells_assign():
    problems = []
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        seen = set()
        for i, cell in enumerate(cells):
            text = source(cell)
            if cell["cell_type"] == "code":
                seen |= assigned(text)
                exprs = [e for cap in FIG_CAP.findall(text) for e in expressions(cap)]   # after its own cell
            elif cell["cell_type"] == "markdown":
                exprs = expressions(text)
            else:
                continue
            for e in exprs:
                missing = root_names(e) - seen
                if missing:
                    problems.append(f"{path.name}, cell {i + 1}: `{e}` reads {sorted(missing)} before a code cell assigns it")
    assert not problems, "\n".join(problems)


# Numbers in prose that are not results: a reference to a lab, part, task or
# problem, a list item's number, a format's width ("8-bit"), a preset's name.
STRUCTURAL = [
    re.compile(r"\b(?:Lab|Labs|Tutorial|Task|task|Part|part|assignment|problem|Parts|seed|seeds|Seed|bit)\s+$"),
]
NUMBER = re.compile(r"[0-9A-Za-z_.,%]*\d[0-9A-Za-z_.,%]*")
IS_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?%?$")

# A seed's claim or a configuration the seeds give, quoted as the seed's with its
# source: (notebook, the phrase holding the number, the source the prose names).
SEED_CITATIONS = [
    ("systems.ipynb", "1000 additions of 0.01", "problem `mixed_precision_accumulation`"),
]


def typed_numbers(text):
    """(number, context) for each number of a Markdown text outside inline values, code and math."""
    text = PIECES.sub(" ", MATH.sub(" ", text))
    found = []
    for m in NUMBER.finditer(text):
        token = m.group(0).rstrip(".,")
        if not IS_NUMBER.match(token):
            continue   # part of a name: float32, MXINT8, 2.7B, AVX-512's 512 is caught below
        before, after = text[:m.start()], text[m.start() + len(token):]
        if before.endswith("-") and re.search(r"[A-Za-z]-$", before):
            continue   # AVX-512, FlashAttention-2: a name
        if re.match(r"-(?:bit|byte)\b", after):
            continue   # a format's width: 8-bit mantissas
        if re.search(r"(?:^|\n)\s*$", before) and re.match(r"\.\s", after):
            continue   # a numbered list's item
        if any(p.search(before[-40:]) for p in STRUCTURAL):
            continue
        found.append((token, text[max(0, m.start() - 40):m.start() + len(token) + 40]))
    return found


def test_no_result_number_is_typed_by_hand():
    problems = []
    used = set()
    for path in NOTEBOOKS:
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] != "markdown":
                continue
            text = source(cell)
            for token, context in typed_numbers(text):
                cited = [k for k, (nb, phrase, src) in enumerate(SEED_CITATIONS)
                         if nb == path.name and token in phrase and phrase in text and src in text]
                if cited:
                    used.update(cited)
                    continue
                problems.append(f"{path.name}, cell {i + 1}: {token!r} typed in ...{context!r}...")
    assert not problems, ("numbers typed by hand in prose (make each an inline value, code or math, or quote it as "
                          "a seed's claim with its source in SEED_CITATIONS):\n" + "\n".join(problems))
    unused = [SEED_CITATIONS[k] for k in range(len(SEED_CITATIONS)) if k not in used]
    assert not unused, f"citations no notebook holds any more: {unused}"


def test_the_checks_catch_what_they_are_for():
    # a value read before its cell, and a typed result, are both found
    assert root_names('format(cfg.train, ",d") + len(xs) + a.b') == {"cfg", "xs", "a"}
    assert assigned("x = 1\nif y { z = 2 }\nfor w in [1] { }\ncompare == 3") == {"x", "z", "w"}
    assert expressions("the {eval}`format(a, \".3f\")` and {{ b :.1f }} and `{eval}` and $c_{d}$") == [
        'format(a, ".3f")', "b"]
    assert [t for t, _ in typed_numbers("Lab 1 at 8-bit on float32 reaches 0.861, AVX-512\n1. item\n")] == ["0.861"]
    assert typed_numbers("{eval}`x` and `3` and $4$") == []
