"""What every layer shares: validation and provenance.

- :mod:`.validate`: every validator of a number, an array or a folder (``positive``,
  ``delta``, ``noise_multipliers``, ``writable_folder``, ...), raising
  ``ValueError("<name> must be ..., got <value>")``;
- :mod:`.outputs`: the one writer of a command's output file (atomic replace of a regular
  file; a device, FIFO or symlink target written through, never replaced);
- :mod:`.provenance`: git state, versions, device resolution, the provenance of a run and
  JSON written with it.

May import: no other layer (the standard library and numpy; IPython inside
``Provenance.finish``).
Imports torch: no (``provenance.cuda_available`` imports it inside the function, only when
``auto`` or ``cuda`` is resolved).
"""
