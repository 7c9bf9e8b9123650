# test/docs/check_snippets.py's wrapper for a whole CMakeLists.txt in a
# document (examples/aot/README.md's project): nothing is added.
# @SNIPPET@
