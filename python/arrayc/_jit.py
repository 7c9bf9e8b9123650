"""@arrayc.jit: functions written in a subset of Python, compiled by arrayc.

    @arrayc.jit
    def saxpy(a, x, y):
        return arrayc.map(lambda xi, yi: a * xi + yi, x, y)

    saxpy(np.float32(2), xs, ys)

As Copperhead does, a jit function is translated when it is first called
with a new signature (each argument's dtype and rank): its Python syntax
tree (ast) becomes the text of one arrayc function whose parameter types
are the arguments' and whose result type is inferred (`-> _`), with every
@arrayc.jit function it calls defined inside it as a local function. The
text goes through arrayc.compile(), so the language's checker types it and
the interpreter still defines its meaning; the compiled function is cached
per signature. docs/python.md §7 is the reference of the subset.

Positions: each translated node is wrapped in markers while the text is
built; stripping them records where every node's text lies, so that a
diagnostic of the compiler (or a run-time error) at a line and column of
the arrayc text is reported at the Python node that produced it.
"""
import ast
import builtins
import functools
import inspect
import math
import operator
import textwrap
import threading

import numpy as np

from . import _core, _ops

# ---- the tables: Python objects -> arrayc names -------------------------------------------
_KEYWORDS = {"fn", "let", "if", "else", "loop", "while", "rec", "in", "true", "false", "inf",
             "nan", "clamp", "mirror", "wrap", "extern"}
# names a variable may have in arrayc but that read badly or change meaning
# when called (`len(...)` is always the operation): renamed
_RESERVED = _KEYWORDS | {op.name for op in _ops.OPERATIONS.values()} | {"prob", "from_log",
                                                                       "tiled", "sized"}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%",
           ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^",
           ast.BitAnd: "&"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
           ast.GtE: ">="}
_UNOPS = {ast.USub: "-", ast.Not: "!", ast.Invert: "~"}

# functions of scalars: object -> arrayc name (a math function, a conversion,
# or an operator written alone: fold(+, 0, xs))
_FUNCS = {}


def _fn(name, *objs):
    for o in objs:
        if o is not None:
            _FUNCS[o] = name


for _name, _op in _ops.OPERATIONS.items():
    _fn(_op.name, _op)
for _name in ("sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
              "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "copysign", "isnan", "isinf",
              "isfinite", "hypot"):
    _fn(_name, getattr(math, _name, None), getattr(np, _name, None))
_fn("exp2", np.exp2)
_fn("cbrt", np.cbrt, getattr(math, "cbrt", None))
_fn("erf", math.erf)
_fn("erfc", math.erfc)
_fn("fma", getattr(math, "fma", None))
_fn("asin", math.asin, np.arcsin)
_fn("acos", math.acos, np.arccos)
_fn("atan", math.atan, np.arctan)
_fn("atan2", math.atan2, np.arctan2)
_fn("pow", math.pow, np.power, builtins.pow)
_fn("abs", builtins.abs, math.fabs, np.absolute, np.fabs)
_fn("min", np.minimum, np.fmin)
_fn("max", np.maximum, np.fmax)
_fn("f64", builtins.float, np.float64)
_fn("i64", builtins.int)
_fn("bool", builtins.bool, np.bool_)
for _name in ("f32", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
    _fn(_name, getattr(np, {"f32": "float32"}.get(_name, _name.replace("i", "int").replace(
        "u", "uint"))))
for _op, _sym in ((operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"),
                  (operator.truediv, "/"), (operator.mod, "%"), (operator.and_, "&"),
                  (operator.or_, "|"), (operator.xor, "^"), (operator.lshift, "<<"),
                  (operator.rshift, ">>"), (operator.eq, "=="), (operator.ne, "!="),
                  (operator.lt, "<"), (operator.le, "<="), (operator.gt, ">"),
                  (operator.ge, ">="), (operator.not_, "!"), (operator.invert, "~"),
                  (operator.pow, "pow")):
    _fn(_sym, _op)
# Python's builtins that are arrayc's operations (Copperhead's style: map,
# sum, zip over sequences); min and max of one argument are minimum and
# maximum (below), range is iota or generate
_BUILTIN_OPS = {builtins.map: "map", builtins.filter: "filter", builtins.zip: "zip",
                builtins.sum: "sum", builtins.len: "len"}
del _name, _op, _sym

_NAME_OF_DTYPE = {dtype: name for name, (_, dtype) in _core.SCALARS.items()}


# ---- signatures -----------------------------------------------------------------------------
def _sig(a):
    """The part of a specialisation's key an argument gives: (scalar,) for a
    scalar, (scalar, rank) for an array, ("()", (fields..)) for a tuple."""
    t = type(a)
    if t is np.ndarray or t is _core.Array:
        name = _NAME_OF_DTYPE[a.dtype]
        return (name, a.ndim) if a.ndim else (name,)
    if t is float:
        return ("f64",)
    if t is int:
        if not -(1 << 63) <= a < (1 << 63):
            raise TypeError("%d does not fit in i64" % a)
        return ("i64",)
    if t is bool:
        return ("bool",)
    if t is tuple:
        if len(a) == 1:
            raise TypeError("arrayc has no tuples of one value")
        return ("()", tuple(_sig(x) for x in a))
    if isinstance(a, np.generic):
        return (_NAME_OF_DTYPE[a.dtype],)
    raise TypeError("@arrayc.jit takes NumPy arrays, arrayc.Array, scalars and tuples of "
                    "them, not %s" % t.__name__)


def _type_text(sig):
    if sig[0] == "()":
        return "(%s)" % ", ".join(_type_text(s) for s in sig[1])
    if len(sig) == 2:
        return "%s[%s]" % (sig[0], "," * (sig[1] - 1))
    return sig[0]


def _kind_of(sig):
    """What the translator knows of a value: ("tuple", [kinds]), ("array",
    rank), ("scalar",) or None."""
    if sig[0] == "()":
        return ("tuple", [_kind_of(s) for s in sig[1]])
    return ("array", sig[1]) if len(sig) == 2 else ("scalar",)


# ---- errors -----------------------------------------------------------------------------------
class _Unsupported(Exception):
    def __init__(self, node, message):
        super().__init__(message)
        self.node, self.message = node, message


def _caret_text(path, line, col, message, source_line):
    text = "%s:%d:%d: error: %s\n" % (path, line, col, message)
    if source_line is not None:
        text += source_line.rstrip("\n") + "\n" + " " * max(col - 1, 0) + "^\n"
    return text


# ---- one function's source ----------------------------------------------------------------------
class _Source:
    """A jit function's syntax tree and where it came from."""

    def __init__(self, py):
        try:
            lines, first = inspect.getsourcelines(py)
            path = inspect.getsourcefile(py) or py.__code__.co_filename
        except (OSError, TypeError) as e:
            raise _core.CompileError(
                "AC_ERR_SYNTAX", "the source of %s() is not available: @arrayc.jit reads a "
                "function's source (define it in a file)" % py.__name__,
                "error: the source of %s() is not available (%s)" % (py.__name__, e)) from None
        self.py, self.path, self.first, self.lines = py, path, first, lines
        self.indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(textwrap.dedent("".join(lines)))
        fdef = tree.body[0] if tree.body else None
        if not isinstance(fdef, ast.FunctionDef):
            raise self.error(fdef or tree, "@arrayc.jit compiles functions defined with def "
                             "(not lambdas or async functions)")
        self.fdef = fdef
        self.ids = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        self.ids |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        self.ids |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        # the names the function reads from outside: closure cells, then
        # globals, then builtins (looked up when translating, so frozen then)
        self.free = {}
        if py.__closure__:
            for name, cell in zip(py.__code__.co_freevars, py.__closure__):
                try:
                    self.free[name] = cell.cell_contents
                except ValueError:  # an empty cell: not bound yet
                    pass

    def position(self, node):
        """(line, column) in the file, both from 1, of an ast node."""
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        return self.first + line - 1, self.indent + col + 1

    def line_text(self, line):
        k = line - self.first
        return self.lines[k] if 0 <= k < len(self.lines) else None

    def error(self, node, message):
        line, col = self.position(node)
        return _core.CompileError("AC_ERR_SYNTAX", message,
                                  _caret_text(self.path, line, col, message, self.line_text(line)),
                                  self.path, line, col)

    def lookup(self, name):
        """(True, object) for a name read from outside the function, or (False, None)."""
        if name in self.free:
            return True, self.free[name]
        g = self.py.__globals__
        if name in g:
            return True, g[name]
        b = g.get("__builtins__", builtins)
        b = b if isinstance(b, dict) else vars(b)
        if name in b:
            return True, b[name]
        return False, None


# ---- scopes ------------------------------------------------------------------------------------
class _Bind:
    __slots__ = ("cname", "fn", "kind")

    def __init__(self, cname, fn=False, kind=None):
        self.cname, self.fn, self.kind = cname, fn, kind


class _Scope:
    def __init__(self, parent=None):
        self.parent, self.names = parent, {}

    def get(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


# ---- the translation of one specialisation ---------------------------------------------------------
class _Translation:
    """Python -> arrayc text for one root function and signature."""

    def __init__(self, root, sig):
        self.root = root
        self.spans = []  # marker id -> (_Source, ast node)
        self.locals = {}  # JitFunction -> its local function's name
        self.prelude = []  # the local functions' lets, callees first
        self.active = []  # the jit functions being translated (recursion)
        self.ids = set(root._source().ids)
        self.fresh_count = 0
        src = root._source()
        params = self.params(src, src.fdef)
        if len(params) != len(sig):
            raise TypeError("%s() takes %d argument%s, got %d" % (
                root.__name__, len(params), "" if len(params) == 1 else "s", len(sig)))
        scope = _Scope()
        decls = []
        for p, s in zip(params, sig):
            b = scope.names[p.arg] = _Bind(self.cname(p.arg), kind=_kind_of(s))
            decls.append(self.mark(src, p, "%s: %s" % (b.cname, _type_text(s))))
        self.active.append(root)
        lets, result = self.block(src, src.fdef.body, scope, doc=True)
        self.active.pop()
        self.name = self.cname(src.fdef.name)
        body = self.prelude + lets + [result]
        self.marked = "%s\n" % self.mark(src, src.fdef, "fn %s(%s) -> _ {\n%s\n}" % (
            self.name, ", ".join(decls), "\n".join("  " + b.replace("\n", "\n  ") for b in body)))
        self.text, self.where = _strip_markers(self.marked)

    # -- names --
    def cname(self, name):
        """The arrayc name of a Python name: itself, unless arrayc reserves it."""
        if name.isascii() and name not in _RESERVED:
            return name
        # arrayc's identifiers are ASCII: other letters are spelt by code point
        c = "".join(ch if ch.isascii() else "_u%x" % ord(ch) for ch in name) + "_"
        while c in self.ids or c in _RESERVED:
            c += "_"
        return c

    def fresh(self, base):
        while True:
            self.fresh_count += 1
            c = "%s%d" % (base, self.fresh_count)
            if c not in self.ids:
                self.ids.add(c)
                return c

    def mark(self, src, node, text):
        self.spans.append((src, node))
        return "\x01%d\x02%s\x03" % (len(self.spans) - 1, text)

    def params(self, src, fdef):
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or getattr(a, "posonlyargs", []):
            raise src.error(fdef, "%s(): @arrayc.jit takes plain positional parameters (no "
                            "defaults, *args, **kwargs or keyword-only parameters)" % fdef.name)
        for d in fdef.decorator_list if fdef is not src.fdef else []:
            raise src.error(d, "a nested function cannot have decorators")
        return a.args

    def bind(self, args, scope, kind=None):
        """Binds parameters (ast.arg) in scope; their arrayc names."""
        for p in args:
            scope.names[p.arg] = _Bind(self.cname(p.arg), kind=kind)
        return [scope.names[p.arg].cname for p in args]

    def def_lambda(self, src, fdef, scope):
        """A def (a jit callee's, or one nested in the body) as the lambda of a
        local function: `|a, b| { ..; result }`."""
        inner = _Scope(scope)
        names = self.bind(self.params(src, fdef), inner)
        return "|%s| %s" % (", ".join(names), _block_text(*self.block(src, fdef.body, inner,
                                                                        doc=True)))

    # -- the jit functions called: local functions of the root --
    def callee(self, src, node, jf):
        if jf in self.locals:
            return self.locals[jf]
        if jf in self.active:
            chain = " -> ".join(f.__name__ for f in self.active[self.active.index(jf):])
            raise src.error(node, "@arrayc.jit functions cannot be recursive: %s -> %s"
                            % (chain, jf.__name__))
        csrc = jf._source()
        self.ids |= csrc.ids
        self.active.append(jf)
        lam = self.def_lambda(csrc, csrc.fdef, None)
        self.active.pop()
        name = self.cname(csrc.fdef.name + "_jit")
        while name in self.ids:
            name += "_"
        self.ids.add(name)
        self.prelude.append(self.mark(csrc, csrc.fdef, "let %s = %s;" % (name, lam)))
        self.locals[jf] = name
        return name

    # -- statements --
    def block(self, src, stmts, scope, doc=False, tail=None, after=None):
        """(lets, result) for a list of statements that ends with return (or,
        with tail, runs out: tail(scope) is then the result)."""
        lets = []
        for i, st in enumerate(stmts):
            if (doc and i == 0 and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                    and isinstance(st.value.value, str)):
                continue
            rest = stmts[i + 1:]
            if isinstance(st, ast.Return):
                if st.value is None:
                    raise src.error(st, "a jit function returns a value: `return` needs one")
                self.unreachable(src, rest)
                return lets, self.mark(src, st, self.expr(src, st.value, scope))
            if isinstance(st, ast.If) and (_has_return(st.body) or _has_return(st.orelse)):
                # a branch returns: the code after the if continues each
                # branch that does not (it is copied into both)
                if _returns(st.body) and _returns(st.orelse):
                    self.unreachable(src, rest)
                cond = self.cond(src, st.test, scope)
                then = st.body if _returns(st.body) else st.body + rest
                other = st.orelse if _returns(st.orelse) else st.orelse + rest
                return lets, self.mark(src, st, "if %s %s else %s" % (
                    cond, _block_text(*self.block(src, then, _Scope(scope), tail=tail, after=st)),
                    _block_text(*self.block(src, other, _Scope(scope), tail=tail, after=st))))
            if isinstance(st, ast.If):
                lets.append(self.merge_if(src, st, scope))
                continue
            lets.append(self.stmt(src, st, scope))
        if tail is not None:
            return lets, tail(scope)
        if not stmts and after is not None:
            raise src.error(after, "this if statement does not return on every path, and no "
                            "code after it does")
        raise src.error(stmts[-1] if stmts else src.fdef, "the function must end with return")

    def unreachable(self, src, rest):
        for st in rest:
            if not isinstance(st, ast.Pass):
                raise src.error(st, "unreachable code after return")

    def stmt(self, src, st, scope):
        if isinstance(st, ast.Pass):
            return ""
        if isinstance(st, ast.Assign):
            if len(st.targets) != 1:
                raise src.error(st, "chained assignment (a = b = ..) is not in @arrayc.jit's "
                                "subset")
            return self.assign(src, st, st.targets[0], st.value, scope)
        if isinstance(st, ast.AugAssign):
            if not isinstance(st.target, ast.Name):
                raise src.error(st.target, "arrays are immutable: an augmented assignment "
                                "needs a variable")
            value = ast.BinOp(left=ast.Name(id=st.target.id, ctx=ast.Load()), op=st.op,
                              right=st.value)
            ast.copy_location(value, st)
            ast.copy_location(value.left, st.target)
            return self.assign(src, st, st.target, value, scope)
        if isinstance(st, ast.FunctionDef):
            lam = self.def_lambda(src, st, scope)
            b = scope.names[st.name] = _Bind(self.cname(st.name), fn=True)
            return self.mark(src, st, "let %s = %s;" % (b.cname, lam))
        if isinstance(st, (ast.For, ast.While, ast.AsyncFor)):
            raise src.error(st, "loops are not in @arrayc.jit's subset: use arrayc.map, "
                            "arrayc.generate, arrayc.iterate(n, f, x) or arrayc.while_(c, f, x)")
        if isinstance(st, ast.Expr):
            raise src.error(st, "an expression statement has no effect in a jit function "
                            "(arrays are immutable): assign or return its value")
        raise src.error(st, "%s statements are not in @arrayc.jit's subset"
                        % type(st).__name__)

    def assign(self, src, st, target, value, scope):
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Lambda):
                text = self.lam(src, value, scope)
                b = _Bind(self.cname(target.id), fn=True)
            else:
                b = _Bind(self.cname(target.id), kind=self.kind(value, scope))
                text = self.expr(src, value, scope)
            scope.names[target.id] = b
            return self.mark(src, st, "let %s = %s;" % (b.cname, text))
        if isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
            text = self.expr(src, value, scope)
            vk = self.kind(value, scope)
            names = []
            for k, t in enumerate(target.elts):
                sub = vk[1][k] if vk and vk[0] == "tuple" and k < len(vk[1]) else None
                scope.names[t.id] = _Bind(self.cname(t.id), kind=sub)
                names.append(scope.names[t.id].cname)
            return self.mark(src, st, "let (%s) = %s;" % (", ".join(names), text))
        if isinstance(target, ast.Subscript):
            raise src.error(target, "arrays are immutable: use arrayc.scatter (or arrayc.map) "
                            "to make an array with elements changed")
        raise src.error(target, "only names and tuples of names can be assigned in a jit "
                        "function")

    def merge_if(self, src, st, scope):
        """An if statement that assigns: `let (a, b) = if c { ..; (a, b) } else
        { ..; (a, b) };` for the names assigned that are used after it."""
        then, other = _assigned(st.body), _assigned(st.orelse)
        names = [n for n in dict.fromkeys(then + other)
                 if (scope.get(n) is not None and not scope.get(n).fn) or
                 (n in then and n in other)]
        if not names:
            raise src.error(st, "this if statement assigns no variable that exists after it "
                            "(assign the same names in both branches, or return in both)")

        def tail(s):
            return _tuple_text([s.get(n).cname if s.get(n) else n for n in names])

        cond = self.cond(src, st.test, scope)
        a = _block_text(*self.block(src, st.body, _Scope(scope), tail=tail))
        b = _block_text(*self.block(src, st.orelse, _Scope(scope), tail=tail))
        binds = [_Bind(self.cname(n)) for n in names]
        for n, bd in zip(names, binds):
            scope.names[n] = bd
        pat = binds[0].cname if len(binds) == 1 else "(%s)" % ", ".join(b.cname for b in binds)
        return self.mark(src, st, "let %s = if %s %s else %s;" % (pat, cond, a, b))

    # -- what is known of a value (for t[0] on tuples, x.shape, x.ndim) --
    def kind(self, node, scope):
        if isinstance(node, ast.Name):
            b = scope.get(node.id)
            return b.kind if b is not None and not b.fn else None
        if isinstance(node, ast.Tuple):
            return ("tuple", [self.kind(e, scope) for e in node.elts])
        return None

    # -- expressions --
    def cond(self, src, node, scope):
        return self.expr(src, node, scope)

    def expr(self, src, node, scope):
        return self.mark(src, node, self.expr_text(src, node, scope))

    def expr_text(self, src, node, scope):
        e = lambda n: self.expr(src, n, scope)  # noqa: E731
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                raise src.error(node, "a string is not a value in arrayc (only a stencil's "
                                "boundary: 'clamp', 'mirror' or 'wrap')")
            return self.literal(src, node, node.value)
        if isinstance(node, ast.Name):
            return self.name(src, node, scope, as_fn=False)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return "pow(%s, %s)" % (e(node.left), e(node.right))
            if isinstance(node.op, ast.FloorDiv):
                raise src.error(node, "// is not in @arrayc.jit's subset: / is arrayc's division "
                                "(integers: toward zero); write floor(a / b) for floats")
            if type(node.op) not in _BINOPS:
                raise src.error(node, "the operator %s is not in @arrayc.jit's subset"
                                % type(node.op).__name__)
            return "(%s %s %s)" % (e(node.left), _BINOPS[type(node.op)], e(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.UAdd):
                return e(node.operand)
            return "(%s%s)" % (_UNOPS[type(node.op)], e(node.operand))
        if isinstance(node, ast.BoolOp):
            op = " && " if isinstance(node.op, ast.And) else " || "
            return "(%s)" % op.join(e(v) for v in node.values)
        if isinstance(node, ast.Compare):
            parts, left = [], node.left
            for op, right in zip(node.ops, node.comparators):
                if type(op) not in _CMPOPS:
                    raise src.error(node, "`%s` is not in @arrayc.jit's subset (only == != < <= "
                                    "> >=)" % {ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
                                               ast.NotIn: "not in"}.get(type(op), "?"))
                parts.append("(%s %s %s)" % (e(left), _CMPOPS[type(op)], e(right)))
                left = right
            return parts[0] if len(parts) == 1 else "(%s)" % " && ".join(parts)
        if isinstance(node, ast.IfExp):
            return "(if %s { %s } else { %s })" % (e(node.test), e(node.body), e(node.orelse))
        if isinstance(node, ast.Tuple):
            if len(node.elts) == 1:
                raise src.error(node, "arrayc has no tuples of one value")
            return _tuple_text([e(x) for x in node.elts])
        if isinstance(node, ast.List):
            return "[%s]" % ", ".join(e(x) for x in node.elts)
        if isinstance(node, ast.Lambda):
            raise src.error(node, "a lambda is a function, not a value: pass it to an "
                            "operation or assign it to a name")
        if isinstance(node, ast.Call):
            return self.call(src, node, scope)
        if isinstance(node, ast.Subscript):
            return self.subscript(src, node, scope)
        if isinstance(node, ast.Attribute):
            return self.attribute(src, node, scope)
        what = {ast.ListComp: "list comprehensions", ast.GeneratorExp: "generator expressions",
                ast.DictComp: "dict comprehensions", ast.SetComp: "set comprehensions",
                ast.Dict: "dicts", ast.Set: "sets", ast.JoinedStr: "f-strings",
                ast.Starred: "starred expressions", ast.NamedExpr: "assignment expressions",
                ast.Await: "await", ast.Yield: "yield"}.get(type(node), type(node).__name__)
        hint = (": use arrayc.map or arrayc.generate" if isinstance(
            node, (ast.ListComp, ast.GeneratorExp)) else "")
        raise src.error(node, "%s are not in @arrayc.jit's subset%s" % (what, hint))

    def literal(self, src, node, v):
        if isinstance(v, (bool, np.bool_)):
            return "true" if v else "false"
        if isinstance(v, (int, np.integer)):
            suffix = "" if isinstance(v, int) else _NAME_OF_DTYPE[np.dtype(type(v))]
            v = int(v)
            if not -(1 << 63) <= v < (1 << 64):
                raise src.error(node, "the integer %d does not fit in 64 bits" % v)
            return ("(%d%s)" if v < 0 else "%d%s") % (v, suffix)
        if isinstance(v, (float, np.floating)):
            suffix = "" if isinstance(v, float) else _NAME_OF_DTYPE.get(np.dtype(type(v)))
            if suffix is None:
                raise src.error(node, "%s is not a scalar type of arrayc" % type(v).__name__)
            f = float(v)
            if f != f:
                text = "nan"
            elif f in (math.inf, -math.inf):
                text = "inf" if f > 0 else "-inf"
            else:
                text = repr(f)
            if suffix:
                text = "%s(%s)" % (suffix, text) if text.endswith(("inf", "nan")) else \
                    text + suffix
            return "(%s)" % text if text.startswith("-") else text
        raise src.error(node, "%s is not a value @arrayc.jit can use" % type(v).__name__)

    def resolve(self, src, node, scope):
        """(True, object) for a name or attribute chain that names a Python
        object from outside the function (a module, an operation, a jit
        function, a constant), else (False, None)."""
        if isinstance(node, ast.Name):
            if scope.get(node.id) is not None:
                return False, None
            return src.lookup(node.id)
        if isinstance(node, ast.Attribute):
            ok, base = self.resolve(src, node.value, scope)
            if ok:
                if not hasattr(base, node.attr):
                    raise src.error(node, "%s has no attribute %r" % (
                        getattr(base, "__name__", type(base).__name__), node.attr))
                return True, getattr(base, node.attr)
        return False, None

    def outside(self, src, node, obj, as_fn):
        """The text of an object from outside the function."""
        if isinstance(obj, JitFunction):
            return self.callee(src, node, obj)
        if isinstance(obj, (bool, int, float, np.generic)):
            return self.literal(src, node, obj)
        fname = _FUNCS.get(obj) if _hashable(obj) else None
        if as_fn and fname is not None:
            if isinstance(obj, _ops.Operation) and obj.name in _ops.ARRAY_OPS:
                raise src.error(node, "'%s' is an array operation, not a function of scalars: "
                                "pass a lambda that applies it" % obj.name)
            return fname
        what = ("a function: call it, or pass it to an operation" if fname is not None or
                callable(obj) else "a %s, which a jit function cannot use (pass arrays as "
                "arguments)" % type(obj).__name__)
        raise src.error(node, "%s is %s" % (_dotted(node), what))

    def name(self, src, node, scope, as_fn):
        b = scope.get(node.id)
        if b is not None:
            if b.fn and not as_fn:
                raise src.error(node, "'%s' is a local function, not a value: call it, or pass "
                                "it to an operation" % node.id)
            return b.cname
        ok, obj = src.lookup(node.id)
        if not ok:
            raise src.error(node, "name '%s' is not defined" % node.id)
        return self.outside(src, node, obj, as_fn)

    def arg(self, src, node, scope):
        """An argument of a call: a value, or a function (lambda, local
        function, jit function, operator or math function named alone)."""
        if isinstance(node, ast.Lambda):
            return self.lam(src, node, scope)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value not in ("clamp", "mirror", "wrap"):
                raise src.error(node, "a string is not a value in arrayc (only a stencil's "
                                "boundary: 'clamp', 'mirror' or 'wrap')")
            return node.value
        if isinstance(node, ast.Name):
            return self.mark(src, node, self.name(src, node, scope, as_fn=True))
        ok, obj = self.resolve(src, node, scope)
        if ok:
            return self.mark(src, node, self.outside(src, node, obj, as_fn=True))
        return self.expr(src, node, scope)

    def lam(self, src, node, scope, window=False):
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or getattr(a, "posonlyargs", []):
            raise src.error(node, "a lambda in a jit function takes plain parameters")
        inner = _Scope(scope)
        names = self.bind(a.args, inner, kind=("window",) if window else None)
        return self.mark(src, node, "|%s| %s" % (", ".join(names),
                                                 self.expr(src, node.body, inner)))

    def call(self, src, node, scope):
        if node.keywords:
            raise src.error(node.keywords[0].value, "keyword arguments are not in @arrayc.jit's "
                            "subset")
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise src.error(a, "*args in a call are not in @arrayc.jit's subset")
        f, args = node.func, node.args
        if isinstance(f, ast.Name) and scope.get(f.id) is not None:
            b = scope.get(f.id)
            if not b.fn:
                raise src.error(f, "'%s' is a value, not a function" % f.id)
            return "%s(%s)" % (b.cname, ", ".join(self.arg(src, a, scope) for a in args))
        ok, obj = self.resolve(src, f, scope)
        if not ok:
            raise src.error(f, "only operations, math functions, conversions and functions "
                            "(local or @arrayc.jit) can be called in a jit function")
        if isinstance(obj, JitFunction):
            return "%s(%s)" % (self.callee(src, f, obj),
                               ", ".join(self.arg(src, a, scope) for a in args))
        if obj is builtins.range:
            return self.range(src, node, scope)
        minmax = obj is builtins.min or obj is builtins.max
        if minmax and len(args) == 1:
            return "%s(%s)" % ("minimum" if obj is builtins.min else "maximum",
                               self.expr(src, args[0], scope))
        if minmax and len(args) > 2:
            name = "min" if obj is builtins.min else "max"
            text = self.expr(src, args[0], scope)
            for a in args[1:]:
                text = "%s(%s, %s)" % (name, text, self.expr(src, a, scope))
            return text
        if obj is math.log and len(args) == 2:
            return "(log(%s) / log(%s))" % (self.expr(src, args[0], scope),
                                            self.expr(src, args[1], scope))
        name = _BUILTIN_OPS.get(obj) if _hashable(obj) else None
        if name is None:
            name = _FUNCS.get(obj) if _hashable(obj) else None
        if name is None or not name[0].isalpha():
            raise src.error(f, "%s is not something @arrayc.jit can call (operations, math "
                            "functions, conversions, jit functions; docs/python.md §7)"
                            % _dotted(f))
        if name == "stencil" and args and isinstance(args[0], ast.Lambda):
            return "stencil(%s)" % ", ".join(
                [self.lam(src, args[0], scope, window=True)] +
                [self.arg(src, a, scope) for a in args[1:]])
        return "%s(%s)" % (name, ", ".join(self.arg(src, a, scope) for a in args))

    def range(self, src, node, scope):
        args = node.args
        if len(args) == 1:
            return "iota(%s)" % self.expr(src, args[0], scope)
        if len(args) == 2:
            k = self.fresh("k")
            lo, hi = self.expr(src, args[0], scope), self.expr(src, args[1], scope)
            return "generate(max(%s - %s, 0), |%s| %s + %s)" % (hi, lo, k, k, lo)
        raise src.error(node, "range takes one or two arguments in a jit function")

    def subscript(self, src, node, scope):
        sl = node.slice
        if isinstance(sl, ast.Index):  # Python < 3.9
            sl = sl.value
        k = self.kind(node.value, scope)
        if (isinstance(node.value, ast.Attribute) and node.value.attr == "shape" and
                isinstance(sl, ast.Constant) and type(sl.value) is int):
            return self.shape_dim(src, node.value, sl.value, scope)
        base = self.expr(src, node.value, scope)
        if k and k[0] == "tuple":
            if not (isinstance(sl, ast.Constant) and type(sl.value) is int):
                raise src.error(sl, "a tuple's field is chosen by an integer constant")
            if not 0 <= sl.value < len(k[1]):
                raise src.error(sl, "the tuple has %d fields; [%d] is out of range"
                                % (len(k[1]), sl.value))
            return "%s.%d" % (base, sl.value)
        idx = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if (all(isinstance(i, ast.Slice) for i in idx) and k and k[0] == "array" and
                k[1] > len(idx)):
            # x[a:b] of a rank-r array slices the outer dimensions, as NumPy's
            idx += [ast.Slice(lower=None, upper=None, step=None)] * (k[1] - len(idx))
        if any(isinstance(i, ast.Slice) for i in idx):
            return self.slicing(src, node, base, idx, scope)
        window = k == ("window",)
        out = []
        for d, i in enumerate(idx):
            neg = _negative_constant(i)
            if neg is not None and window:
                out.append("%d" % neg)  # a window's offset: a literal, not an expression
            elif neg is not None:
                # Python's negative index counts from the end
                ext = "len(%s)" % base if len(idx) == 1 else "shape(%s).%d" % (base, d)
                out.append("%s - %d" % (ext, -neg))
            else:
                out.append(self.expr(src, i, scope))
        return "%s[%s]" % (base, ", ".join(out))

    def slicing(self, src, node, base, idx, scope):
        if not all(isinstance(i, ast.Slice) for i in idx):
            raise src.error(node, "mixing indices and slices is not in @arrayc.jit's subset")
        lo, hi, st = [], [], []
        for d, s in enumerate(idx):
            ext = "len(%s)" % base if len(idx) == 1 else "shape(%s).%d" % (base, d)
            lo.append(self.bound(src, s.lower, ext, scope) if s.lower else "0")
            hi.append(self.bound(src, s.upper, ext, scope) if s.upper else ext)
            st.append(self.expr(src, s.step, scope) if s.step else None)
        args = [base, _tuple_text(lo), _tuple_text(hi)]
        if any(st):
            args.append(_tuple_text([s or "1" for s in st]))
        return "slice(%s)" % ", ".join(args)

    def bound(self, src, node, ext, scope):
        """A slice's bound: a negative constant counts from the end."""
        neg = _negative_constant(node)
        return "%s - %d" % (ext, -neg) if neg is not None else self.expr(src, node, scope)

    def shape_dim(self, src, node, d, scope):
        k = self.kind(node.value, scope)
        base = self.expr(src, node.value, scope)
        if d == 0:
            return "len(%s)" % base
        if k and k[0] == "array" and d >= k[1]:
            raise src.error(node, "the array has %d dimension%s; shape[%d] is out of range"
                            % (k[1], "" if k[1] == 1 else "s", d))
        return "shape(%s).%d" % (base, d)

    def attribute(self, src, node, scope):
        ok, obj = self.resolve(src, node, scope)
        if ok:
            return self.outside(src, node, obj, as_fn=False)
        base = self.expr(src, node.value, scope)
        k = self.kind(node.value, scope)
        if node.attr == "shape":
            return "shape(%s)" % base
        if node.attr == "T":
            return "transpose(%s)" % base
        if node.attr == "ndim" and k and k[0] == "array":
            return "%d" % k[1]
        if node.attr == "size" and k and k[0] == "array":
            if k[1] == 1:
                return "len(%s)" % base
            return "(%s)" % " * ".join("shape(%s).%d" % (base, d) for d in range(k[1]))
        raise src.error(node, ".%s is not in @arrayc.jit's subset (arrays have .shape, .T, "
                        "and for parameters .ndim and .size)" % node.attr)


# ---- helpers ---------------------------------------------------------------------------------------
def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return "%s.%s" % (_dotted(node.value), node.attr)
    return "this"


def _negative_constant(node):
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and
            isinstance(node.operand, ast.Constant) and type(node.operand.value) is int):
        return -node.operand.value
    return None


def _tuple_text(items):
    return items[0] if len(items) == 1 else "(%s)" % ", ".join(items)


def _block_text(lets, result):
    lets = [x for x in lets if x]
    if not lets:
        return "{ %s }" % result
    inner = "\n".join("  " + x.replace("\n", "\n  ") for x in lets + [result])
    return "{\n%s\n}" % inner


def _returns(stmts):
    """Whether a list of statements ends with return on every path."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _returns(last.body) and _returns(last.orelse)


def _has_return(stmts):
    """Whether a return statement is among stmts (not in nested functions)."""
    todo = list(stmts)
    while todo:
        st = todo.pop()
        if isinstance(st, ast.Return):
            return True
        if isinstance(st, ast.If):
            todo += st.body + st.orelse
    return False


def _assigned(stmts):
    out = []
    for st in stmts:
        targets = (st.targets if isinstance(st, ast.Assign) else
                   [st.target] if isinstance(st, ast.AugAssign) else [])
        for t in targets:
            out += [t.id] if isinstance(t, ast.Name) else [
                e.id for e in getattr(t, "elts", []) if isinstance(e, ast.Name)]
        if isinstance(st, ast.If):
            out += _assigned(st.body) + _assigned(st.orelse)
    return out


def _strip_markers(marked):
    """The text without markers, and for each marker id its span
    ((line, col), (line, col)) in the text, from 1, end exclusive."""
    out, where, stack = [], {}, []
    line, col, i, n = 1, 1, 0, len(marked)
    while i < n:
        ch = marked[i]
        if ch == "\x01":
            j = marked.index("\x02", i)
            stack.append((int(marked[i + 1:j]), (line, col)))
            i = j + 1
            continue
        if ch == "\x03":
            k, start = stack.pop()
            where[k] = (start, (line, col))
        else:
            out.append(ch)
            if ch == "\n":
                line, col = line + 1, 1
            else:
                col += 1
        i += 1
    return "".join(out), where


# ---- the decorator ----------------------------------------------------------------------------------
class _Spec:
    """One compiled specialisation: the function and how to map its positions."""

    def __init__(self, tr, fn, module):
        self.tr, self.fn, self.module = tr, fn, module

    def remap(self, e):
        """e (an arrayc.Error at a position of the translation) at the Python
        node that made that text."""
        return _remap(self.tr, e)


def _remap(tr, e):
    if not e.line:
        return e
    best = None  # the innermost span holding the position: latest start, then earliest end
    for k, (start, end) in tr.where.items():
        if start <= (e.line, e.column) < end or start == (e.line, e.column):
            if best is None or (start, _neg(end)) > (tr.where[best][0], _neg(tr.where[best][1])):
                best = k
    if best is None:
        return e
    src, node = tr.spans[best]
    line, col = src.position(node)
    gen = tr.text.split("\n")[e.line - 1] if 0 < e.line <= tr.text.count("\n") + 1 else ""
    text = (_caret_text(src.path, line, col, e.message, src.line_text(line)) +
            "in the arrayc translation (%s.source(...)):\n%s\n%s^\n" % (
                tr.root.__name__, gen, " " * (e.column - 1)))
    return type(e)(e.status, e.message, text, src.path, line, col)


def _neg(pos):
    return (-pos[0], -pos[1])


class JitFunction:
    """A function compiled by arrayc from its Python source (@arrayc.jit).
    Calling it specialises it for the arguments' signature (once per
    signature and backend) and runs it; see docs/python.md §7."""

    def __init__(self, py, backend="auto", resident=None):
        functools.update_wrapper(self, py)
        self.py, self.backend, self.resident = py, backend, resident
        self._src = None
        self._specs = {}
        self._lock = threading.Lock()

    def _source(self):
        if self._src is None:
            self._src = _Source(self.py)
        return self._src

    def __call__(self, *args):
        try:
            key = tuple([_sig(a) for a in args])
        except (TypeError, KeyError):
            raise self._bad_argument(args) from None
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specialise(key)
        try:
            return spec.fn(*args)
        except _core.RuntimeError as e:
            raise spec.remap(e) from None
        except TypeError:
            # an array that is not C-contiguous (or not aligned) is copied
            if not any(type(a) is np.ndarray and not (a.flags.c_contiguous and a.flags.aligned)
                       for a in args):
                raise
            try:
                return spec.fn(*args, cast=True)
            except _core.RuntimeError as e:
                raise spec.remap(e) from None

    def _bad_argument(self, args):
        names = [a.arg for a in self._source().fdef.args.args]
        for k, a in enumerate(args):
            try:
                _sig(a)
            except (TypeError, KeyError) as e:
                what = ("dtype %s, which arrayc does not have" % a.dtype
                        if isinstance(e, KeyError) else str(e))
                return TypeError("argument %d (%s) of %s(): %s" % (
                    k + 1, names[k] if k < len(names) else "?", self.__name__, what))
        return TypeError("bad arguments to %s()" % self.__name__)

    def _specialise(self, key):
        with self._lock:
            spec = self._specs.get(key)
            if spec is not None:
                return spec
            tr = self._translate(key)
            filename = "<@arrayc.jit %s>" % self.__name__
            try:
                module = _core.compile(tr.text, backend=self.backend, filename=filename,
                                       resident=self.resident)
                fn = getattr(module, tr.name)
            except _core.Error as e:
                raise _remap(tr, e) from None
            spec = self._specs[key] = _Spec(tr, fn, module)
            return spec

    def _translate(self, key):
        try:
            return _Translation(self, key)
        except _Unsupported as u:  # pragma: no cover (errors are raised as CompileError)
            raise self._source().error(u.node, u.message) from None

    def source(self, *args):
        """The arrayc text this function becomes for these arguments."""
        try:
            key = tuple([_sig(a) for a in args])
        except (TypeError, KeyError):
            raise self._bad_argument(args) from None
        return self._translate(key).text

    @property
    def signatures(self):
        """The parameter types of each specialisation compiled so far."""
        return [tuple(_type_text(s) for s in key) for key in self._specs]

    def __repr__(self):
        return "<arrayc.jit function %s>" % self.__qualname__


def jit(fn=None, *, backend="auto", resident=None):
    """@arrayc.jit, or @arrayc.jit(backend="cpu", resident=None): compiles a
    function written in arrayc's Python subset (docs/python.md §7)."""
    if fn is None:
        return lambda f: jit(f, backend=backend, resident=resident)
    if isinstance(fn, JitFunction):  # another backend for the same function
        fn = fn.py
    if not callable(fn):
        raise TypeError("@arrayc.jit decorates a function")
    return JitFunction(fn, backend=backend, resident=resident)
