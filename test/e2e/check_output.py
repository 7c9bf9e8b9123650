#!/usr/bin/env python3
"""Compares arrayc-run's printed results with expected-output files.

    check_output.py EXPECTED ACTUAL [EXPECTED ACTUAL ...]

Each ACTUAL is compared with the EXPECTED before it (several pairs in one
call keep the test suite from starting Python once per run).

Both files hold one result leaf per line in arrayc-run's format (the
language's literal syntax without suffixes: true, -3, 2.5, nan, [[1, 2], [3,
4]]). The comparison is structural:

  * the number of lines, the nesting and the length of every list (so the
    shape) must match exactly;
  * integers and bools must be equal, and an integer never matches a float
    (a wrong result type is an error, not a rounding difference);
  * floats match when equal, when both are nan, or when
    |a - b| <= max(rtol * max(|a|, |b|), atol).

Lines of EXPECTED that start with '#' are comments, except directives of the
form `# rtol=R atol=A` (either may be left out) which set the tolerances for
the lines that follow. The defaults, rtol=1e-12 and atol=0, suit f64 results
computed in the same way by NumPy and C; test/e2e/gen_expected.py writes a
looser rtol before f32 results and before results of transcendental
functions, whose last bits differ between math libraries.

Only the standard library is used, so CI needs no NumPy. Exit status 0 when
every pair matches, 1 with a description of the first differences of each
pair that does not, 2 on a usage or format error.
"""
import math
import re
import sys

TOKEN = re.compile(r"\s*(\[|\]|,|[^\s\[\],]+)")
INT = re.compile(r"-?[0-9]+$")
FLOAT = re.compile(r"-?([0-9]+\.[0-9]*([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|inf|nan)$")


class FormatError(Exception):
    pass


def parse_value(text):
    """Parses one line into nested lists of ('int'|'float'|'bool', value)."""
    toks = [m.group(1) for m in TOKEN.finditer(text)]
    if "".join(toks) != re.sub(r"\s+", "", text):
        raise FormatError("unexpected characters in %r" % text)
    pos = 0

    def value():
        nonlocal pos
        if pos >= len(toks):
            raise FormatError("truncated value %r" % text)
        t = toks[pos]
        pos += 1
        if t == "[":
            items = []
            if pos < len(toks) and toks[pos] == "]":
                pos += 1
                return items
            while True:
                items.append(value())
                if pos >= len(toks):
                    raise FormatError("unterminated list in %r" % text)
                sep = toks[pos]
                pos += 1
                if sep == "]":
                    return items
                if sep != ",":
                    raise FormatError("expected ',' or ']' in %r" % text)
        if t in ("true", "false"):
            return ("bool", t == "true")
        if INT.match(t):
            return ("int", int(t))
        if FLOAT.match(t):
            return ("float", float(t))
        raise FormatError("not a value: %r" % t)

    v = value()
    if pos != len(toks):
        raise FormatError("text after the value in %r" % text)
    return v


def float_close(a, b, rtol, atol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    return abs(a - b) <= max(rtol * max(abs(a), abs(b)), atol)


def compare(exp, got, path, rtol, atol, out):
    """Appends a description of each difference (at most 10) to out."""
    if len(out) >= 10:
        return
    where = "[%s]" % ", ".join(map(str, path)) if path else "value"
    if isinstance(exp, list) or isinstance(got, list):
        if not (isinstance(exp, list) and isinstance(got, list)):
            out.append("%s: expected %s, got %s" % (where, show(exp), show(got)))
        elif len(exp) != len(got):
            out.append("%s: expected %d elements, got %d" % (where, len(exp), len(got)))
        else:
            for i, (e, g) in enumerate(zip(exp, got)):
                compare(e, g, path + [i], rtol, atol, out)
        return
    if exp[0] != got[0]:
        out.append("%s: expected %s %s, got %s %s" % (where, exp[0], show(exp), got[0], show(got)))
    elif exp[0] == "float":
        if not float_close(exp[1], got[1], rtol, atol):
            out.append("%s: expected %r, got %r (rtol=%g, atol=%g)"
                       % (where, exp[1], got[1], rtol, atol))
    elif exp[1] != got[1]:
        out.append("%s: expected %s, got %s" % (where, show(exp), show(got)))


def show(v):
    if isinstance(v, list):
        return "a list of %d" % len(v)
    if v[0] == "bool":
        return "true" if v[1] else "false"
    return repr(v[1])


def parse_directive(line, rtol, atol):
    for m in re.finditer(r"\b(rtol|atol)=(\S+)", line):
        try:
            val = float(m.group(2))
        except ValueError:
            raise FormatError("bad tolerance in %r" % line)
        if m.group(1) == "rtol":
            rtol = val
        else:
            atol = val
    return rtol, atol


def check_pair(exp_path, got_path):
    """Returns 0 if got_path matches exp_path, 1 if not, 2 on a format error."""
    with open(exp_path) as f:
        exp_lines = f.read().splitlines()
    with open(got_path) as f:
        got_lines = f.read().splitlines()
    rtol, atol = 1e-12, 0.0
    expected = []  # (line number in EXPECTED, text, rtol, atol)
    try:
        for n, line in enumerate(exp_lines, 1):
            if line.startswith("#"):
                rtol, atol = parse_directive(line, rtol, atol)
            elif line.strip():
                expected.append((n, line, rtol, atol))
    except FormatError as e:
        sys.stderr.write("%s: %s\n" % (exp_path, e))
        return 2
    got_lines = [l for l in got_lines if l.strip()]
    problems = []
    if len(got_lines) != len(expected):
        problems.append("expected %d result lines, got %d" % (len(expected), len(got_lines)))
    for i, ((n, text, rt, at), got) in enumerate(zip(expected, got_lines), 1):
        try:
            e = parse_value(text)
        except FormatError as err:
            sys.stderr.write("%s:%d: %s\n" % (exp_path, n, err))
            return 2
        try:
            g = parse_value(got)
        except FormatError as err:
            problems.append("result %d: %s" % (i, err))
            continue
        diffs = []
        compare(e, g, [], rt, at, diffs)
        for d in diffs:
            problems.append("result %d: %s" % (i, d))
    if problems:
        sys.stderr.write("%s does not match %s:\n" % (got_path, exp_path))
        for p in problems[:20]:
            sys.stderr.write("  " + p + "\n")
        return 1
    return 0


def main(argv):
    if len(argv) < 3 or len(argv) % 2 == 0:
        sys.stderr.write("usage: check_output.py EXPECTED ACTUAL [EXPECTED ACTUAL ...]\n")
        return 2
    status = 0
    for exp_path, got_path in zip(argv[1::2], argv[2::2]):
        status = max(status, check_pair(exp_path, got_path))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
