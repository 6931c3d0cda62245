"""Ember's command line: ``python -m ember info | demo | inspect FILE.h5``.

``info`` reports every backend Ember knows: whether it is installed, its library
version, its devices and default device, and which backend is selected.
``demo`` runs the main demo; until the demo lands it prints the same report.
``inspect`` prints a checkpoint's metadata and variable tree (path, shape, dtype)
after checking the whole file; a damaged or foreign file prints the error and exits 1.
"""

from __future__ import annotations

import argparse
import platform
import sys

from ember import __version__, backends, dtypes


def backend_report() -> list[dict]:
    """One row per backend: name, installed, version, devices, default device."""
    rows = []
    for name in backends.BACKENDS:
        row = {"backend": name, "installed": backends.is_installed(name), "version": "-", "devices": "-", "default": "-"}
        if row["installed"]:
            try:
                module = backends.load(name)
                row.update(version=module.version, devices=", ".join(module.devices()), default=module.default_device())
            except Exception as error:  # a broken install is reported, not fatal
                row.update(installed=False, version=f"error: {error}")
        rows.append(row)
    return rows


def print_info(out=sys.stdout) -> None:
    print(f"Ember {__version__} on Python {platform.python_version()} ({platform.system()} {platform.machine()})", file=out)
    print(f"active backend: {backends.get_backend()}   default float: {dtypes.floatx()}", file=out)
    print(f"config file: {backends.config_path()}", file=out)
    rows = backend_report()
    headers = ("backend", "installed", "version", "devices", "default")
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)), file=out)
    for row in rows:
        print("  ".join(str(row[h]).ljust(w) for h, w in zip(headers, widths)), file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="backends, versions and devices")
    sub.add_parser("demo", help="the main demo (for now: the backend report)")
    inspect = sub.add_parser("inspect", help="a checkpoint's metadata and variable tree (path, shape, dtype)")
    inspect.add_argument("file", help="an Ember checkpoint (.h5)")
    args = parser.parse_args(argv)
    if args.command in ("info", "demo"):
        print_info()
    elif args.command == "inspect":
        return inspect_file(args.file)
    return 0


def inspect_file(path: str, out=None, err=None) -> int:
    """Print :func:`ember.saving.inspection.describe` of ``path``; a bad file: the error, exit status 1."""
    from ember.saving.inspection import describe

    try:
        print(describe(path), file=out or sys.stdout)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=err or sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
