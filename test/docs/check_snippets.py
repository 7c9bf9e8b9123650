#!/usr/bin/env python3
"""Runs every command and snippet of arrayc's Markdown documentation.

README.md and docs/*.md show commands and C, Python and arrayc code; this
script runs all of them, as written, against one build of arrayc, so that
a reader who copies them gets what the text promises. (docs/language.md's
`arrayc` examples are test/docs/check_docs.py's; this script checks the
rest of each document it is given.) Only the standard library is used.

The conventions, also in docs/architecture.md ("Documentation that runs"):

Every fenced block says what it is, and that decides what is done with it:

  ```sh       commands, run by bash (`bash -e`: the first failing command
              ends the block) in the document's scratch directory
  ```python   a Python program, run by python3 there
  ```c        a complete C program: compiled with $CC and linked against
              the compiler library (`pkg-config --cflags --libs arrayc` of
              the installation below), then run
  ```arrayc   a complete program of the language: arrayc-opt must accept it
  ```output   what the block run last before it printed; compared, see
              below
  ```cmake    with wrap: (below), the CMakeLists.txt of a project whose
              other files are the scratch directory's: configured with
              CMAKE_PREFIX_PATH naming the installation, and built
  ```text, ```ebnf, and ```cmake without wrap:
              prose, not run

A block with no language is an error (say ```text for a diagram), and so
is a ```text block with a shell prompt (a line starting `$ `): a command
goes in a ```sh block, what it prints in the ```output block after it.

A directive, an HTML comment (hidden when the Markdown is rendered) on the
lines just before a block, changes what is done with it. Several are
separated by `;`:

  <!-- doc-test: skip: REASON -->     not run; REASON is printed (a block
                                      that installs packages, or builds
                                      arrayc itself, say)
  <!-- doc-test: only-last: REASON --> a one-line `A && B && C`: only C
                                      runs; REASON says why A and B do not
  <!-- doc-test: needs-gpu -->        run only when a CUDA driver is found
                                      (`arrayc-run --version`); otherwise
                                      skipped, saying so
  <!-- doc-test: needs: TOOL -->      run only when TOOL is on PATH
  <!-- doc-test: file: NAME -->       the block is a file of the example:
                                      written to NAME in the scratch
                                      directory (the commands after it use
                                      it); nothing is run
  <!-- doc-test: wrap: NAME -->       a fragment, completed by a wrapper
                                      in test/docs/Inputs/wrap/ that
                                      declares what it uses and, usually,
                                      checks what it did. C (declarations, or statements
                                      of a function): put into NAME.c at
                                      its line /* @SNIPPET@ */, compiled
                                      and run as a complete program; where
                                      the wrapper says /* @DECLARED@ */ go
                                      the addresses of the functions the
                                      fragment declares, so that one that
                                      does not exist fails to link. arrayc:
                                      NAME.ac at // @SNIPPET@, which
                                      arrayc-opt must accept. CMake:
                                      NAME.cmake at # @SNIPPET@, the
                                      project above
  <!-- doc-test: status: N -->        the block must end with exit status N
                                      (a command that fails on purpose)

A ```sh block that would change the machine or the build being tested
(apt-get, sudo, ldconfig, ctest, `cmake -S/-B/--build/--install`, `rm -r`)
is refused unless it says skip: or only-last:.

Every document has one scratch directory, and its blocks run there in
order, so a file that one block writes (`file:`, or a command) is there for
the next. It starts with a symbolic link to every top-level entry of the
source tree (so `examples/dotp.ac` is there, as in the repository root) and
`build`, a link to the build being tested. The build is installed into a
prefix (as test/install/consumer.sh does) whose bin/ comes first on PATH
and whose pkg-config files are on PKG_CONFIG_PATH; $PREFIX names it
(install.md's commands use it), and `cc` is the build's C compiler.
ARRAYC_* variables are cleared, so the tools run with their defaults
(`auto`: the GPU if there is one, else the CPU), and the kernel cache lives
in the scratch directory.

An ```output block is compared line by line with what was printed:
standard output, then standard error (what a terminal shows for a command
that prints its results and then diagnostics or statistics; a pipe would
reorder them).
A line `...` stands for any number of lines, and `...` within a line for
any text (times, versions, long counts); numbers elsewhere match within a
relative 1e-6 (float results may differ in the last digit between the
backends that `auto` may pick); everything else must be equal. An
```output block with no block run before it is an error.

usage: check_snippets.py --build DIR --source DIR [--libdir LIBDIR]
                         [--cc CC] [--cflags FLAGS] [--self-test]
                         [--tools-doc TOOLS.md] [--language-doc LANGUAGE.md]
                         [FILE.md ...]

--language-doc names a document whose `arrayc` and `arrayc-error` examples
and their `output` blocks test/docs/check_docs.py checks (language.md):
only its other blocks are looked at here.

--tools-doc checks that TOOLS.md (docs/tools.md) names every option that
the --help of arrayc, arrayc-opt and arrayc-run lists (README.md says the
tools are documented completely there).

--cflags (a sanitizer build's -fsanitize=...) is added to every compile and
link, including the documents' own `cc` commands (`cc` on PATH is CC with
FLAGS); Python blocks are then skipped.

--self-test first checks the checker on small built-in documents, a right
one and wrong ones that it must report. Skipped blocks are listed with
their reasons (and appended to $ARRAYC_SKIP_LOG when it is set). Exit
status: 0 when everything holds, 1 otherwise, 77 ("SKIPPED: why") when the
C compiler, cmake, pkg-config or bash is missing.
"""

import argparse
import math
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

TIMEOUT_S = 120  # one block
FLOAT_RTOL = 1e-6
FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)\s*$")
DIRECTIVE_RE = re.compile(r"^\s*<!--\s*doc-test:(.*?)-->\s*$")
RUNNABLE = ("sh", "python", "c")
PROSE = ("text", "cmake", "ebnf", "json")  # json: must parse
KNOWN = RUNNABLE + PROSE + ("arrayc", "arrayc-error", "output")
# Commands that would change the machine or the build being tested (the
# scratch directory's `build` is that build): a block with one of them must
# say skip: or only-last:, and is refused otherwise.
UNSAFE_RE = re.compile(r"\b(apt-get|apt|sudo|ldconfig|ctest)\b|\bcmake\s+(-S|-B|--build|--install)"
                       r"|\brm\s+-[a-z]*r")
SNIPPET_RE = re.compile(r"^[ \t]*/\* @SNIPPET@ \*/[ \t]*\n", re.M)  # where a wrapper takes it
SNIPPET_AC_RE = re.compile(r"^[ \t]*// @SNIPPET@[ \t]*\n", re.M)  # the same in an .ac wrapper
SNIPPET_CMAKE_RE = re.compile(r"^[ \t]*# @SNIPPET@[ \t]*\n", re.M)  # and a .cmake one
DECLARED = "/* @DECLARED@ */"  # there: the addresses of the functions the fragment declares
WRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs", "wrap")


class Block:
    """A fenced block with the directives before it."""

    def __init__(self, line, info, text):
        self.line = line  # the line of the opening fence
        self.info = info
        self.text = text
        self.directives = {}


def parse_markdown(text, problems):
    """The fenced blocks of a document, with their directives."""
    blocks = []
    lines = text.split("\n")
    pending = None  # (line, directives) waiting for their block
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if m:
            indent, fence, info = len(m.group(1)), m.group(2), m.group(3)
            start = i + 1
            body = []
            i += 1
            closed = False
            while i < len(lines):
                close = lines[i].strip()
                if close.startswith(fence[0] * len(fence)) and close.strip(fence[0]) == "":
                    closed = True
                    break
                line = lines[i]
                body.append(line[indent:] if line[:indent].strip() == "" else line)
                i += 1
            if not closed:
                problems.append((start, "unterminated code block"))
            b = Block(start, info, "\n".join(body) + "\n")
            if pending:
                b.directives = pending[1]
                pending = None
            blocks.append(b)
            i += 1
            continue
        d = DIRECTIVE_RE.match(lines[i])
        if d:
            if pending:
                problems.append((pending[0], "a doc-test directive must come just before a "
                                 "fenced block"))
            pending = (i + 1, parse_directives(d.group(1), i + 1, problems))
        elif "doc-test" in lines[i] and lines[i].lstrip().startswith("<!--"):
            problems.append((i + 1, "malformed directive (write <!-- doc-test: WHAT -->)"))
        elif lines[i].strip() and pending:
            problems.append((pending[0], "a doc-test directive must come just before a "
                             "fenced block"))
            pending = None
        i += 1
    if pending:
        problems.append((pending[0], "a doc-test directive must come just before a fenced block"))
    return blocks


DIRECTIVE_ARGS = {"skip": True, "only-last": True, "needs-gpu": False, "needs": True,
                  "file": True, "wrap": True, "status": True}


def parse_directives(text, line, problems):
    out = {}
    # a `;` followed by a directive's name separates two (reasons may hold `;`)
    for part in re.split(r";\s*(?=[a-z-]+\b\s*(?::|;|$))", text):
        part = part.strip()
        if not part:
            continue
        name, _, arg = part.partition(":")
        name, arg = name.strip(), arg.strip()
        if name not in DIRECTIVE_ARGS:
            problems.append((line, "unknown doc-test directive '%s'" % name))
        elif DIRECTIVE_ARGS[name] and not arg:
            problems.append((line, "doc-test directive '%s' needs an argument "
                             "(%s: ...)" % (name, name)))
        elif not DIRECTIVE_ARGS[name] and arg:
            problems.append((line, "doc-test directive '%s' takes no argument" % name))
        else:
            out[name] = arg
    if "status" in out and not re.fullmatch(r"\d+", out["status"]):
        problems.append((line, "status: takes a number"))
        del out["status"]
    return out


# ---- comparing output -------------------------------------------------------------

TOKEN_RE = re.compile(r"[^\s,\[\]()=:]+|[,\[\]()=:]|\s+")


def number(tok):
    if tok in ("nan", "-nan"):
        return math.nan
    try:
        return float(tok) if re.fullmatch(r"[-+]?(inf|\d+(\.\d*)?(e[-+]?\d+)?)", tok) else None
    except ValueError:
        return None


def same_line(want, got):
    if want == got:
        return True
    if "..." in want:
        pattern = ".*".join(re.escape(p) for p in want.split("..."))
        return re.fullmatch(pattern, got) is not None
    wt, gt = TOKEN_RE.findall(want), TOKEN_RE.findall(got)
    if len(wt) != len(gt):
        return False
    for a, b in zip(wt, gt):
        if a == b:
            continue
        x, y = number(a), number(b)
        if x is None or y is None:
            return False
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif x != y and abs(x - y) > FLOAT_RTOL * max(abs(x), abs(y)):
            return False
    return True


def same_output(expected, got):
    """Lines of `expected` against lines of `got`; a line `...` matches any
    number of lines."""
    want = [l.rstrip() for l in expected.rstrip("\n").split("\n")] if expected.strip() else []
    have = [l.rstrip() for l in got.rstrip("\n").split("\n")] if got.strip() else []
    memo = {}

    def match(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(want):
            r = j == len(have)
        elif want[i].strip() == "...":
            r = any(match(i + 1, k) for k in range(j, len(have) + 1))
        else:
            r = j < len(have) and same_line(want[i], have[j]) and match(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return match(0, 0)


# ---- running ----------------------------------------------------------------------


def run(cmd, cwd, env):
    """(status, output): stdout, then stderr; status -1 on a timeout. (Not
    interleaved: a pipe buffers stdout, so the order would not be the one a
    terminal shows; stdout then stderr is, for a command that prints its
    results and then its diagnostics or statistics.) A timeout ends the
    command's whole process group."""
    try:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             start_new_session=True)
    except OSError as e:
        return -1, str(e)
    try:
        out, err = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return -1, "timed out after %d s" % TIMEOUT_S
    return p.returncode, (out + err).decode("utf-8", "replace")


class Env:
    """What the blocks run against: the tools, the installation, the C compiler."""

    def __init__(self, build, source, prefix, libdir, cc, cflags, gpu):
        self.build = build
        self.source = source
        self.prefix = prefix
        self.libdir = libdir
        self.cc = cc
        self.cflags = cflags
        self.gpu = gpu  # None when present, else why not
        self.sanitized = False  # a sanitizer build: Python cannot load its libraries

    def variables(self, scratch):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARRAYC_")}
        env["PATH"] = os.path.join(self.prefix, "bin") + os.pathsep + env.get("PATH", "")
        pc = os.path.join(self.prefix, self.libdir, "pkgconfig")
        env["PKG_CONFIG_PATH"] = pc + (os.pathsep + env["PKG_CONFIG_PATH"]
                                       if env.get("PKG_CONFIG_PATH") else "")
        env["ARRAYC_CACHE_DIR"] = os.path.join(scratch, ".cache")
        env["CC"] = self.cc
        env["PREFIX"] = self.prefix
        env.pop("LIT_FILTER_OUT", None)
        return env


class Checker:
    def __init__(self, env):
        self.env = env
        self.failures = []
        self.skips = []  # (doc, line, reason)
        self.counts = {"sh": 0, "python": 0, "c": 0, "arrayc": 0, "cmake": 0, "output": 0,
                       "file": 0}

    def fail(self, doc, line, msg):
        self.failures.append("%s:%d: %s" % (doc, line, msg))

    def scratch_dir(self, d):
        for name in sorted(os.listdir(self.env.source)):
            if name.startswith(".git") or name.startswith("build"):
                continue
            os.symlink(os.path.join(self.env.source, name), os.path.join(d, name))
        os.symlink(self.env.build, os.path.join(d, "build"))
        os.mkdir(os.path.join(d, ".doc-test"))

    def check_document(self, doc, text, scratch, language_doc=False):
        """Runs the blocks of one document in scratch. In a language_doc
        (language.md) the arrayc, arrayc-error and output blocks are
        check_docs.py's, and left alone here."""
        problems = []
        blocks = parse_markdown(text, problems)
        for line, p in problems:
            self.fail(doc, line, p)
        self.scratch_dir(scratch)
        env = self.env.variables(scratch)
        last = None  # (block, output or None when it was not run), the block run last
        for n, b in enumerate(blocks):
            d = b.directives
            if language_doc and b.info in ("arrayc", "arrayc-error", "output"):
                continue
            if b.info == "output":
                self.counts["output"] += 1
                if last is None:
                    self.fail(doc, b.line, "an `output` block with no block run before it")
                elif last[1] is not None and not same_output(b.text, last[1]):
                    self.fail(doc, b.line, "the output of the block at line %d differs\n"
                              "--- expected ---\n%s--- got ---\n%s"
                              % (last[0].line, b.text, last[1]))
                last = None
                continue
            if b.info not in KNOWN:
                self.fail(doc, b.line, "a fenced block without a known language (`%s`): say "
                          "what it is (%s)" % (b.info, ", ".join(KNOWN)))
                continue
            if b.info == "text" and re.search(r"^\$ ", b.text, re.M):
                self.fail(doc, b.line, "a ```text block with a shell prompt: put the command "
                          "in a ```sh block and what it prints in an ```output block")
                continue
            if "file" in d:
                self.write_file(doc, b, scratch)
                continue
            if "skip" in d:
                self.skip(doc, b, d["skip"])
                continue
            if (b.info in PROSE and not (b.info == "cmake" and "wrap" in d)) or \
                    b.info == "arrayc-error":
                if d:
                    self.fail(doc, b.line, "doc-test directives on a block that is not run")
                if b.info == "json":
                    try:
                        json.loads(b.text)
                    except ValueError as e:
                        self.fail(doc, b.line, "a json block that is not JSON: %s" % e)
                continue
            if "needs-gpu" in d and self.env.gpu:
                self.skip(doc, b, "needs a GPU: " + self.env.gpu)
                last = (b, None)
                continue
            if b.info == "python" and self.env.sanitized:
                self.skip(doc, b, "a sanitizer build: python3 is not instrumented, so it "
                          "cannot load arrayc's libraries")
                last = (b, None)
                continue
            if "needs" in d and not shutil.which(d["needs"], path=env["PATH"]):
                self.skip(doc, b, "needs %s, which is not on PATH" % d["needs"])
                last = (b, None)
                continue
            out = self.run_block(doc, b, n, scratch, env)
            # an `output` block after a program of the language is a mistake
            last = None if b.info == "arrayc" else (b, out)

    def skip(self, doc, b, reason):
        self.skips.append((doc, b.line, reason))

    def write_file(self, doc, b, scratch):
        self.counts["file"] += 1
        name = b.directives["file"]
        if "/" in name or name.startswith("."):
            self.fail(doc, b.line, "file: takes a plain file name")
            return
        with open(os.path.join(scratch, name), "w", encoding="utf-8") as f:
            f.write(b.text)

    def run_block(self, doc, b, n, scratch, env):
        """Runs a block; returns what it printed (None when it could not run)."""
        d = b.directives
        self.counts[b.info] += 1
        base = os.path.join(scratch, ".doc-test", "block%d_L%d" % (n, b.line))
        want_status = int(d.get("status", "0"))
        if b.info == "arrayc":
            path = base + ".ac"
            text = b.text
            if "wrap" in d:
                text = self.wrap(doc, b, d["wrap"])
                if text is None:
                    return None
            write(path, text)
            status, out = run(["arrayc-opt", path], scratch, env)
            if status != 0:
                self.fail(doc, b.line, "arrayc-opt rejects the program (status %d):\n%s"
                          % (status, out))
            return None
        if b.info == "cmake":
            return self.run_cmake(doc, b, base, scratch, env)
        if b.info == "sh":
            text = b.text
            if "only-last" in d:
                lines = [l for l in text.strip().split("\n") if l.strip()]
                if len(lines) != 1 or " && " not in lines[0]:
                    self.fail(doc, b.line, "only-last: is for one line of commands joined "
                              "with &&")
                    return None
                text = lines[0].split(" && ")[-1] + "\n"
                self.skip(doc, b, "all but `%s`: %s" % (text.strip(), d["only-last"]))
            if UNSAFE_RE.search(text):
                self.fail(doc, b.line, "the block builds, installs or removes things (`%s`): "
                          "it must say skip: or only-last: with the reason it is not run here"
                          % UNSAFE_RE.search(text).group(0))
                return None
            write(base + ".sh", text)
            cmd = ["bash", "-e", base + ".sh"]
        elif b.info == "python":
            write(base + ".py", b.text)
            cmd = [sys.executable, base + ".py"]
        else:
            src = b.text
            if "wrap" in d:
                src = self.wrap(doc, b, d["wrap"])
                if src is None:
                    return None
            write(base + ".c", src)
            status, out = run(["sh", "-c", '"$CC" %s -std=c11 -Wall -Wextra -Werror -o "$1" "$2" '
                               '$(pkg-config --cflags --libs arrayc) -Wl,-rpath,"$(pkg-config '
                               '--variable=libdir arrayc)"' % self.env.cflags, "cc",
                               base, base + ".c"], scratch, env)
            if status != 0:
                self.fail(doc, b.line, "the C snippet does not compile (%s; status %d):\n%s"
                          % (base + ".c", status, out))
                return None
            cmd = [base]
        status, out = run(cmd, scratch, env)
        if status != want_status:
            self.fail(doc, b.line, "the %s block exited with status %d, not %d:\n%s"
                      % (b.info, status, want_status, out))
        return out

    def run_cmake(self, doc, b, base, scratch, env):
        """A CMake fragment inside its wrapper is the CMakeLists.txt of a
        project whose other files are the scratch directory's: configured
        against the installation and built."""
        text = self.wrap(doc, b, b.directives["wrap"])
        if text is None:
            return None
        src, bld = base + ".src", base + ".build"
        os.mkdir(src)
        for name in os.listdir(scratch):
            path = os.path.join(scratch, name)
            if os.path.isfile(path) and not os.path.islink(path):
                shutil.copy(path, src)
        write(os.path.join(src, "CMakeLists.txt"), text)
        log = ""
        for cmd in (["cmake", "-S", src, "-B", bld, "-DCMAKE_PREFIX_PATH=" + self.env.prefix,
                     "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", "-DCMAKE_C_COMPILER=" + self.env.cc],
                    ["cmake", "--build", bld]):
            status, out = run(cmd, scratch, env)
            log += out
            if status != 0:
                self.fail(doc, b.line, "the CMake project does not %s (%s; status %d):\n%s"
                          % ("configure" if len(cmd) > 3 else "build", src, status, out))
                return None
        return log

    def wrap(self, doc, b, name):
        """The fragment of block b inside wrapper NAME (.c, .ac or .cmake)."""
        ext = {"arrayc": ".ac", "cmake": ".cmake"}.get(b.info, ".c")
        path = os.path.join(WRAP_DIR, name + ext)
        try:
            with open(path, encoding="utf-8") as f:
                wrapper = f.read()
        except OSError as e:
            self.fail(doc, b.line, "wrap: %s" % e)
            return None
        if b.info in ("arrayc", "cmake"):
            marker = SNIPPET_AC_RE if b.info == "arrayc" else SNIPPET_CMAKE_RE
            if len(marker.findall(wrapper)) != 1:
                self.fail(doc, b.line, "wrap: %s must have one line %s"
                          % (path, "// @SNIPPET@" if b.info == "arrayc" else "# @SNIPPET@"))
                return None
            m = marker.search(wrapper)
            return wrapper[:m.start()] + b.text + wrapper[m.end():]
        if len(SNIPPET_RE.findall(wrapper)) != 1:
            self.fail(doc, b.line, "wrap: %s must have one line /* @SNIPPET@ */" % path)
            return None
        # #line keeps the compiler's messages pointing into the document
        m = SNIPPET_RE.search(wrapper)
        after = wrapper[:m.start()].count("\n") + 2  # the wrapper's line after the fragment
        rest = wrapper[m.end():].replace(DECLARED, "".join(
            "(void (*)(void))%s, " % f for f in declared_functions(b.text)))
        return "%s#line %d \"%s\"\n%s#line %d \"%s\"\n%s" % (
            wrapper[:m.start()], b.line + 1, doc, b.text, after, path, rest)


def declared_functions(text):
    """The functions a fragment of declarations declares: the first NAME( of
    every line that starts a declaration (not a typedef, comment or
    preprocessor line; continuation lines are indented)."""
    names = []
    for line in text.split("\n"):
        if not line or line[0] in " \t/#*}" or line.startswith("typedef"):
            continue
        m = re.search(r"(\w+)\s*\(", line)
        if m and m.group(1) not in ("AC_OP",):
            names.append(m.group(1))
    return names


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ---- the self-test ----------------------------------------------------------------

GOOD_DOC = """# A document

<!-- doc-test: file: ex.ac -->
```arrayc
fn inc(x: i32) -> i32 { x + 1 }
```

```sh
arrayc-run ex.ac --fn inc 41
echo "took 12.5 ms"
```

```output
42
took ... ms
```

<!-- doc-test: status: 2 -->
```sh
arrayc-run ex.ac --fn inc 41 --no-such-option
```

```output
arrayc-run: unknown option '--no-such-option'...
```

```c
#include <arrayc/arrayc.h>
#include <stdio.h>

int main(void) {
  printf("%s\\n", ac_scalar_name(AC_F32));
  return 0;
}
```

```output
f32
```

<!-- doc-test: wrap: decls -->
```c
ac_context *ac_context_create(void);
```

```python
print([1.0, 2.5])
```

```output
[1.0000000001, 2.5]
...
```

<!-- doc-test: skip: the self-test skips a block -->
```sh
exit 1
```

<!-- doc-test: needs-gpu -->
```sh
arrayc-run --backend=gpu ex.ac --fn inc 1
```

```output
2
```

```text
fn f(x: i32) -> i32
```
"""

BAD_DOCS = {
    "wrong output": GOOD_DOC.replace("42\ntook", "43\ntook"),
    "missing output line": GOOD_DOC.replace("took ... ms\n", ""),
    "failing command": GOOD_DOC.replace("echo \"took", "false\necho \"took"),
    "wrong status": GOOD_DOC.replace("status: 2", "status: 1"),
    "C snippet that does not compile": GOOD_DOC.replace("ac_scalar_name(AC_F32)",
                                                        "ac_scalar_nam(AC_F32)"),
    "wrong C output": GOOD_DOC.replace("```output\nf32", "```output\nf64"),
    "declaration that disagrees with the header": GOOD_DOC.replace(
        "ac_context *ac_context_create(void);", "int ac_context_create(void);"),
    "failing Python": GOOD_DOC.replace("print([1.0, 2.5])", "import no_such_module"),
    "program arrayc-opt rejects": GOOD_DOC.replace("{ x + 1 }", "{ y + 1 }"),
    "skip without a reason": GOOD_DOC.replace("skip: the self-test skips a block", "skip"),
    "unknown directive": GOOD_DOC.replace("doc-test: skip:", "doc-test: skp:"),
    "directive that is not before a block": GOOD_DOC.replace(
        "<!-- doc-test: skip: the self-test skips a block -->\n",
        "<!-- doc-test: skip: the self-test skips a block -->\nProse.\n"),
    "block without a language": GOOD_DOC.replace("```text", "```"),
    "command in a text block": GOOD_DOC.replace("fn f(x: i32) -> i32", "$ arrayc-opt ex.ac"),
    "output block after nothing run": GOOD_DOC.replace("# A document\n",
                                                       "# A document\n\n```output\n1\n```\n"),
    "command that changes the machine": GOOD_DOC.replace("echo \"took", "apt-get -h\necho \"took"),
    "declaration of a function that does not exist": GOOD_DOC.replace(
        "ac_context *ac_context_create(void);", "ac_context *ac_context_creat(void);"),
    "missing wrapper": GOOD_DOC.replace("wrap: decls", "wrap: no_such_wrapper"),
}


def self_test(env):
    problems = []
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good")
        os.mkdir(good)
        c = Checker(env)
        c.check_document("<good>", GOOD_DOC, good)
        gpu = env.gpu is None
        want = {"sh": 2 + gpu, "python": 0 if env.sanitized else 1, "c": 2, "arrayc": 0,
                "cmake": 0, "output": 5, "file": 1}
        if c.failures or c.counts != want or len(c.skips) != 1 + env.sanitized + (not gpu):
            problems.append("the correct self-test document fails or is not fully checked "
                            "(%s, %d skips):\n%s" % (c.counts, len(c.skips),
                                                     "\n".join(c.failures)))
        for i, (name, doc) in enumerate(BAD_DOCS.items()):
            if name == "failing Python" and env.sanitized:
                continue  # Python is not run at all
            sd = os.path.join(d, "bad%d" % i)
            os.mkdir(sd)
            c = Checker(env)
            c.check_document("<%s>" % name, doc, sd)
            if not c.failures:
                problems.append("the checker accepts a document with a %s" % name)
    with tempfile.TemporaryDirectory() as d:
        for text, good in (('message(STATUS "found arrayc ${arrayc_VERSION}")', True),
                           ('message(FATAL_ERROR "no")', False)):
            doc = "<!-- doc-test: wrap: cmake_project -->\n```cmake\n%s\n```\n" % text
            sd = os.path.join(d, "good" if good else "bad")
            os.mkdir(sd)
            c = Checker(env)
            c.check_document("<cmake>", doc, sd)
            if bool(c.failures) == good or c.counts["cmake"] != 1:
                problems.append("the checker %s a CMake fragment that %s" % (
                    "rejects" if good else "accepts", "configures" if good else "fails"))
    help_text = "options:\n  -o OUT   output\n  -h, --help  help\n  --fn NAME  f\n"
    if help_options(help_text) != ["-o", "-h", "--help", "--fn"] or \
            undocumented_options(help_text, "`-o OUT`, `-h`, `--help`, `--fn NAME`") or \
            undocumented_options(help_text, "`-o OUT`, `-h`, `--fn NAME`") != ["--help"]:
        problems.append("the check of the tools' options is wrong")
    if not same_output("a\n...\nz\n", "a\nb\nc\nz\n") or same_output("a\n...\nz\n", "a\nb\n") \
            or not same_output("t: ... ms\n", "t: 0.5 ms\n") or same_output("1.5\n", "1.6\n") \
            or same_output("1\n", "2\n") or not same_output("[nan, 2.0]\n", "[nan, 2.0000001]\n"):
        problems.append("same_output compares wrongly")
    return problems


# ---- the tools' options --------------------------------------------------------

TOOLS = ("arrayc", "arrayc-opt", "arrayc-run")


def help_options(help_text):
    """The options a tool's --help lists: the words starting with `-` at the
    start of its lines under `options:` (`-h, --help` gives both)."""
    opts = []
    for line in help_text.split("\n"):
        m = re.match(r"^ {2}(-[^\s,]*(?:, -[^\s,]+)*)", line)
        if m:
            opts += [re.match(r"-[-\w]*", o).group(0) for o in m.group(1).split(", ")]
    return opts


def undocumented_options(help_text, doc_text):
    """The options of help_text that doc_text does not name (as `OPTION...`)."""
    return [o for o in help_options(help_text) if "`" + o not in doc_text]


# ---- main -------------------------------------------------------------------------


def install(build, prefix):
    status, out = run(["cmake", "--install", build, "--prefix", prefix], None, None)
    return None if status == 0 else out


def gpu_absent(prefix, env):
    """None when a CUDA driver is found, else why not."""
    status, out = run([os.path.join(prefix, "bin", "arrayc-run"), "--version"], None, env)
    m = re.search(r"^CUDA driver: (.*)$", out, re.M)
    if status != 0 or not m:
        return "arrayc-run --version failed:\n" + out
    return "no CUDA driver (" + m.group(1) + ")" if m.group(1).startswith("not found") else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build tree of arrayc to test")
    ap.add_argument("--source", required=True, help="the source tree (repository root)")
    ap.add_argument("--libdir", default="lib", help="CMAKE_INSTALL_LIBDIR of the build")
    ap.add_argument("--cc", default=os.environ.get("CC") or "cc", help="the C compiler")
    ap.add_argument("--cflags", default="", help="extra flags for every compile and link "
                    "(a sanitizer build's)")
    ap.add_argument("--self-test", action="store_true", help="check the checker first")
    ap.add_argument("--tools-doc", help="check that this document (docs/tools.md) names every "
                    "option that arrayc, arrayc-opt and arrayc-run --help list")
    ap.add_argument("--language-doc", action="append", default=[],
                    help="a document (language.md) whose arrayc examples and their output "
                    "blocks check_docs.py checks: only its other blocks are run here")
    ap.add_argument("docs", nargs="*", help="Markdown files to check")
    a = ap.parse_args()
    if not a.docs and not a.language_doc and not a.self_test:
        ap.error("nothing to check")
    for tool in (a.cc, "cmake", "pkg-config", "bash"):
        if not shutil.which(tool):
            print("SKIPPED: %s not found: the documentation's commands cannot run" % tool)
            log_skip("%s not found" % tool)
            return 77
    build, source = os.path.abspath(a.build), os.path.abspath(a.source)
    ok = True
    with tempfile.TemporaryDirectory(prefix="arrayc-docs-") as tmp:
        prefix = os.path.join(tmp, "prefix")
        err = install(build, prefix)
        if err:
            print("cmake --install %s failed:\n%s" % (build, err))
            return 1
        # the documents' `cc` is the build's C compiler, with a sanitizer
        # build's flags
        bindir = os.path.join(tmp, "cc-bin")
        os.mkdir(bindir)
        cc = os.path.join(bindir, "cc")
        write(cc, "#!/bin/sh\nexec %s %s \"$@\"\n" % (shlex.quote(shutil.which(a.cc)), a.cflags))
        os.chmod(cc, 0o755)
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        env = Env(build, source, prefix, a.libdir, cc, "", None)
        env.sanitized = bool(a.cflags)
        env.gpu = gpu_absent(prefix, env.variables(tmp))
        if a.self_test:
            problems = self_test(env)
            for p in problems:
                print("self-test: " + p)
            ok = not problems
            print("self-test: %s" % ("ok" if ok else "FAILED"))
        if a.tools_doc:
            with open(a.tools_doc, encoding="utf-8") as f:
                doc_text = f.read()
            for tool in TOOLS:
                status, out = run([os.path.join(prefix, "bin", tool), "--help"], None, None)
                missing = undocumented_options(out, doc_text) if status == 0 else ["(--help fails)"]
                for o in missing:
                    print("%s: %s's option %s is not documented" % (a.tools_doc, tool, o))
                ok = ok and not missing
            print("%s: the options of %s checked" % (a.tools_doc, ", ".join(TOOLS)))
        all_skips = []
        language_docs = [os.path.abspath(p) for p in a.language_doc]
        for i, doc in enumerate(a.docs + a.language_doc):
            with open(doc, encoding="utf-8") as f:
                text = f.read()
            scratch = os.path.join(tmp, "doc%d" % i)
            os.mkdir(scratch)
            c = Checker(env)
            name = os.path.relpath(os.path.abspath(doc), source)
            c.check_document(name, text, scratch, os.path.abspath(doc) in language_docs)
            for f in c.failures:
                print(f)
            for s in c.skips:
                print("%s:%d: skipped: %s" % s)
            all_skips += c.skips
            print("%s: %d sh, %d python, %d C, %d arrayc, %d CMake blocks run, %d outputs "
                  "compared, %d files written, %d skipped; %d failures"
                  % (name, c.counts["sh"], c.counts["python"], c.counts["c"],
                     c.counts["arrayc"], c.counts["cmake"], c.counts["output"],
                     c.counts["file"], len(c.skips), len(c.failures)))
            ok = ok and not c.failures
        for s in all_skips:
            log_skip("%s:%d: %s" % s)
    return 0 if ok else 1


def log_skip(reason):
    path = os.environ.get("ARRAYC_SKIP_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("docs.snippets: %s\n" % reason)


if __name__ == "__main__":
    sys.exit(main())
