#!/usr/bin/env python3
"""Fails when a message a person reads is an English literal not marked
with L("...").

It looks in Sources/ at the message of VPNError(code, "..."),
VPNError.usage("..."), VPNError.invalid("..."), at every `hint: "..."`
and `let hint = "..."`, and at every `.note("...")`: an argument that
starts with a string literal holding a letter (interpolations and escapes
left out) is a fault. An argument that is not a literal (a variable, `"\\(error)"`, `L(...)`) is
not looked at.

A message that stays English on purpose (it goes to a log, a runtime
record, or is built before the request's language is known) says so on
its line, or on the line the call starts on:

    throw VPNError(.failure, "...")  // English: <reason>

Usage: Tools/check-unmarked.py   (from anywhere; exit 1 listing file:line)
"""
import importlib.util
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPT_OUT = re.compile(r"//\s*English:\s*\S")
# (pattern, which argument is the message: 0 the first, 1 the second)
CALLS = [
    (re.compile(r"(?<![A-Za-z0-9_.])VPNError\("), 1),
    (re.compile(r"(?<![A-Za-z0-9_])VPNError\.(?:usage|invalid)\("), 0),
    (re.compile(r"\.note\("), 0),
    (re.compile(r"(?<![A-Za-z0-9_])hint:"), None),
    (re.compile(r"\b(?:let|var) hint\s*=(?!=)"), None),
]


def skip_string(text, i):
    """From an opening quote (or triple quote): the index after the literal."""
    if text.startswith('"""', i):
        end = text.find('"""', i + 3)
        return len(text) if end < 0 else end + 3
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            if text.startswith("\\(", i):
                i = skip_group(text, i + 2, ")")
                continue
            i += 2
            continue
        if c == '"' or c == "\n":
            return i + 1
        i += 1
    return i


def skip_group(text, i, close):
    """From just after an opening bracket: the index after its closing one."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    while i < len(text):
        c = text[i]
        if c == '"':
            i = skip_string(text, i)
            continue
        if text.startswith("//", i):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        if c in pairs:
            i = skip_group(text, i + 1, pairs[c])
            continue
        if c == close:
            return i + 1
        i += 1
    return i


def skip_space(text, i):
    while True:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if text.startswith("//", i):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        return i


def argument_start(text, i, index):
    """From just after `(`: where argument `index` starts (None if the call
    has fewer arguments)."""
    i = skip_space(text, i)
    for _ in range(index):
        while i < len(text):
            c = text[i]
            if c == '"':
                i = skip_string(text, i)
            elif c in "([{":
                i = skip_group(text, i + 1, {"(": ")", "[": "]", "{": "}"}[c])
            elif c == ",":
                i += 1
                break
            elif c in ")]}":
                return None
            else:
                i += 1
        i = skip_space(text, i)
    return i


def words(text, i):
    """The literal text of the string literal at i, interpolations and
    escapes left out."""
    end = skip_string(text, i)
    body = text[i:end]
    body = re.sub(r'^"""|"""$|^"|"$', "", body)
    out, j = [], 0
    while j < len(body):
        if body.startswith("\\(", j):
            j = skip_group(body, j + 2, ")")
        elif body[j] == "\\":
            m = re.match(r"\\u\{[0-9A-Fa-f]+\}", body[j:])
            j += len(m.group(0)) if m else 2
        else:
            out.append(body[j])
            j += 1
    return "".join(out)


def line_of(text, i):
    return text.count("\n", 0, i) + 1


def line_text(text, i):
    start = text.rfind("\n", 0, i) + 1
    end = text.find("\n", i)
    return text[start:len(text) if end < 0 else end]


def unmarked(text):
    """The lines of `text` (Swift source) with an unmarked message, in order."""
    lines = set()
    for pattern, index in CALLS:
        for m in pattern.finditer(text):
            if line_text(text, m.start()).lstrip().startswith("//"):
                continue
            start = skip_space(text, m.end()) if index is None else argument_start(text, m.end(), index)
            if start is None or start >= len(text) or text[start] != '"':
                continue
            if not re.search(r"[^\W\d_]", words(text, start)):
                continue
            if OPT_OUT.search(line_text(text, m.start())) or OPT_OUT.search(line_text(text, start)):
                continue
            lines.add(line_of(text, start))
    return sorted(lines)


def swift_sources():
    """The sources as extract-messages.py walks them (its file name has a dash: loaded by path)."""
    spec = importlib.util.spec_from_file_location("extract_messages", os.path.join(os.path.dirname(os.path.abspath(__file__)), "extract-messages.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.swift_sources()


def faults():
    found = []
    for rel, text in swift_sources():
        lines = text.split("\n")
        found += ["%s:%d: %s" % (rel, n, lines[n - 1].strip()) for n in unmarked(text)]
    return found


# Each fixture: Swift text, and the lines the check must name.
FIXTURES = [
    ('throw VPNError(.failure, "no such thing")', [1]),
    ('throw VPNError(.failure, L("no such thing"))', []),
    ('throw VPNError(e.code, e.message, hint: "try again")', [1]),
    ('throw VPNError(.failure, "\\(path): \\(problem)")', []),
    ('throw VPNError(.failure, "\\(path)\\n")', []),
    ('throw VPNError(.failure, "\\(a.map { "x" }): \\(b)")', []),
    ('throw VPNError(.failure,\n               "line two words")', [2]),
    ('throw VPNError(.failure, f("x"), hint: L("y"))', []),
    ('throw VPNError.usage("bad \\(x)", hint: L("See."))', [1]),
    ('throw VPNError.invalid(n == 1 ? L("a") : L("b"), problems: p)', []),
    ('inv.output.note("[#] \\(c)")', []),
    ('inv.output.note("done")', [1]),
    ('let hint: String? = nil', []),
    ('let hint = "fix it"', [1]),
    ('var hint = installed.isEmpty ? L("a") : L("b")', []),
    ('x(hint: """\n    words\n    """)', [1]),
    ('throw VPNError(.failure, "words") // English: the log\'s', []),
    ('throw VPNError(.failure, "words") // English:', [1]),
    ('// throw VPNError(.failure, "words")', []),
]


def self_test():
    bad = [(text, want, unmarked(text)) for text, want in FIXTURES if unmarked(text) != want]
    for text, want, got in bad:
        print("self-test: %r: want lines %s, got %s" % (text, want, got), file=sys.stderr)
    return 1 if bad else 0


def main():
    if self_test():
        return 1
    found = faults()
    for f in found:
        print(f, file=sys.stderr)
    if found:
        print("%d message(s) a person reads are not marked with L(\"...\"); mark them, or end the line with "
              "'// English: <reason>'" % len(found), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
