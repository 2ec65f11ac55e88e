"""Untrusted side (grading child): limits, log encoding and small helpers the instruments share."""

BANKS = 32
BANK_BYTES = 4
WARP = 32
BLOCK_ACCESS_CAP = 2_000_000      # shared accesses logged per block, all threads together (~300 MB)
RACE_COUNT_CAP = 1_000_000        # races counted before counting stops
MAX_RACE_EXAMPLES = 8             # race examples kept in the facts
EXAMINED_RACES_PER_BLOCK = 64     # racy addresses per block whose access pair is classified
LINE_SHIFT = 24                   # log code = location << LINE_SHIFT | view << 2 | atomic << 1 | write
LASTI_BITS = 20                   # location = code id << LASTI_BITS | f_lasti  (or a line, code id 0)
CODE_BITS = 18

RAW, WAR, WAW = "read-after-write", "write-after-read", "write-after-write"

_KERNELAPI_SUFFIX = ("kernelapi.py",)


_ATOMIC_NAMES = frozenset({"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min",
                           "nanmax", "nanmin", "compare_and_swap", "cas"})


def _is_atomic(frame):
    """True when the access is made by the simulator's cuda.atomic implementation."""
    return frame.f_code.co_filename.endswith(_KERNELAPI_SUFFIX) and frame.f_code.co_name in _ATOMIC_NAMES


class _Sink:
    """Stands in for a thread's log once it is full."""
    __slots__ = ()

    def append(self, item):
        pass

    def extend(self, items):
        pass

    def __len__(self):
        return 0
