"""How fast the copy engines move an all-reduce's traffic when every GPU talks
to every other at once. A reduce-scatter + all-gather all-reduce of S bytes on
N GPUs is two all-to-all phases, in each of which every GPU sends a chunk of
S/N to each of its N-1 peers while receiving as much; the time of one such
all-to-all, doubled, is the link-bound floor that no all-reduce kernel of that
shape can beat on this machine. One process per GPU; each copies with
tensor.copy_(non_blocking=True) on one stream per peer, all peers together:
pushed (local to a buffer on the peer), pulled (peer buffer to local), and
rank 0 pushing alone (the unloaded rate). Host-timed batches of 10 copies per
peer, all devices synchronized before and after, median of rounds 2..6.
GB/s are 1e9 bytes a second. A probe, not a benchmark of redjit; at small
sizes the copy_ launches themselves may bound it.
    python3 scripts/probe_a2a.py [MiB ...]        (default 16 64 256)"""
import sys
import time

import torch
import torch.multiprocessing as mp

ROUNDS, BATCH = 6, 10


def worker(rank, n_gpu, sizes, barrier):
    torch.cuda.set_device(rank)
    peers = [j for j in range(n_gpu) if j != rank]
    big = (max(sizes) << 20) // n_gpu  # largest chunk
    # Each peer's chunk has its own slice of the local source, as in a reduce-scatter.
    src = torch.empty(big * n_gpu, dtype=torch.uint8, device=rank).random_(0, 255)
    dst = torch.empty(big * n_gpu, dtype=torch.uint8, device=rank)
    # Buffers on the peers: an inbox for the push, a source for the pull.
    inbox = {j: torch.empty(big, dtype=torch.uint8, device=j) for j in peers}
    outbox = {j: torch.empty(big, dtype=torch.uint8, device=j).random_(0, 255) for j in peers}
    streams = {j: torch.cuda.Stream(device=rank) for j in peers}

    def sync_all():
        for d in range(n_gpu):
            torch.cuda.synchronize(d)

    if rank == 0:
        access = ", ".join(f"0->{j}: {torch.cuda.can_device_access_peer(0, j)}"
                           for j in range(1, n_gpu))
        print(f"{n_gpu} GPUs ({torch.cuda.get_device_name(0)}); peer access {access}", flush=True)
    sync_all()

    def timed(chunk, how):
        active = how != "one-way" or rank == 0
        times = []
        for _ in range(ROUNDS):
            sync_all()
            barrier.wait()
            t0 = time.perf_counter()
            if active:
                for _ in range(BATCH):
                    for j in peers:  # interleave the peers so all streams start together
                        lo = j * big
                        with torch.cuda.stream(streams[j]):
                            if how == "pull":
                                dst[lo:lo + chunk].copy_(outbox[j][:chunk], non_blocking=True)
                            else:
                                inbox[j][:chunk].copy_(src[lo:lo + chunk], non_blocking=True)
            sync_all()
            times.append(time.perf_counter() - t0)
            barrier.wait()
        return sorted(times[1:])[len(times[1:]) // 2]

    for mib in sizes:
        total = mib << 20
        chunk = total // n_gpu
        for how in ("a2a push", "a2a pull", "one-way"):
            t = timed(chunk, how.split()[-1])
            if rank != 0:
                continue
            moved = (n_gpu - 1) * chunk * BATCH
            gbs = moved / t / 1e9
            us = t / BATCH * 1e6
            dirn = "in" if how == "a2a pull" else "out"
            who = "rank 0 alone" if how == "one-way" else "per GPU"
            line = (f"{how:8s} {mib:4d} MiB (chunks of {chunk / 2**20:.2f} MiB): "
                    f"{us:8.1f} us a batch element, {gbs:6.1f} GB/s {dirn} {who}")
            if how == "a2a push":
                floor_s = 2 * t / BATCH
                busbw = total * 2 * (n_gpu - 1) / n_gpu / floor_s / 1e9
                line += f" (all-reduce floor {floor_s * 1e6:.1f} us, busbw {busbw:.1f} GB/s)"
            print(line, flush=True)


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [16, 64, 256]
    n_gpu = torch.cuda.device_count()
    if n_gpu < 2:
        sys.exit(f"probe_a2a needs at least 2 GPUs; torch.cuda.device_count() is {n_gpu}")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n_gpu, timeout=600)  # a dead rank breaks it, not hangs it
    procs = [ctx.Process(target=worker, args=(r, n_gpu, sizes, barrier)) for r in range(n_gpu)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    bad = [r for r, p in enumerate(procs) if p.exitcode != 0]
    if bad:
        sys.exit(f"ranks {bad} failed")


if __name__ == "__main__":
    main()
