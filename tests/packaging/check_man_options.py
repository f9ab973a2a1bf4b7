#!/usr/bin/env python3
"""Checks that a man page documents exactly the options its program has.

  check_man_options.py help PAGE -- CMD [ARG...] [-- CMD [ARG...]]...
      the --long options named in the page's *OPTIONS sections (the .TP item headers) must equal the
      --long options the commands' help output mentions (--help itself is left out on both sides)
  check_man_options.py plugin PAGE PROBE
      the keys of the page's "OPTION ARGUMENTS" and "PLUGSTACK.CONF ARGUMENTS" sections must equal
      the keys the plugin's own parsers list, and each must be one the parser recognises
      (PROBE is tests/packaging/plugin_keys_probe)

Exit status 0 when they agree; 1 with the differences otherwise; 2 for bad usage.
"""
import re
import subprocess
import sys

FONT = re.compile(r"\\f[BIRP]|\\f\(..|\\&")
LONG_OPTION = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)")


def plain(roff_line):
    """Text of one roff line: no macro name, font escapes or quotes; \\- becomes -."""
    line = roff_line.strip()
    if line.startswith("."):
        line = line.split(None, 1)[1] if " " in line else ""
    line = FONT.sub("", line).replace("\\-", "-").replace("\\(dq", '"')
    return line.replace('"', "")


def item_headers(page, section):
    """The header line of every .TP item in the man page's sections named `section` (or, for
    "OPTIONS", any section whose name ends with it, e.g. "GENERATE OPTIONS"), as plain text."""
    headers, current, take_next = [], None, False
    with open(page, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith(".SH"):
                current = plain(line).strip().upper()
                take_next = False
            elif line.startswith(".TP") and current is not None and (
                current == section or (section == "OPTIONS" and current.endswith(" OPTIONS"))):
                take_next = True
            elif take_next and not line.startswith('.\\"'):
                headers.append(plain(line))
                take_next = False
    if not headers:
        sys.exit(f"{page}: no .TP items in section {section}")
    return headers


def compare(what_a, a, what_b, b):
    ok = True
    for name in sorted(a - b):
        print(f"{name}: in {what_a}, not in {what_b}")
        ok = False
    for name in sorted(b - a):
        print(f"{name}: in {what_b}, not in {what_a}")
        ok = False
    return ok


def help_options(commands):
    found = set()
    for command in commands:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} exited with {result.returncode}: {result.stderr.strip()}")
        found |= set(LONG_OPTION.findall(result.stdout + result.stderr))
    # Upper-case words are placeholders of a usage line ("[--OPTION VALUE]..."), not options.
    return {name for name in found if not name.isupper()} - {"help"}


def check_help(page, commands):
    documented = set()
    for header in item_headers(page, "OPTIONS"):
        documented |= set(LONG_OPTION.findall(header))
    documented.discard("help")
    shown = help_options(commands)
    print(f"{page}: {len(documented)} options documented, {len(shown)} in --help")
    return compare(page, documented, "--help", shown)


def plugin_keys(page, section):
    keys = set()
    for header in item_headers(page, section):
        keys.add(re.split(r"[=\s]", header.strip(), maxsplit=1)[0])
    return keys


def check_plugin(page, probe):
    ok = True
    for kind, section in (("user", "OPTION ARGUMENTS"), ("site", "PLUGSTACK.CONF ARGUMENTS")):
        documented = plugin_keys(page, section)
        result = subprocess.run([probe, kind, *sorted(documented)], capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            sys.exit(f"{probe} {kind} failed: {result.stderr.strip()}")
        listed, unrecognised = set(), set()
        for line in result.stdout.splitlines():
            tag, _, key = line.partition(" ")
            if tag == "listed":
                listed.add(key)
            elif tag == "unrecognised":
                unrecognised.add(key)
        print(f"{page} [{section}]: {len(documented)} keys documented, {len(listed)} listed by the parser")
        ok &= compare(f"{page} [{section}]", documented, "the parser's list", listed)
        for key in sorted(unrecognised):
            print(f"{key}: documented in [{section}] but the parser rejects it as unknown")
            ok = False
    return ok


def split_commands(args):
    commands, current = [], []
    for arg in args:
        if arg == "--":
            if current:
                commands.append(current)
            current = []
        else:
            current.append(arg)
    if current:
        commands.append(current)
    return commands


def main(argv):
    if len(argv) >= 4 and argv[1] == "help" and argv[3] == "--":
        ok = check_help(argv[2], split_commands(argv[3:]))
    elif len(argv) == 4 and argv[1] == "plugin":
        ok = check_plugin(argv[2], argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
