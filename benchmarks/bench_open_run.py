"""Opening saved logs: ``open_run`` against TensorBoard's Rust loader on the same file, and ``overlay_runs`` of 100 runs.

A log like a long run's: ``--sites`` sites (30) with a histogram and its
statistics every 50th of ``--steps`` steps (50,000), and the loss every
step, written by ``watch(log_dir=...)``'s writer: about 42 MB. Each round
opens it in a new process both ways, in turn:

- ``open_run``: from the call to the view ready (every record read and
  checksummed, every row made), and the process's peak resident memory
  beyond what it held before the call;
- TensorBoard's data server (``tensorboard_data_server``, the Rust loader
  TensorBoard uses by default), with its default settings: from starting
  it to its serving the last step of the loss and of a histogram, asked
  for every 20 ms over gRPC.

Target: ``open_run`` at most 2x the Rust loader, and its memory bounded by
what the view keeps, not by the file's size: one more round opens a log
``--long-factor`` (4) times longer, whose view keeps as many rows, and
prints its peak memory beside the first's.

Then ``overlay_runs`` of 100 small runs (3 sites, a histogram every 10th of
200 steps, the loss every step), displayed: from the call to the view and
its saved HTML made, in a new process. Targets: under 2 s, and under 1 MB
of HTML.

Run with ``python benchmarks/bench_open_run.py [--rounds 3] [--part open|overlay]``.
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from jaxcapture_nb.runs.series import SiteSeries
from jaxcapture_nb.runs.tensorboard.writer import LogWriter

EVERY = 50


def write_log(folder: pathlib.Path, sites: int, steps: int, every: int = EVERY) -> None:
    """A run's log as ``watch(every=every, log_dir=folder)`` writes it, from made-up rows."""
    rng = np.random.default_rng(0)
    writer = LogWriter(folder)
    series = [SiteSeries(f"blocks.{i}.residual", "Intermediate", 64, 1) for i in range(sites)]
    loss = SiteSeries("loss", "scalar", 1, 1)
    columns = series[0].columns
    for step in range(steps):
        if step % every == 0:
            for s in series:
                values = rng.normal(size=4)
                stats = np.zeros(len(columns), np.float32)
                stats[[columns.index(k) for k in ("mean", "std", "min", "max")]] = values
                stats[[columns.index("lo"), columns.index("hi")]] = (-3.0, 3.0)
                writer.add_rows([s], step, stats[None], rng.integers(0, 1000, (1, 64)).astype(np.int32))
        stats = np.zeros(len(loss.columns), np.float32)
        stats[loss.columns.index("mean")] = 1.0 / (step + 1)
        writer.add_rows([loss], step, stats[None], np.zeros((1, 1), np.int32))
    writer.close()


OPEN_RUN = """
import resource, sys, time
from jaxcapture_nb import open_run
from jaxcapture_nb.runs.tensorboard.writer import require
require("tensorboard")
import tensorboard.compat.proto.event_pb2
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
view = open_run(sys.argv[1])
seconds = time.perf_counter() - start
assert view.stream.scalars["loss"].calls == int(sys.argv[2])
print(seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def time_open_run(folder: pathlib.Path, steps: int) -> tuple[float, float]:
    """Seconds ``open_run`` takes in a new process, and the MiB its peak memory grew by."""
    done = subprocess.run(
        [sys.executable, "-c", OPEN_RUN, str(folder), str(steps)], capture_output=True, text=True, check=True
    )
    seconds, mib = done.stdout.split()
    return float(seconds), float(mib)


def time_rust_loader(folder: pathlib.Path, steps: int) -> float:
    """Seconds from starting TensorBoard's data server to its serving the last steps of the log."""
    import grpc
    import tensorboard_data_server
    from tensorboard.data.proto import data_provider_pb2 as pb
    from tensorboard.data.proto import data_provider_pb2_grpc

    last_histogram = (steps - 1) // EVERY * EVERY
    with tempfile.TemporaryDirectory() as scratch:
        port_file = pathlib.Path(scratch) / "port"
        start = time.perf_counter()
        server = subprocess.Popen(
            [
                tensorboard_data_server.server_binary(),
                f"--logdir={folder}",
                "--port=0",
                f"--port-file={port_file}",
                "--reload=once",
                "--die-after-stdin",
            ],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not port_file.exists() or not port_file.read_text().endswith("\n"):
                time.sleep(0.005)
            channel = grpc.insecure_channel(f"127.0.0.1:{port_file.read_text().strip()}")
            stub = data_provider_pb2_grpc.TensorBoardDataProviderStub(channel)
            while True:
                scalars = stub.ReadScalars(
                    pb.ReadScalarsRequest(
                        plugin_filter=pb.PluginFilter(plugin_name="scalars"),
                        run_tag_filter=pb.RunTagFilter(tags=pb.TagFilter(names=["loss"])),
                        downsample=pb.Downsample(num_points=10),
                    )
                )
                tensors = stub.ReadTensors(
                    pb.ReadTensorsRequest(
                        plugin_filter=pb.PluginFilter(plugin_name="histograms"),
                        run_tag_filter=pb.RunTagFilter(tags=pb.TagFilter(names=["blocks.0.residual"])),
                        downsample=pb.Downsample(num_points=10),
                    )
                )
                served = [
                    max(d.step, default=-1)
                    for response in (scalars, tensors)
                    for run in response.runs
                    for tag in run.tags
                    for d in [tag.data]
                ]
                if served == [steps - 1, last_histogram]:
                    seconds = time.perf_counter() - start
                    break
                time.sleep(0.02)
            channel.close()
        finally:
            server.stdin.close()
            server.wait(timeout=30)
    return seconds


OVERLAY = """
import sys, time
from jaxcapture_nb import overlay_runs
import matplotlib.figure, tensorboard.compat.proto.event_pb2
start = time.perf_counter()
view = overlay_runs(sys.argv[1])
bundle, _ = view._repr_mimebundle_()
print(time.perf_counter() - start, len(bundle["text/html"]))
"""


def overlay_part(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for k in range(100):
            write_log(pathlib.Path(folder) / f"run{k:03d}", sites=3, steps=200, every=10)
        times, sizes = [], []
        for _ in range(rounds):
            done = subprocess.run(
                [sys.executable, "-c", OVERLAY, folder], capture_output=True, text=True, check=True
            )
            seconds, size = done.stdout.split()
            times.append(float(seconds))
            sizes.append(int(size))
        print("overlay_runs of 100 runs x 3 sites, displayed (the view and its saved HTML), in a new process")
        print(
            f"  {statistics.median(times):.2f} s (rounds: {', '.join(f'{t:.2f}' for t in times)})  target < 2 s; "
            f"HTML {statistics.median(sizes) / 1e6:.3f} MB  target < 1 MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sites", type=int, default=30)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--part", choices=["open", "overlay", "all"], default="all")
    parser.add_argument(
        "--long-factor", type=int, default=4, help="then one round on a log this many times longer (0: none)"
    )
    args = parser.parse_args()
    if args.part in ("open", "all"):
        open_part(args)
    if args.part in ("overlay", "all"):
        overlay_part(args.rounds)


def open_part(args: argparse.Namespace) -> None:
    for steps, rounds in ((args.steps, args.rounds), (args.long_factor * args.steps, 1)):
        if rounds and steps:
            open_one(args.sites, steps, rounds)


def open_one(sites: int, steps: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run = pathlib.Path(folder) / "run"
        write_log(run, sites, steps)
        size = sum(f.stat().st_size for f in run.iterdir()) / 2**20
        print(f"a log of {size:.1f} MiB: {sites} sites every {EVERY}th of {steps} steps, the loss every step")
        ours, rust, memory = [], [], []
        for _ in range(rounds):
            seconds, mib = time_open_run(run, steps)
            ours.append(seconds)
            memory.append(mib)
            rust.append(time_rust_loader(run, steps))
        ratios = [a / b for a, b in zip(ours, rust, strict=True)]
        print(
            f"  open_run            {statistics.median(ours):6.2f} s  peak memory +{statistics.median(memory):.0f} MiB"
        )
        print(f"  TensorBoard (Rust)  {statistics.median(rust):6.2f} s")
        print(
            f"  open_run / Rust     {statistics.median(ratios):6.2f}x  "
            f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})  target <= 2x"
        )


if __name__ == "__main__":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    main()
