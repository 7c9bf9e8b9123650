"""arrayc's operations as names of the package, for @arrayc.jit functions:
`arrayc.map(lambda x: x + 1, xs)` inside a jit function is the language's
`map(|x| x + 1, xs)`. They are translated, never run by Python: called
outside a jit function, each raises TypeError. docs/python.md §7 lists them.
"""


class Operation:
    """An operation of the language (`name`: how the language spells it),
    usable only inside an @arrayc.jit function."""

    def __init__(self, name, pyname, kind):
        self.name = name
        self.__name__ = self.__qualname__ = pyname
        self.__doc__ = "arrayc's %s %s (docs/language.md): usable inside @arrayc.jit functions" % (
            name, kind)

    def __call__(self, *args, **kwargs):
        raise TypeError("arrayc.%s is an operation of the arrayc language: it can only be used "
                        "inside an @arrayc.jit function, which translates it" % self.__name__)

    def __repr__(self):
        return "<arrayc operation %s>" % self.name


# language name -> the package's name (the language's `while` is `while_`:
# `while` is a Python keyword)
ARRAY_OPS = ("len", "shape", "generate", "iota", "fill", "map", "fold", "fold_seg", "scan",
             "scan_incl", "scanr", "scanr_incl", "scan_seg", "scan_incl_seg", "gather",
             "backpermute", "scatter", "permute", "slice", "reshape", "transpose", "reverse",
             "replicate", "stencil", "filter", "iterate", "while", "delay", "sum", "product",
             "maximum", "minimum", "zip", "unzip")
MATH = ("abs", "min", "max", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2",
        "log10", "log1p", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
        "cosh", "tanh", "floor", "ceil", "round", "trunc", "fma", "erf", "erfc", "hypot",
        "copysign", "isnan", "isinf", "isfinite", "log_add", "log_sub")
CONVERSIONS = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64")

OPERATIONS = {}
for _name in ARRAY_OPS + MATH + CONVERSIONS:
    _py = "while_" if _name == "while" else _name
    OPERATIONS[_py] = Operation(_name, _py, "operation" if _name in ARRAY_OPS else
                                "math function" if _name in MATH else "conversion")
del _name, _py
