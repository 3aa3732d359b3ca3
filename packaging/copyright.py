#!/usr/bin/env python3
"""Writes /usr/share/doc/sandboxd/copyright, machine-readable (DEP-5).

The binaries are Go: every module they link is compiled into them, so the
package distributes those modules' code, and their licenses (BSD and MIT
ones above all) ask for their notices to travel with it. The list is not
kept by hand: it is what `go version -m` reads from the binaries
themselves, and each module's license files come from Go's module cache
(or the source tree, for a replaced module). A module whose license this
script cannot name still gets its license text in full, under the name
"other", and a warning.

Usage: copyright.py OUTPUT BINARY...
"""

import os
import re
import subprocess
import sys

# sandboxd's own license: the tree's LICENSE (Apache-2.0, as its API
# description always said).
UPSTREAM_LICENSE = """\
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0."""

LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|UNLICENSE)([.-].*)?$", re.I)
NOTICE_FILE = re.compile(r"^NOTICE(\..*)?$", re.I)
# A copyright notice opens its line; Apache's appendix template does not count.
COPYRIGHT_LINE = re.compile(r"^\s*(Copyright\s*(\([cC]\)|©|[0-9])|\([cC]\)\s*[0-9]|©).*")
TEMPLATE = re.compile(r"\[yyyy\]|\{yyyy\}|\[name of copyright owner\]|<year>")
COMMON = {"Apache-2.0": "/usr/share/common-licenses/Apache-2.0",
          "MPL-2.0": "/usr/share/common-licenses/MPL-2.0"}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def linked_modules(binaries):
    """(path, version, used-by) of every module the binaries link, and Go's version."""
    mods, gover = {}, ""
    for b in binaries:
        name = os.path.basename(b)
        lines = run("go", "version", "-m", b).splitlines()
        gover = lines[0].split(":", 1)[1].strip()
        for line in lines[1:]:
            f = line.split("\t")
            if len(f) >= 4 and f[1] == "dep":
                mods.setdefault((f[2], f[3]), []).append(name)
    return mods, gover


def module_dirs(paths):
    """Where each module's files are: the module cache, or a replacement's tree."""
    out = run("go", "list", "-m", "-f",
              "{{.Path}}\t{{if .Replace}}{{.Replace.Path}}\t{{.Replace.Dir}}{{else}}\t{{.Dir}}{{end}}",
              *paths)
    dirs = {}
    for line in out.splitlines():
        path, replace, d = line.split("\t")
        dirs[path] = (replace, d)
    return dirs


def classify(text):
    """The DEP-5 short names of the licenses a license file holds."""
    names = []
    if re.search(r"Apache License", text) and re.search(r"Version 2\.0", text):
        names.append("Apache-2.0")
    if re.search(r"Permission is hereby granted, free of charge", text):
        names.append("Expat")
    if re.search(r"Redistribution and use in source and binary forms", text):
        if re.search(r"Neither the name|names of its\s+contributors|name of the copyright holder", text):
            names.append("BSD-3-clause")
        else:
            names.append("BSD-2-clause")
    if re.search(r"Mozilla Public License", text) and re.search(r"2\.0", text):
        names.append("MPL-2.0")
    if re.search(r"Permission to use, copy, modify, and(/or)? distribute", text):
        names.append("ISC")
    return names


# The Apache License's own text (and its appendix), inside a file that holds
# more than it (a note on a relicensing, another license): Debian's copy in
# /usr/share/common-licenses stands for it, as lintian asks
# (copyright-file-contains-full-apache-2-license).
APACHE_TEXT = re.compile(
    r"^[ \t]*Apache License[ \t]*\n[ \t]*Version 2\.0, January 2004.*?END OF TERMS AND CONDITIONS[ \t]*\n"
    r"(?:\s*APPENDIX: How to apply the Apache License.*?limitations under the License\.[ \t]*\n)?",
    re.S | re.M)


def shorten(text):
    return APACHE_TEXT.sub("[The Apache License, Version 2.0: on Debian systems, "
                           "/usr/share/common-licenses/Apache-2.0.]\n", text)


def pure_common(text, names):
    """A file that is nothing but a license /usr/share/common-licenses has."""
    return (len(names) == 1 and names[0] in COMMON
            and text.lstrip().startswith(("Apache License", "Mozilla Public License")))


def field(text):
    """Text as a DEP-5 continuation: one space in, "." for blank lines."""
    out = []
    for line in text.strip("\n").rstrip().splitlines():
        line = line.rstrip().replace("\t", "    ")
        out.append(" " + line if line.strip() else " .")
    return "\n".join(out)


def paragraph(files, copyrights, names, texts, comment):
    lines = ["Files: " + files]
    cr = list(dict.fromkeys(c.strip() for c in copyrights)) or ["the authors of " + files.rstrip("/*")]
    lines.append("Copyright: " + cr[0])
    lines += ["           " + c for c in cr[1:]]
    lines.append("License: " + (" and ".join(names) if names else "other"))
    if texts:
        lines.append(field("\n\n".join(texts)))
    if comment:
        lines.append("Comment: " + comment.splitlines()[0])
        if comment.splitlines()[1:]:
            lines.append(field("\n".join(comment.splitlines()[1:])))
    return "\n".join(lines)


def module_paragraph(files, d, what):
    """Files paragraph of one module: its licenses, notices and copyright lines."""
    names, texts, copyrights, notices = [], [], [], []
    for f in sorted(os.listdir(d)):
        p = os.path.join(d, f)
        if not os.path.isfile(p):
            continue
        if LICENSE_FILE.match(f):
            text = open(p, encoding="utf-8", errors="replace").read()
            n = classify(text)
            names += [x for x in n if x not in names]
            copyrights += [m.group(0) for m in map(COPYRIGHT_LINE.match, text.splitlines())
                           if m and not TEMPLATE.search(m.group(0))]
            if not pure_common(text, n):
                texts.append(shorten(text))
        elif NOTICE_FILE.match(f):
            # Apache-2.0, section 4(d): NOTICE files travel with the work.
            text = open(p, encoding="utf-8", errors="replace").read()
            notices.append(text)
            copyrights += [m.group(0) for m in map(COPYRIGHT_LINE.match, text.splitlines()) if m]
    if not names:
        print(f"copyright.py: warning: no license recognised for {files} in {d}", file=sys.stderr)
    comment = what
    if notices:
        comment += "\nIts NOTICE file:\n\n" + "\n".join(notices)
    return paragraph(files, copyrights, names, texts, comment), names


def main():
    out, binaries = sys.argv[1], sys.argv[2:]
    mods, gover = linked_modules(binaries)
    dirs = module_dirs(sorted({p for p, _ in mods}))
    goroot = run("go", "env", "GOROOT").strip()
    used = sorted(mods.items())

    paras = ["""\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sandboxd
Upstream-Contact: sandboxd developers <dev@sandboxd.invalid>
Comment: Generated by packaging/copyright.py when the package was built.
 /usr/bin/sandboxd and /usr/bin/sandboxctl are Go programs: besides
 sandboxd's own code they hold the Go standard library and every Go module
 listed below, compiled in (go version -m /usr/bin/sandboxd lists them).
 A Files pattern MODULE/* stands for the files of that Go module, at the
 version its Comment gives, not for files of this package. libseccomp, the
 one C library they link dynamically, is in its own package.""",
             "Files: *\nCopyright: sandboxd developers\n" + UPSTREAM_LICENSE]
    seen = set()
    text, names = "", []
    go_para, n = module_paragraph("go/*", goroot, f"The Go standard library and runtime, {gover}.")
    paras.append(go_para)
    seen.update(n)
    for (path, version), by in used:
        replace, d = dirs.get(path, ("", ""))
        if not d or not os.path.isdir(d):
            sys.exit(f"copyright.py: no files for module {path} {version} (go mod download {path}?)")
        what = f"Go module {path} {version}, compiled into {' and '.join(sorted(set(by)))}."
        files = path + "/*"
        if replace:
            # A replacement in the source tree (go.mod replace => ./dir).
            files = os.path.relpath(d, os.getcwd()) + "/*"
            what = f"Go module {path}, replaced by ./{os.path.relpath(d, os.getcwd())} of the source tree, compiled into {' and '.join(sorted(set(by)))}."
        p, n = module_paragraph(files, d, what)
        paras.append(p)
        seen.update(n)
    for name in sorted(seen & COMMON.keys()):
        paras.append(f"License: {name}\n On Debian systems, the complete text of this license is in\n {COMMON[name]}.")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n\n".join(paras) + "\n")


if __name__ == "__main__":
    main()
