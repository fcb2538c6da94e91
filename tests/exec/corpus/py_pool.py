# multiprocessing.Pool: 4 forked workers map 40 tasks that fill and hash 4 MiB each
import hashlib
import multiprocessing


def work(i):
    b = bytearray(4 << 20)
    for j in range(0, len(b), 4096):
        b[j] = (i + j) & 255
    return hashlib.sha256(b).hexdigest()[:16]


if __name__ == "__main__":
    with multiprocessing.Pool(4) as p:
        r = p.map(work, range(40))
    print(len(r), hashlib.sha256("".join(r).encode()).hexdigest())
