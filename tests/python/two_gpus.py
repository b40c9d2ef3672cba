"""The scenario sections of the 2-replica comparisons against tf.distribute.MirroredStrategy over
two logical CPUs (tf_mirrored.py, tf_fit.py): one VM of two accelerators under podsim's mirrored
strategy, given to podsim.from_keras as keyword sections (`**TWO_GPUS`)."""

TWO_GPUS = {
    "cluster": {"workers": {"machine": {"cpus": 8, "flops": "100GFLOP/s", "ram": "16GiB",
                                        "accelerators": {"count": 2, "peak": "10TFLOP/s", "hbm": "16GiB",
                                                         "hbm_bandwidth": "1TB/s", "link": "32GB/s"}}}},
    "strategy": {"kind": "mirrored", "devices": ["GPU:0", "GPU:1"]},
}
