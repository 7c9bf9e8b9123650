"""manifest_odd.py ARRAYC SRC.ac DIR: copies SRC to a file whose name holds
a quote, a backslash, a tab and a byte that is not UTF-8, compiles it with
--emit=manifest and prints what the manifest says the source is (the JSON
must load as strict UTF-8)."""
import json
import os
import shutil
import subprocess
import sys

arrayc, src, d = sys.argv[1], sys.argv[2], sys.argv[3]
odd = os.path.join(os.fsencode(d), b'q"b\\s\tx\xff.ac')
shutil.copyfile(src, odd)
subprocess.check_call([arrayc, odd, b"--emit=manifest", b"-o", os.path.join(os.fsencode(d), b"odd")])
raw = open(os.path.join(d, "odd.json"), "rb").read()
m = json.loads(raw.decode("utf-8"))
print("source %s" % ascii(os.path.basename(m["source"])))
