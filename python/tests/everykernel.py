"""One function for every contract of contracts.json, none written by
hand: each fills its outputs with zeros (an in/out cache it leaves as it
came). Served or run the exec way, every kernel the harness knows gets its
outputs with the right names, dtypes and shapes: the harness may find
them wrong, never missing or malformed."""

import kerneldiff
from kerneldiff.contracts import CONTRACTS


def _zeros(kernel):
    def fill(**tensors):
        for name in CONTRACTS[kernel].output_names:
            if tensors.get(name) is not None:
                tensors[name][...] = 0

    fill.__qualname__ = f"zeros_{kernel}"
    return fill


for _name in CONTRACTS:
    kerneldiff.implements(_name)(_zeros(_name))
