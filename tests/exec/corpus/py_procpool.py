# a 48 MiB parent buffer written between a Pool, a ProcessPoolExecutor and subprocess.run
import concurrent.futures
import hashlib
import multiprocessing
import subprocess


def work(i):
    b = bytearray(2 << 20)
    for j in range(0, len(b), 4096):
        b[j] = (i * 7 + j) & 255
    return hashlib.sha256(b).hexdigest()[:16]


if __name__ == "__main__":
    big = bytearray(48 << 20)
    out = []
    for k in range(2):
        for j in range(0, len(big), 4096):
            big[j] = (j + k) & 255
        with multiprocessing.Pool(3) as p:
            out += p.map(work, range(10 * k, 10 * k + 8))
        with concurrent.futures.ProcessPoolExecutor(2) as ex:
            out += list(ex.map(work, range(4)))
        out.append(subprocess.run(["sh", "-c", "echo hi; seq 1 300 | wc -l"], capture_output=True, text=True).stdout)
    out.append(hashlib.sha256(big).hexdigest())
    print(hashlib.sha256("".join(out).encode()).hexdigest())
