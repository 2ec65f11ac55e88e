"""The class run's schedule: the GPUs (or the cores) as worker slots, and the pool that feeds them.

- ``slots.py``  which GPUs this run may use (``--gpus``, CUDA_VISIBLE_DEVICES, nvidia-smi) and the slots they make:
  GPUs x ``gpu_workers`` in the GPU tier, one per ``workers`` in the simulator tier.
- ``pool.py``   one spawned worker process per slot, pinned to its GPU; it grades one student at a time and stages
  the result, which the parent (course/grade_class.py) stores as it comes in.

A Slurm array task (course/slurm.py) is a slot the cluster hands out (``--gres=gpu:1``) and grades the same way.
"""
