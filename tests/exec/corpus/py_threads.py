# ThreadPoolExecutor: 8 threads read shared buffers, write their own copies, and add to a locked total
import concurrent.futures
import hashlib
import threading

bufs = [bytes((i * 31 + j) & 255 for j in range(4096)) * 256 for i in range(24)]
lock = threading.Lock()
total = 0


def work(i):
    global total
    b = bytearray(bufs[i % len(bufs)])
    for j in range(0, len(b), 512):
        b[j] = (b[j] + i + j) & 255
    with lock:
        total += sum(b[::4096])
    return hashlib.md5(b).hexdigest()


with concurrent.futures.ThreadPoolExecutor(8) as ex:
    r = list(ex.map(work, range(96)))
print(hashlib.sha256("".join(r).encode()).hexdigest(), total)
