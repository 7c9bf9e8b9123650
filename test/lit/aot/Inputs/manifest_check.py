"""manifest_check.py FILE.json: loads an arrayc manifest strictly (UTF-8,
standard JSON, no duplicate keys) and prints one line per fact a binding
generator would use, so tests check the structure, not the layout."""
import json
import sys


def no_dups(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), "duplicate key in %r" % keys
    return dict(pairs)


raw = open(sys.argv[1], "rb").read()
m = json.loads(raw.decode("utf-8"), object_pairs_hook=no_dups)
print("target %s code %s (%s) header %s prefix %s" %
      (m["target"], m["code_file"], m["code_kind"], m["header"], m["prefix"]))
print("source %r" % m["source"])
for f in m["functions"]:
    print("fn %s -> %s" % (f["name"], f["result_type"]))
    for p in f["params"]:
        leaves = " ".join("%d:%s:%s:%d" % (l["index"], l["path"], l["elem"], l["rank"])
                          for l in p["leaves"])
        print("  param %s: %s [%s]" % (p["name"], p["type"], leaves))
    for r in f["results"]:
        print("  result %d %r %s rank %d" % (r["index"], r["path"], r["elem"], r["rank"]))
