"""Reads a TensorBoard log directory with TensorBoard's own reader (EventAccumulator) and prints
what it found as JSON: {"scalars": {tag: [[step, value], ...]}, "texts": {tag: [[step, text]]}}.
The tests compare this with what the trainer logged, so our event files are judged by the real
reader, not by our own. TensorBoard's own purge of steps that a restarted run logs again is turned
off (purge_orphaned_data=False): every event in the files shows, so a duplicate step our resume
left behind would show too."""
import json
import math
import sys

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.util import tensor_util


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: read_events.py LOGDIR")
    acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0, ea.TENSORS: 0}, purge_orphaned_data=False)
    acc.Reload()
    tags = acc.Tags()
    scalars = {
        tag: [[e.step, None if not math.isfinite(e.value) else e.value] for e in acc.Scalars(tag)]
        for tag in tags["scalars"]
    }
    texts = {}
    for tag in tags["tensors"]:
        events = acc.Tensors(tag)
        texts[tag] = [
            [e.step, tensor_util.make_ndarray(e.tensor_proto).item().decode("utf-8")] for e in events
        ]
    json.dump({"scalars": scalars, "texts": texts}, sys.stdout)


if __name__ == "__main__":
    main()
