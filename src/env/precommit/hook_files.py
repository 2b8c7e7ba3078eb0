# The tool, run on the files a pre-commit hook would get.
#
# argv[1] is the hook's `files` pattern, argv[2] its `exclude`, argv[3] the base's root
# .gitignore, then the tool and its arguments. pre-commit passes the files git tracks; a sandbox
# has no git, so these are the Python files (.py, .pyi) that .gitignore does not ignore (a
# setuptools-scm `_version.py` an install wrote is not linted), build and cache folders left
# out, sorted. The rules are the base's, given here: a change that ignores a file it broke is
# still checked there. Nothing to check is a pass.
import os, re, subprocess, sys

files, exclude, gitignore, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
skip = {".git", ".tox", ".nox", ".venv", "venv", "build", "dist", "node_modules", "__pycache__",
        ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def glob(p):
    """A .gitignore glob as a regular expression over a path below its directory."""
    out, i = "", 0
    while i < len(p):
        if p.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif p.startswith("/**", i) and i + 3 == len(p):
            out, i = out + "/.*", i + 3
        elif p.startswith("**", i):
            out, i = out + ".*", i + 2
        elif p[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif p[i] == "?":
            out, i = out + "[^/]", i + 1
        elif p[i] == "[" and "]" in p[i + 2:]:
            j = p.index("]", i + 2)
            body = p[i + 1:j]
            body = "^" + body[1:] if body.startswith("!") else body
            out, i = out + "[" + body.replace("\\", "\\\\") + "]", j + 1
        elif p[i] == "\\" and i + 1 < len(p):
            out, i = out + re.escape(p[i + 1]), i + 2
        else:
            out, i = out + re.escape(p[i]), i + 1
    return out


def rules(text):
    """The rules of a .gitignore: (regex, negated, directories only), in order."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        only_dirs = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        pattern = glob(line.lstrip("/"))
        try:
            regex = re.compile(("" if anchored else "(?:.*/)?") + pattern + r"\Z")
        except re.error:
            continue
        out.append((regex, negated, only_dirs))
    return out


def ignored(path, is_dir):
    hit = False
    for regex, negated, only_dirs in active:
        if (is_dir or not only_dirs) and regex.match(os.path.relpath(path)):
            hit = not negated
    return hit


names, active = [], rules(gitignore)
for d, ds, fs in os.walk("."):
    ds[:] = [x for x in ds if x not in skip and not x.endswith(".egg-info")
             and not ignored(os.path.join(d, x), True)]
    for f in fs:
        p = os.path.relpath(os.path.join(d, f))
        if p.endswith((".py", ".pyi")) and not ignored(p, False) and re.search(files, p) \
                and not (exclude and re.search(exclude, p)):
            names.append(p)
sys.exit(subprocess.call(argv + sorted(names)) if names else 0)
