"""What every layer shares: :mod:`.validate` (every validator, raising a one-line
``ValueError``), :mod:`.outputs` (the one writer of a command's output file) and
:mod:`.provenance` (git state, versions, devices, the provenance of a run).

May import: no other layer (the standard library and numpy; IPython inside
``Provenance.finish``).
Imports torch: no (``provenance.cuda_available`` imports it inside the function, only when
``auto`` or ``cuda`` is resolved).
"""
