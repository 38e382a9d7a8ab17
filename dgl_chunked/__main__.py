"""``python -m dgl_chunked`` runs the CLI."""

from dgl_chunked.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
