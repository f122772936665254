"""What the catalog checkers share: reading a .po file's quoted strings."""


def unquote(s):
    """The text of one quoted .po string ("..."), its escapes decoded."""
    s = s.strip()
    assert s.startswith('"') and s.endswith('"'), s
    out, i, s = [], 0, s[1:-1]
    while i < len(s):
        if s[i] == "\\":
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)
