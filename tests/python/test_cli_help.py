"""The `syslab` program's help against its parsers, and `syslab report
--allow-errors` counting and numbering failed cells as the notebook shows
them. The options live in one table (cli/cli.c) that the parsers and the
help read; these tests hold both sides to it."""
import json
import re

from conftest import ROOT, syslab

OPTION = re.compile(r"^\s+(-[-\w]+)(?:, (--[-\w]+))?(?: ([A-Z_=]+))?(?:\s{2,}|\n|$)", re.M)
COMMANDS = ["kernel", "install", "run", "report"]


def options_of(text):
    """[(name, alias, argument)] of the option lines of a help text."""
    return [m.groups() for m in OPTION.finditer(text)]


def test_every_subcommand_lists_its_options_in_syslab_help():
    overall = syslab("help")
    assert overall.returncode == 0
    assert syslab("--help").stdout == overall.stdout
    sections = re.split(r"\n  (?=\S)", overall.stdout)
    for cmd in COMMANDS:
        own = syslab(cmd, "--help")
        assert own.returncode == 0, (cmd, own.stderr)
        assert own.stdout.startswith(f"usage: syslab {cmd}")
        assert syslab("help", cmd).stdout == own.stdout
        listed = options_of(own.stdout)
        assert listed, cmd
        section = next(s for s in sections if s.split()[0] == cmd)
        assert sorted(options_of(section)) == sorted(listed), cmd


def table_rows():
    """{name: (entry function, [aliases])} of the rows of commands.c's table of subcommands."""
    source = (ROOT / "cli" / "commands.c").read_text()
    table = source[source.index("const slc_Command slc_commands[] = {"):]
    table = table[:table.index("\n    {NULL")]  # the row that ends it
    rows = {}
    for row in re.split(r"\n    \{(?=\")", table)[1:]:
        name = re.match(r'"([-\w]+)"', row).group(1)
        tail = re.search(r",\s*(\w+),\s*\{([^}]*)\}\},\s*$", row)
        assert tail, f"the row of {name} names no function to run"
        rows[name] = (tail.group(1), re.findall(r'"([-\w]+)"', tail.group(2)))
    return rows


def test_every_subcommand_in_the_table_is_run_from_it_and_listed():
    """main.c runs the function of a row (no list of names of its own), and
    `syslab --help` lists every row."""
    rows = table_rows()
    assert {"kernel", "install", "run", "report", "help", "worker", "--version"} <= set(rows), rows
    main = (ROOT / "cli" / "main.c").read_text()
    assert not re.findall(r'strcmp\([^;]*"', main), "main.c compares names of subcommands itself"
    sources = "".join(p.read_text() for p in (ROOT / "cli").glob("*.[ch]"))
    listed = syslab("--help").stdout
    heads = [s.split()[0] for s in re.split(r"\n  (?=\S)", listed)[1:]]
    version = re.search(r"^syslab (\S+)$", syslab("--version").stdout, re.M).group(1)
    for name, (entry, aliases) in rows.items():
        assert entry != "NULL" and re.search(rf"\bint {entry}\(int argc, char \*\*argv\)", sources), (name, entry)
        assert name in heads, f"{name} is not listed by syslab --help"
        for spelling in [name, *aliases]:
            r = syslab(spelling, "--help", timeout=60)
            assert "unknown command" not in r.stderr, spelling
            answer = r.stdout + r.stderr
            # the subcommand's own answer: its usage, an error naming it, or the version
            assert f"syslab {name}" in answer or (name == "--version" and answer == f"syslab {version}\n"), \
                (spelling, answer)
    unknown = syslab("no-such-subcommand")
    assert unknown.returncode == 2 and "unknown command 'no-such-subcommand'" in unknown.stderr
    assert unknown.stderr.endswith(listed)  # the usage, as --help prints it
    assert syslab("-h").stdout == syslab("help").stdout == listed
    assert syslab("version").stdout == f"syslab {version}\n"
    # `syslab help version` is the language's command, not the alias
    assert syslab("help", "version").stdout == syslab("run", "-", input="help version\n").stdout


def test_report_help_names_every_option_the_parser_takes():
    text = syslab("report", "--help").stdout
    listed = options_of(text)
    names = {n for opt in listed for n in opt[:2] if n}
    # what the help lists, the parser accepts (an option before --help is parsed first)
    for name, alias, arg in listed:
        for spelling in filter(None, (name, alias)):
            args = [spelling] + (["x=1" if "=" in arg else "2"] if arg else []) + ["--help"]
            r = syslab("report", *args)
            assert r.returncode == 0 and r.stdout.startswith("usage: syslab report"), (spelling, r.stderr)
            if arg:  # and every option in the synopsis
                assert f"[{name} {arg}]" in text or name == "-h"
    # what the parser takes, the help lists: the options the report's parser looks at
    source = (ROOT / "cli" / "args.c").read_text()
    parse = source[source.index("static int parse_args"):source.index("\n}\n", source.index("static int parse_args"))]
    parsed = set(re.findall(r'strcmp\(name, "(-[-\w]+)"\)', parse))
    assert parsed and parsed <= names, parsed - names
    table = (ROOT / "cli" / "commands.c").read_text()
    table = table[table.index("report_options[]"):]
    table = table[:table.index("};")]
    assert {n for n in re.findall(r'"(-[-\w]+)"', table)} == names
    refused = syslab("report", "--no-such-option")
    assert refused.returncode == 2 and "unknown option '--no-such-option'" in refused.stderr
    assert "--allow-errors" in refused.stderr  # with the usage


def code(i, src):
    return {"cell_type": "code", "id": f"c{i}", "metadata": {}, "outputs": [], "execution_count": None, "source": src}


def markdown(i, src):
    return {"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": src}


def test_allow_errors_counts_and_numbers_failed_cells_as_the_notebook_shows_them(tmp_path):
    # code cells 2 and 4 fail; Markdown between them: they are cells 4 and 7 of the notebook
    nb = tmp_path / "fails.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        markdown(0, "# Title"), code(1, "x = 1"), markdown(1, "text"), code(2, "y = nope"), markdown(2, "more"),
        code(3, "print x"), code(4, "z = 1 / 0")]}))
    out = tmp_path / "out"
    r = syslab("report", str(nb), "-o", str(out), "--no-pdf", "--allow-errors", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[2/4] cell 4: " in r.stderr and "[4/4] cell 7: " in r.stderr  # progress names the notebook's cells
    assert f"{nb}, cell 4: error (kept going: --allow-errors): NameError" in r.stderr
    assert f"{nb}, cell 7: error (kept going: --allow-errors): ZeroDivisionError" in r.stderr
    assert "4 cells run, 2 errors (2 in cells, kept going: --allow-errors)" in r.stderr
    # from the cache: the same errors, counted the same
    again = syslab("report", str(nb), "-o", str(out), "--no-pdf", "--allow-errors", timeout=300)
    assert "taken from the cache" in again.stderr and "0 cells run, 2 errors" in again.stderr
    # without --allow-errors: stops at cell 4, named as in the progress line; with -p the injected cell is not counted
    stop = syslab("report", str(nb), "-o", str(tmp_path / "out2"), "--no-pdf", "-p", "n=1", timeout=300)
    assert stop.returncode == 1
    assert "parameters (injected)" in stop.stderr and "[3/5] cell 4: " in stop.stderr
    assert f"{nb}, cell 4, line 1, column 5: NameError: name 'nope' is not defined" in stop.stderr
    assert "3 cells run, 1 error," in stop.stderr


def test_figure_names_keep_the_cell_number_when_parameters_are_injected(tmp_path):
    nb = tmp_path / "fig.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        markdown(0, "# Figures"), code(1, "t = table x=[1, 2, 3] y=[1, 4, 9]\nplot t x=x y=y")]}))
    for args in ([], ["-p", "n=1"]):
        out = tmp_path / f"out{len(args)}"
        r = syslab("report", str(nb), "-o", str(out), "--no-pdf", *args, timeout=300)
        assert r.returncode == 0, r.stderr
        assert [p.name for p in (out / "figures").iterdir()] == ["fig-cell2.png"], args


def test_help_explains_a_command_of_the_language():
    """`syslab help train` prints what `help train` prints inside (the
    registry's help text); before, it was "unknown command"."""
    r = syslab("help", "train")
    assert r.returncode == 0, r.stderr
    inside = syslab("run", "-", input="help train\n")
    assert inside.returncode == 0, inside.stderr
    assert r.stdout == inside.stdout
    assert r.stdout.startswith("train model data")
    assert "Arguments:" in r.stdout and "epochs" in r.stdout
    # a subcommand keeps its own help, and the usage says both are answered
    assert syslab("help", "run").stdout.startswith("usage: syslab run")
    assert "`syslab help NAME` also explains a command of the language" in syslab("help").stdout
    # a name that is neither: the language's suggestion, exit status 2
    typo = syslab("help", "trian")
    assert typo.returncode == 2
    assert "neither a subcommand of syslab nor a command of the language" in typo.stderr
    assert "did you mean 'train'?" in typo.stderr
    odd = syslab("help", "train; print 1")
    assert odd.returncode == 2 and "1\n" not in odd.stdout
