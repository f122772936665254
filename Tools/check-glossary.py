#!/usr/bin/env python3
"""Checks that po/LANG.po uses the terms of po/glossary/LANG.tsv.

For every message whose English text names a glossary term (a whole word,
any case, "-s"/"-es" plurals included; commands, options, file names and
'quoted' words are not prose and are left out first), the translation must
hold the glossary's translation or one of its declared forms (Russian
inflects), and none of the renderings the glossary says to avoid. In
po/zh_Hans.po a sentence also takes full-width punctuation: no ASCII comma
after a Chinese character, and no ASCII quotes around a word next to
Chinese text (“…” instead).

The glossary format is described in po/glossary/README.

Usage: Tools/check-glossary.py [LANG...]   (default: every po/glossary/*.tsv)
Prints po/LANG.po:LINE: term 'X' ... for each fault; exit 1 when there is one.
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pofile import unquote  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What is code, not prose, in an English message: a 'quoted' word or
# command, `vpnctl WORD` (a command's name, and a METAVAR after it), an
# [Interface] section, an option, a <placeholder>, a path, file or key name
# (anything with / . _ inside a word) and a camelCase key.
CODE = [
    re.compile(r"(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])"),
    re.compile(r"\bvpnctl[ -][A-Za-z][\w-]*(?: [A-Z][A-Z_]+\b)?"),
    re.compile(r"\[[A-Za-z]+\]"),
    re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*"),
    re.compile(r"<[^<>\n]*>"),
    re.compile(r"[\w-]*[/._][\w./-]*\w"),
    re.compile(r"\b[a-z]+[A-Z]\w*"),
]
CJK = r"\u3400-\u9fff\uf900-\ufaff"
FULLWIDTH = r"\u3000-\u303f\uff00-\uffef"
# An ASCII comma right after a Chinese character (or full-width punctuation).
ZH_COMMA = re.compile(r"[%s%s] *,|, *[%s]" % (CJK, FULLWIDTH, CJK))
# An ASCII-quoted word or phrase with Chinese right before or right after
# it; not one right after an ASCII word (a shell command's argument:
# vpnctl edit 'my vpn').
ZH_QUOTE = re.compile(r"(?:[%s] *)(['\"])[^'\"\n]*\1|(?<![\w.,:;=/-])(?<![\w.,:;=/-] )(['\"])[^'\"\n]*\2(?= *[%s])"
                      % (CJK + FULLWIDTH, CJK + FULLWIDTH))


def entries(path):
    """[(line of msgid, msgid, msgstr)] of a .po file, header and obsolete entries left out."""
    result, current, field = [], None, None
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if line.startswith("msgid "):
            if current:
                result.append(current)
            current, field = [number, unquote(line[6:]), ""], 1
        elif line.startswith("msgstr ") and current:
            current[2], field = unquote(line[7:]), 2
        elif line.startswith('"') and current and field:
            current[field] += unquote(line)
        elif not line.startswith('"'):
            field = None
    if current:
        result.append(current)
    return [e for e in result if e[1]]


def glossary(path):
    """[(term, [translations], [avoid])] from a glossary file."""
    terms = []
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            sys.exit("%s:%d: expected TERM<TAB>TRANSLATION[<TAB>FORMS<TAB>AVOID<TAB>NOTE]" % (os.path.relpath(path, ROOT), number))
        split = lambda i: [w.strip() for w in cols[i].split("|") if w.strip()] if len(cols) > i else []
        terms.append((cols[0].strip(), [cols[1].strip()] + split(2), split(3)))
    return terms


def prose(msgid):
    for pattern in CODE:
        msgid = pattern.sub(" ", msgid)
    return msgid


def term_pattern(term):
    words = [re.escape(w) for w in re.split(r"[ -]", term)]
    return re.compile(r"(?<![\w-])" + r"[ -]".join(words) + r"(?:s|es)?(?![\w-])", re.IGNORECASE)


def check(lang):
    po_path = os.path.join(ROOT, "po", lang + ".po")
    name = os.path.relpath(po_path, ROOT)
    terms = [(t, tr, av, term_pattern(t)) for t, tr, av in glossary(os.path.join(ROOT, "po", "glossary", lang + ".tsv"))]
    # Longer terms first; the words of one found are not looked at again
    # ("shared secret" is not a "secret").
    terms.sort(key=lambda t: -len(t[0]))
    faults = []
    for line, msgid, msgstr in entries(po_path):
        # A translation wraps lines where it likes: "hồ\nsơ" is "hồ sơ".
        text, lower = prose(msgid), re.sub(r"\s+", " ", msgstr.lower())
        for term, translations, avoid, pattern in terms:
            if not pattern.search(text):
                continue
            text = pattern.sub(" ", text)
            if not any(t.lower() in lower for t in translations):
                faults.append("%s:%d: term '%s' is to be '%s' in %r" % (name, line, term, translations[0], msgstr[:80]))
            for bad in avoid:
                if bad.lower() in lower:
                    faults.append("%s:%d: term '%s' is rendered '%s' (avoid it; use '%s')" % (name, line, term, bad, translations[0]))
        if lang == "zh_Hans":
            for m in ZH_COMMA.finditer(msgstr):
                faults.append("%s:%d: term ',' is an ASCII comma in a Chinese sentence (use '，'): %r" % (name, line, m.group(0)))
            for m in ZH_QUOTE.finditer(msgstr):
                faults.append("%s:%d: term 'quotes' are ASCII in a Chinese sentence (use “…”): %r" % (name, line, m.group(0).strip()))
    return faults


def main():
    langs = sys.argv[1:] or sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "po", "glossary", "*.tsv")))
    faults = []
    for lang in langs:
        faults += check(lang)
    for f in faults:
        print(f)
    print("glossary: %d catalogs: %s" % (len(langs), "ok" if not faults else "%d faults" % len(faults)), file=sys.stderr)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
