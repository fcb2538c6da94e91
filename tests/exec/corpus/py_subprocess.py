# subprocess chains: pipes between children, a nested python, a shell pipeline, os.fork
import os
import subprocess
import sys

sort = subprocess.Popen(["sort", "-n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out, _ = sort.communicate("".join(f"{(i * 7919) % 5003}\n" for i in range(5000)).encode())
print(len(out), out[:20].split())
print(subprocess.run(["sh", "-c", "seq 1 3000 | tr 1 x | grep -c x"], capture_output=True, text=True).stdout.strip())
nested = subprocess.check_output([sys.executable, "-c", "import hashlib; print(hashlib.sha1(b'x' * 10**6).hexdigest())"])
print(nested.decode().strip())
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, str(sum(range(10**6))).encode())
    os._exit(3)
os.close(w)
data = os.read(r, 100)
_, st = os.waitpid(pid, 0)
print(data.decode(), os.waitstatus_to_exitcode(st))
