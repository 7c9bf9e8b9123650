#!/usr/bin/env python3
"""Checks the example programs of arrayc's Markdown documentation.

docs/language.md teaches the language through small complete programs. They
are only worth something if they are true, so this script runs every one of
them through the real tools (stdlib only, so CI needs nothing extra):

  ```arrayc            a complete program (one or more `fn`). arrayc-opt must
                       accept it, and its canonical print must print to the
                       same text again (print -> parse -> print is a fixpoint).
  <!-- run: ARGS -->   after an `arrayc` block (or after the `output` block of
  CAPTION              a previous run of it): arrayc-run BLOCK ARGS must succeed
  ```output            and print exactly these lines. ARGS are split like a
                       shell command line (quote arguments with spaces:
                       --fn f "[1, 2]"). The canonical print of the block is
                       run too and must print the same.
  <!-- run-error: ARGS -->  like run:, but the call must fail (exit status 1)
  CAPTION              and the first line of the diagnostic, without the
  ```output            file-name prefix, must be the output block's line.
  <!-- print -->       like run:, but the output block is the exact canonical
  CAPTION              print of the program (arrayc-opt's output).
  ```output

  ```arrayc-error      a program that must be rejected: arrayc-opt exits with
  ERROR_CAPTION        status 1 and the first diagnostic line, without the
  ```output            file-name prefix, is the output block's line, e.g.
                       "3:7: error: unknown name 'x'" (line and column count
                       from the start of the block).

Directives are HTML comments, which rendered Markdown hides, so the line
after each must show the reader what runs, exactly as CAPTION_FORMATS says
("`arrayc-run ex.ac ARGS` prints:"), and the line between an `arrayc-error`
block and its `output` block must be ERROR_CAPTION. The script checks them,
so the visible command cannot drift from the one that is run.

Other fenced blocks (C, EBNF, plain text) are not checked here (language.md's
C block is test/docs/check_snippets.py's, with the other documents). An
`output` block or a directive anywhere else is a mistake in the document and is
reported, so that an example cannot silently stop being checked.

With --ops OPS.DEF the script also checks that the document is complete: every
row of the operation table is named in it (by its ID, as in language.md's
index of operations) and every operation with a spelling of its own
(`map`, `<<`, `loop`, ...) is used in at least one accepted example.

Float results are compared with a relative tolerance of 1e-9: C libraries may
differ in the last bit of transcendental functions, and that is not what the
documentation is about. Everything else is compared exactly.

usage: check_docs.py --opt ARRAYC_OPT --run ARRAYC_RUN [--self-test] [--ops OPS.DEF]
                     [FILE.md ...]

--self-test first checks the checker itself on small built-in documents (one
correct, several wrong in different ways) so that a checker that passes
everything cannot go unnoticed. Exit status: 0 when everything holds, 1
otherwise.
"""

import argparse
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile

TIMEOUT_S = 30
FLOAT_RTOL = 1e-9
FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)\s*$")
DIRECTIVE_RE = re.compile(r"^\s*<!--\s*(?:(run-error|run)\s*:(.*?)|(print)\s*)-->\s*$")
DIRECTIVES = ("run", "run-error", "print")
CAPTION_FORMATS = {
    "run": "`arrayc-run ex.ac %s` prints:",
    "run-error": "`arrayc-run ex.ac %s` fails with:",
    "print": "`arrayc-opt ex.ac` prints:",
}
ERROR_CAPTION = "`arrayc-opt ex.ac` fails with:"


class Item:
    """A fenced block or a run directive, with its line in the document."""

    def __init__(self, kind, line, info="", text="", args=None, caption=None):
        self.kind = kind  # "block" or one of DIRECTIVES
        self.line = line
        self.info = info
        self.text = text
        self.args = args
        self.caption = caption  # directives: the line after them; blocks: the line before


def parse_markdown(text, problems):
    """Splits a Markdown document into fenced blocks and run directives."""
    items = []
    lines = text.split("\n")
    i = 0
    prev_text = ""  # the last non-blank line outside blocks
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
                # Content indented like its fence loses that indentation.
                body.append(line[indent:] if line[:indent].strip() == "" else line)
                i += 1
            if not closed:
                problems.append("line %d: unterminated code block" % start)
            items.append(Item("block", start, info=info, text="\n".join(body) + "\n",
                              caption=prev_text))
            prev_text = ""
            i += 1
            continue
        if lines[i].strip():
            prev_text = lines[i].strip()
        d = DIRECTIVE_RE.match(lines[i])
        if d:
            kind = d.group(1) or d.group(3)
            raw = (d.group(2) or "").strip()
            try:
                args = shlex.split(raw)
            except ValueError as e:
                problems.append("line %d: bad directive arguments: %s" % (i + 1, e))
                args = []
            caption = lines[i + 1].strip() if i + 1 < len(lines) else ""
            want = CAPTION_FORMATS[kind] % raw if "%s" in CAPTION_FORMATS[kind] \
                else CAPTION_FORMATS[kind]
            if caption != want:
                problems.append("line %d: the directive must be followed by the visible line\n  %s"
                                % (i + 1, want))
            items.append(Item(kind, i + 1, args=args, caption=caption))
        elif re.search(r"<!--\s*(run|print)", lines[i]):
            problems.append("line %d: malformed directive (write <!-- run: ARGS --> or "
                            "<!-- print -->)" % (i + 1))
        i += 1
    return items


def run(cmd):
    """Runs a command; returns (status, stdout, stderr); status -1 on timeout."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, "", "timed out after %d s" % TIMEOUT_S
    except OSError as e:
        return -1, "", str(e)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def first_diagnostic(stderr, path):
    """The first diagnostic line of stderr with the `path:` prefix removed."""
    for line in stderr.splitlines():
        if line.startswith(path + ":"):
            return line[len(path) + 1:].lstrip()
        if "error:" in line:
            return line
    return stderr.splitlines()[0] if stderr.strip() else "(no diagnostic)"


def number(tok):
    """The value of a float token of arrayc-run's output, or None."""
    if tok in ("nan", "-nan"):
        return math.nan
    if not re.fullmatch(r"-?(inf|\d+\.\d*(e[-+]?\d+)?|\d+e[-+]?\d+)", tok):
        return None
    return float(tok)


def same_output(expected, got):
    """Line-by-line comparison; floats within FLOAT_RTOL, the rest exact."""
    exp_lines = [l.rstrip() for l in expected.strip("\n").split("\n")] if expected.strip() else []
    got_lines = [l.rstrip() for l in got.strip("\n").split("\n")] if got.strip() else []
    if len(exp_lines) != len(got_lines):
        return False
    tok_re = re.compile(r"[^\s,\[\]()]+|[,\[\]()]")
    for e, g in zip(exp_lines, got_lines):
        if e == g:
            continue
        et, gt = tok_re.findall(e), tok_re.findall(g)
        if len(et) != len(gt):
            return False
        for a, b in zip(et, gt):
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


OP_ROW_RE = re.compile(r'^AC_OP\(\s*(\w+)\s*,\s*"([^"]*)"\s*,\s*(\w+)', re.M)


def check_ops(ops_text, doc_text, examples):
    """Every op of ops.def is named in the document and, when it has a
    spelling, used by some accepted example. Returns a list of problems."""
    problems = []
    code = "\n".join(re.sub(r"//[^\n]*", "", e) for e in examples)
    rows = OP_ROW_RE.findall(ops_text)
    if not rows:
        return ["no AC_OP rows found in the operation table"]
    for ident, spelling, syntax in rows:
        if not re.search(r"\b%s\b" % ident, doc_text):
            problems.append("operation %s is not named in the document" % ident)
        if not spelling:
            continue
        if syntax == "SX_CALL":
            used = re.search(r"\b%s\s*\(" % re.escape(spelling), code)
        elif spelling[0].isalpha():
            used = re.search(r"\b%s\b" % re.escape(spelling), code)
        else:
            used = spelling in code
        if not used:
            problems.append("operation %s (%s) is not used by any example"
                            % (ident, spelling))
    return problems


class Checker:
    def __init__(self, opt, runner, workdir):
        self.opt = opt
        self.runner = runner
        self.workdir = workdir
        self.failures = []
        self.counts = {"programs": 0, "runs": 0, "errors": 0, "prints": 0}
        self.examples = []  # texts of the accepted examples

    def fail(self, doc, line, msg):
        self.failures.append("%s:%d: %s" % (doc, line, msg))

    def write(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def check_program(self, doc, item):
        """arrayc-opt accepts the block and its print is a fixpoint.
        Returns (path of the block, path of its canonical print or None)."""
        self.canon_text = None
        self.counts["programs"] += 1
        path = self.write("doc_L%d.ac" % item.line, item.text)
        rc, out, err = run([self.opt, path])
        if rc != 0:
            self.fail(doc, item.line, "arrayc-opt rejects the example (status %d):\n%s"
                      % (rc, err.rstrip()))
            return path, None
        self.canon_text = out
        canon = self.write("doc_L%d.canon.ac" % item.line, out)
        rc2, out2, err2 = run([self.opt, canon])
        if rc2 != 0:
            self.fail(doc, item.line, "the canonical print does not parse again (status %d):\n"
                      "%s\n--- canonical print ---\n%s" % (rc2, err2.rstrip(), out))
        elif out2 != out:
            self.fail(doc, item.line, "printing is not a fixpoint:\n--- first print ---\n%s"
                      "--- second print ---\n%s" % (out, out2))
        return path, canon

    def check_run(self, doc, item, output, path, canon):
        self.counts["runs"] += 1
        want_error = item.kind == "run-error"
        for label, p in (("example", path), ("canonical print", canon)):
            if p is None:
                continue
            rc, out, err = run([self.runner, p] + item.args)
            if want_error:
                got = first_diagnostic(err, p)
                if rc != 1 or got != output.text.strip():
                    self.fail(doc, item.line, "%s: expected the call to fail with\n  %s\n"
                              "got status %d and\n  %s" % (label, output.text.strip(), rc, got))
                    return
            elif rc != 0:
                self.fail(doc, item.line, "%s: arrayc-run failed (status %d):\n%s"
                          % (label, rc, err.rstrip()))
                return
            elif not same_output(output.text, out):
                self.fail(doc, item.line, "%s: wrong output\n--- expected ---\n%s"
                          "--- got ---\n%s" % (label, output.text, out))
                return

    def check_print(self, doc, item, output):
        self.counts["prints"] += 1
        if self.canon_text is not None and self.canon_text != output.text:
            self.fail(doc, item.line, "wrong canonical print\n--- expected ---\n%s"
                      "--- got ---\n%s" % (output.text, self.canon_text))

    def check_error(self, doc, item, output):
        self.counts["errors"] += 1
        path = self.write("doc_L%d.ac" % item.line, item.text)
        rc, out, err = run([self.opt, path])
        got = first_diagnostic(err, path)
        want = output.text.strip()
        if rc != 1 or got != want:
            self.fail(doc, item.line, "expected arrayc-opt to reject the example with\n  %s\n"
                      "got status %d and\n  %s" % (want, rc, got))

    def check_document(self, doc, text):
        problems = []
        items = parse_markdown(text, problems)
        for p in problems:
            self.failures.append("%s:%s" % (doc, p))
        i = 0
        while i < len(items):
            it = items[i]
            if it.kind == "block" and it.info == "arrayc":
                self.examples.append(it.text)
                path, canon = self.check_program(doc, it)
                i += 1
                while i < len(items) and items[i].kind in DIRECTIVES:
                    d = items[i]
                    if i + 1 >= len(items) or items[i + 1].info != "output":
                        self.fail(doc, d.line, "a directive must be followed by an "
                                  "`output` block")
                        i += 1
                        continue
                    if d.kind == "print":
                        self.check_print(doc, d, items[i + 1])
                    elif not d.args:
                        self.fail(doc, d.line, "a run directive needs arguments (--fn NAME ...)")
                    else:
                        self.check_run(doc, d, items[i + 1], path, canon)
                    i += 2
                continue
            if it.kind == "block" and it.info == "arrayc-error":
                if i + 1 >= len(items) or items[i + 1].info != "output":
                    self.fail(doc, it.line, "an `arrayc-error` block must be followed by an "
                              "`output` block with the expected diagnostic")
                    i += 1
                else:
                    if items[i + 1].caption != ERROR_CAPTION:
                        self.fail(doc, items[i + 1].line, "the line before the diagnostic must "
                                  "be\n  " + ERROR_CAPTION)
                    self.check_error(doc, it, items[i + 1])
                    i += 2
                continue
            if it.kind != "block":
                self.fail(doc, it.line, "run directive not directly after an `arrayc` example")
            elif it.info == "output":
                self.fail(doc, it.line, "`output` block without a run directive or an "
                          "`arrayc-error` block before it")
            i += 1


# ---- self-test: the checker must tell right from wrong -------------------------

GOOD_DOC = """\
Text.

```arrayc
fn inc(x: i32) -> i32 {
  x + 1
}
```
<!-- run: --fn inc 41 -->
`arrayc-run ex.ac --fn inc 41` prints:
```output
42
```

```arrayc-error
fn f() -> i32 { y }
```
`arrayc-opt ex.ac` fails with:
```output
1:17: error: unknown name 'y'
```
"""

BAD_DOCS = {
    "wrong output": GOOD_DOC.replace("\n42\n", "\n43\n"),
    "wrong diagnostic": GOOD_DOC.replace("1:17:", "1:18:"),
    "error block that compiles": GOOD_DOC.replace("{ y }", "{ 1 }"),
    "example that does not compile": GOOD_DOC.replace("x + 1", "x + z"),
    "output block without directive": GOOD_DOC.replace("<!-- run: --fn inc 41 -->\n", ""),
    "directive without output": GOOD_DOC.replace("```output\n42\n```\n", ""),
    "diagnostic without caption": GOOD_DOC.replace("`arrayc-opt ex.ac` fails with:\n", ""),
    "caption that differs from the directive": GOOD_DOC.replace("ex.ac --fn inc 41`",
                                                                "ex.ac --fn inc 40`"),
    "malformed directive": GOOD_DOC.replace("<!-- run:", "<!-- run "),
    "run that should fail": GOOD_DOC.replace("<!-- run:", "<!-- run-error:"),
    "wrong canonical print": GOOD_DOC.replace(
        "<!-- run: --fn inc 41 -->\n`arrayc-run ex.ac --fn inc 41` prints:\n```output\n42\n",
        "<!-- print -->\n`arrayc-opt ex.ac` prints:\n```output\nfn inc() {}\n"),
}


def self_test(opt, runner):
    """Returns a list of problems with the checker itself."""
    problems = []
    with tempfile.TemporaryDirectory() as d:
        c = Checker(opt, runner, d)
        c.check_document("<good>", GOOD_DOC)
        if c.failures or c.counts != {"programs": 1, "runs": 1, "errors": 1, "prints": 0}:
            problems.append("the correct self-test document fails or is not fully checked:\n"
                            + "\n".join(c.failures))
        for name, doc in BAD_DOCS.items():
            c = Checker(opt, runner, d)
            c.check_document("<%s>" % name, doc)
            if not c.failures:
                problems.append("the checker accepts a document with a %s" % name)
    ops = 'AC_OP(ADD, "+", SX_INFIX, 2, TC_ARITH, 8)\nAC_OP(MAP, "map", SX_CALL, -1, TC_SPECIAL, 0)\n'
    if check_ops(ops, "ADD MAP", ["fn f() { map(g, x) + 1 }"]) or \
            len(check_ops(ops, "ADD", ["fn f() { mapx(g) - 1 }"])) != 3:
        problems.append("check_ops does not tell a complete document from an incomplete one")
    if not same_output("1.0000000001\n", "1.0000000002\n") or same_output("1.5\n", "1.6\n") \
            or same_output("1\n", "2\n") or not same_output("[nan, 2.0]\n", "[nan, 2.0]\n"):
        problems.append("same_output compares floats wrongly")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", required=True, help="the arrayc-opt executable")
    ap.add_argument("--run", required=True, help="the arrayc-run executable")
    ap.add_argument("--self-test", action="store_true", help="check the checker first")
    ap.add_argument("--ops", help="ops.def: check that the documents cover every operation")
    ap.add_argument("docs", nargs="*", help="Markdown files to check")
    a = ap.parse_args()
    if not a.docs and not a.self_test:
        ap.error("nothing to check")
    ok = True
    if a.self_test:
        problems = self_test(a.opt, a.run)
        for p in problems:
            print("self-test: " + p)
        ok = not problems
        print("self-test: %s" % ("ok" if ok else "FAILED"))
    for doc in a.docs:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as d:
            c = Checker(a.opt, a.run, d)
            c.check_document(doc, text)
        if a.ops:
            with open(a.ops, encoding="utf-8") as f:
                c.failures += ["%s: %s" % (doc, p) for p in check_ops(f.read(), text, c.examples)]
        for f in c.failures:
            print(f)
        if c.counts["programs"] + c.counts["errors"] == 0:
            print("%s: no `arrayc` or `arrayc-error` examples found" % doc)
            c.failures.append("empty")
        print("%s: %d programs (%d prints, %d runs), %d rejected programs; %d failures"
              % (doc, c.counts["programs"], c.counts["prints"], c.counts["runs"],
                 c.counts["errors"], len(c.failures)))
        ok = ok and not c.failures
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
