#!/bin/sh
# test/lit_other.sh PYTHON LIT EXCLUDE DIR: runs the lit tests of DIR whose
# names ("arrayc :: e2e/x.ac") match neither the regular expression EXCLUDE
# nor $LIT_FILTER_OUT (which lit's own --filter-out would replace): ctest's
# lit.other, the tests no group of test/CMakeLists.txt names.
py=$1
lit=$2
exclude=$3
dir=$4
exec "$py" "$lit" -sv --allow-empty-runs --filter-out "$exclude${LIT_FILTER_OUT:+|$LIT_FILTER_OUT}" "$dir"
