"""peak_rss.py LIMIT_MB COMMAND...: runs COMMAND, copies its standard output
and error, then prints 'peak rss: under LIMIT_MB MB' or 'peak rss: N MB, over
LIMIT_MB MB' (the child's largest resident set, from getrusage), and exits
with the command's status."""
import resource
import subprocess
import sys

limit = int(sys.argv[1])
r = subprocess.run(sys.argv[2:], capture_output=True, text=True)
sys.stdout.write(r.stdout)
sys.stderr.write(r.stderr)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024  # KiB on Linux
if peak < limit:
    print("peak rss: under %d MB" % limit)
else:
    print("peak rss: %d MB, over %d MB" % (peak, limit))
sys.exit(r.returncode)
