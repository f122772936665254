#!/usr/bin/env python3
"""Writes po/vpnctl.pot from the messages marked with L("...") in Sources/.

Each literal becomes its msgid as LocalizedText builds it at run time: `%`
is `%%` and each interpolation `\\(...)` is `%1$s`, `%2$s`... in order.
Every entry is c-format, so `msgfmt --check` makes each translation keep
the same placeholders.

Usage: Tools/extract-messages.py [--check]   (from the repository root)
  --check  write nothing; exit 1 when po/vpnctl.pot's messages are not what the
           sources give (its "#:" source references may lag behind moved code)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POT = os.path.join(ROOT, "po", "vpnctl.pot")
MARK = re.compile(r'(?<![A-Za-z0-9_.])L\(\s*"')
SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


class ExtractError(Exception):
    pass


def skip_string(text, i):
    """From just after an opening quote, the index after the closing one
    (for a literal inside an interpolation)."""
    while i < len(text):
        c = text[i]
        if c == "\\":
            if text.startswith("\\(", i):
                i = skip_interpolation(text, i + 2)
                continue
            i += 2
            continue
        if c == '"':
            return i + 1
        if c == "\n":
            raise ExtractError("line break inside a string literal")
        i += 1
    raise ExtractError("unterminated string literal")


def skip_interpolation(text, i):
    """From just after `\\(`, the index after its closing parenthesis."""
    depth = 1
    while i < len(text):
        c = text[i]
        if c == '"':
            i = skip_string(text, i + 1)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ExtractError("unterminated interpolation")


def read_literal(text, i):
    """From just after the opening quote of a marked literal: its msgid and
    the index after the closing quote."""
    out, n = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\n":
            raise ExtractError("line break inside a marked literal (multi-line literals are not supported)")
        if c == "%":
            out.append("%%")
            i += 1
            continue
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "(":
            i = skip_interpolation(text, i + 2)
            n += 1
            out.append("%%%d$s" % n)
        elif nxt == "u":
            m = re.match(r"\\u\{([0-9A-Fa-f]{1,8})\}", text[i:])
            if not m:
                raise ExtractError("bad \\u escape")
            out.append(chr(int(m.group(1), 16)))
            i += len(m.group(0))
        elif nxt in SIMPLE_ESCAPES:
            out.append(SIMPLE_ESCAPES[nxt])
            i += 2
        else:
            raise ExtractError("unknown escape \\" + nxt)
    raise ExtractError("unterminated marked literal")


def read_multiline(text, i):
    """From just after an opening triple quote: the msgid of a multi-line
    literal as Swift builds it (the closing delimiter's indentation taken off
    every line; a backslash at a line's end joins it to the next), and the
    index after the closing triple quote."""
    end = text.find('"""', i)
    first = text.find("\n", i)
    if end < 0 or first < 0 or first > end or text[i:first].strip():
        raise ExtractError("a multi-line literal must start on the line after its triple quote")
    lines = text[first + 1:end].split("\n")
    indent = lines.pop()
    if indent.strip():
        raise ExtractError("the closing triple quote must be on a line of its own")
    raw = ""
    for n, line in enumerate(lines):
        if line.strip() and not line.startswith(indent):
            raise ExtractError("a line indented less than the closing triple quote")
        line = line[len(indent):]
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2 == 1:
            raw += line[:-1]
        else:
            raw += line + ("\\n" if n < len(lines) - 1 else "")
    if '"' in raw.replace('\\"', ""):
        raise ExtractError('write \\" for a double quote in a marked multi-line literal')
    msgid, _ = read_literal(raw + '"', 0)
    return msgid, end + 3


def swift_sources():
    """(path relative to the repository, text) of every Swift file under Sources/, in a stable order."""
    for directory, dirs, files in os.walk(os.path.join(ROOT, "Sources")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".swift"):
                path = os.path.join(directory, name)
                yield os.path.relpath(path, ROOT), open(path, encoding="utf-8").read()


def messages():
    """(msgid, ["path:line", ...]) in the order they first appear."""
    found = {}
    for rel, text in swift_sources():
        for m in MARK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            if text[text.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith("//"):
                continue
            try:
                if text.startswith('""', m.end()):
                    msgid, end = read_multiline(text, m.end() + 2)
                else:
                    msgid, end = read_literal(text, m.end())
            except ExtractError as e:
                raise SystemExit("%s:%d: %s" % (rel, line, e))
            if not re.match(r"\s*\)", text[end:]):
                raise SystemExit("%s:%d: L(...) takes one string literal, nothing more" % (rel, line))
            if msgid == "":
                raise SystemExit("%s:%d: an empty message" % (rel, line))
            found.setdefault(msgid, []).append("%s:%d" % (rel, line))
    return found


def po_string(s):
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    if "\n" not in s:
        return '"%s"' % s
    lines = s.split("\n")
    parts = [line + "\\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    return '""\n' + "\n".join('"%s"' % p for p in parts)


HEADER = '''# Messages of vpnctl, the command-line VPN controller.
# Generated by Tools/extract-messages.py from the L("...") literals in Sources/; do not edit.
msgid ""
msgstr ""
"Project-Id-Version: vpnctl\\n"
"Report-Msgid-Bugs-To: \\n"
"MIME-Version: 1.0\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Content-Transfer-Encoding: 8bit\\n"
'''


def pot_text():
    out = [HEADER]
    for msgid, refs in messages().items():
        out.append("\n#: " + " ".join(refs) + "\n#, c-format\nmsgid " + po_string(msgid) + '\nmsgstr ""\n')
    return "".join(out)


def main():
    text = pot_text()
    if "--check" in sys.argv[1:]:
        current = open(POT, encoding="utf-8").read() if os.path.exists(POT) else ""
        # The messages and their order, not the "#:" line numbers: moving
        # code does not make the template stale, a new or changed message does.
        def messages_only(t):
            return "\n".join(l for l in t.split("\n") if not l.startswith("#:"))
        if messages_only(current) != messages_only(text):
            print("po/vpnctl.pot is out of date with Sources/: run Tools/extract-messages.py", file=sys.stderr)
            return 1
        return 0
    with open(POT, "w", encoding="utf-8") as f:
        f.write(text)
    print("%s: %d messages" % (os.path.relpath(POT), text.count("\nmsgid ") - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
