#!/usr/bin/env python3
"""Checks po/*.po against po/vpnctl.pot: every message has a translation in
every catalog, none is empty or fuzzy, and each keeps exactly the
placeholders (%1$s, %2$s...) of its message. Exit 1 naming each fault.

Usage: Tools/check-translations.py [PO...]   (default: every po/*.po)
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pofile import unquote  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDER = re.compile(r"%(?:%|\d+\$s)")


def entries(path):
    """{msgid: (msgstr, fuzzy)} of a .po or .pot file (obsolete entries left out)."""
    result, flags, current, field = {}, "", None, None

    def flush():
        if current and current["msgid"]:
            result[current["msgid"]] = (current.get("msgstr", ""), "fuzzy" in current["flags"])

    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("#~") or not line.strip():
            continue
        if line.startswith("#") or line.startswith("msgid "):
            if field == "msgstr":
                flush()
                current, field = None, None
            if line.startswith("#,"):
                flags += line
            if line.startswith("#"):
                continue
            current, field, flags = {"msgid": unquote(line[6:]), "flags": flags}, "msgid", ""
        elif line.startswith("msgstr "):
            field = "msgstr"
            current["msgstr"] = unquote(line[7:])
        elif line.startswith('"') and field:
            current[field] += unquote(line)
    flush()
    return result


def placeholders(s):
    return sorted(p for p in PLACEHOLDER.findall(s) if p != "%%")


def main():
    pot = entries(os.path.join(ROOT, "po", "vpnctl.pot"))
    catalogs = sys.argv[1:] or sorted(glob.glob(os.path.join(ROOT, "po", "*.po")))
    faults = []
    for path in catalogs:
        name = os.path.relpath(path, ROOT)
        po = entries(path)
        for msgid in pot:
            if msgid not in po:
                faults.append("%s: no entry for %r" % (name, msgid))
                continue
            msgstr, fuzzy = po[msgid]
            if not msgstr:
                faults.append("%s: empty translation of %r" % (name, msgid))
            elif fuzzy:
                faults.append("%s: fuzzy translation of %r" % (name, msgid))
            elif placeholders(msgstr) != placeholders(msgid):
                faults.append("%s: %r has placeholders %s, its translation %s" %
                              (name, msgid, placeholders(msgid), placeholders(msgstr)))
        for msgid in po:
            if msgid not in pot:
                faults.append("%s: %r is no longer in po/vpnctl.pot (msgmerge it away)" % (name, msgid))
    for f in faults:
        print(f, file=sys.stderr)
    print("%d messages, %d catalogs: %s" % (len(pot), len(catalogs), "ok" if not faults else "%d faults" % len(faults)))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
