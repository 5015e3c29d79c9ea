"""The copy engines' NVLink rate as a two-GPU all-reduce would load them: one
process per GPU, each copying on its own GPU's stream, one way or both ways at
once, pushed (local to peer) or pulled (peer to local), whole messages; and
pinned host memory over PCIe beside the NVLink push.
Host-timed batches (both devices synchronized), median of rounds; GB/s per
direction. A probe for issue 13, not a benchmark of redjit.
    python3 scripts/probe_ce.py [MiB ...]"""
import sys
import time

import torch
import torch.multiprocessing as mp


def worker(rank, sizes, barrier, queue):
    peer = 1 - rank
    torch.cuda.set_device(rank)
    big = max(sizes) << 20
    local = torch.empty(big, dtype=torch.uint8, device=rank)
    local2 = torch.empty(big, dtype=torch.uint8, device=rank)
    remote = torch.empty(big, dtype=torch.uint8, device=peer)
    local.random_(0, 255)
    stream = torch.cuda.Stream(device=rank)

    def run(mib, how, both):
        n = mib << 20
        active = both or rank == 0
        times = []
        for _ in range(6):
            torch.cuda.synchronize(rank)
            torch.cuda.synchronize(peer)
            barrier.wait()
            t0 = time.perf_counter()
            if active:
                with torch.cuda.stream(stream):
                    for _ in range(10):
                        if how == "push":
                            remote[:n].copy_(local[:n], non_blocking=True)
                        elif how == "pull":
                            local2[:n].copy_(remote[:n], non_blocking=True)
                        else:
                            local2[:n].copy_(local[:n], non_blocking=True)
                torch.cuda.synchronize(rank)
                torch.cuda.synchronize(peer)
            times.append(time.perf_counter() - t0)
            barrier.wait()
        t = sorted(times[1:])[len(times[1:]) // 2]
        return n * 10 / t / 1e9

    out = []
    # Host paths: pinned host memory over PCIe, alone and beside the NVLink push.
    for mib in sizes:
        n = mib << 20
        h = n // 8
        host_up = torch.empty(h, dtype=torch.uint8, pin_memory=True)
        host_dn = torch.empty(h, dtype=torch.uint8, pin_memory=True)
        s2, s3 = torch.cuda.Stream(device=rank), torch.cuda.Stream(device=rank)
        for what in ("nvlink", "d2h", "h2d", "d2h+h2d", "nvlink+d2h+h2d"):
            times = []
            for _ in range(6):
                torch.cuda.synchronize(rank)
                barrier.wait()
                t0 = time.perf_counter()
                for _ in range(10):
                    if "nvlink" in what:
                        with torch.cuda.stream(stream):
                            remote[:n].copy_(local[:n], non_blocking=True)
                    if "d2h" in what:
                        with torch.cuda.stream(s2):
                            host_up.copy_(local[:h], non_blocking=True)
                    if "h2d" in what:
                        with torch.cuda.stream(s3):
                            local2[:h].copy_(host_dn, non_blocking=True)
                torch.cuda.synchronize(rank)
                torch.cuda.synchronize(peer)
                times.append(time.perf_counter() - t0)
                barrier.wait()
            t = sorted(times[1:])[len(times[1:]) // 2]
            out.append(("host", mib, what, True, t / 10 * 1e6))
    for mib in sizes:
        # Whole copies only: chunks issued through copy_ are host-bound.
        for how in ("push", "pull", "local"):
            for both in (False, True):
                if how == "local" and not both:
                    continue
                out.append(("ce", mib, how, both, run(mib, how, both)))
    queue.put((rank, out))


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [64, 256]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, sizes, barrier, queue)) for r in range(2)]
    for p in procs:
        p.start()
    res = dict(queue.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    for (kind, mib, how, both, g0), (*_, g1) in zip(res[0], res[1]):
        if kind == "host":
            print(f"host {how:15s} {mib:4d} MiB (PCIe copies of 1/8 of it), both ranks: {g0:.1f} / {g1:.1f} us an iteration")
            continue
        who = "both ways" if both else "one way (rank 0)"
        tail = f", rank 1 {g1:.1f}" if both else ""
        print(f"ce {how:5s} {mib:4d} MiB whole             {who:16s}: rank 0 {g0:.1f} GB/s{tail}")


if __name__ == "__main__":
    main()
