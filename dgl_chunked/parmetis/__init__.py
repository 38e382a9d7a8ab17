"""The ParMETIS round trip: DGL's ``pm_dglpart`` input files out, its output back in.

- :mod:`.format` holds the text formats (pure kernels, no Dask);
- :func:`export_parmetis` (:mod:`.export`) writes ``<name>_nodes.txt``,
  ``<name>_edges.txt`` (deduplicated by :mod:`.edges`) and ``<name>_stats.txt`` from a
  chunked graph, out of core;
- :func:`import_parmetis` (:mod:`.importing`) turns ParMETIS's per-rank output into an assignment
  directory in DGL's layout.
"""

from __future__ import annotations

from dgl_chunked.parmetis.export import ParmetisFiles, export_parmetis
from dgl_chunked.parmetis.importing import import_parmetis

__all__ = ["ParmetisFiles", "export_parmetis", "import_parmetis"]
