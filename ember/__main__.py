"""Ember's command line: ``python -m ember info | config | doctor | demo | inspect FILE.h5``.

``info`` reports every backend Ember knows: whether it is installed (and the command that
installs a missing one), its library version, its devices and default device, which backend
is selected and which rule chose it (an explicit call, ``EMBER_BACKEND``/``EMBER_ML_BACKEND``,
the config file, or auto-detection with its order), and torch's CPU thread count with the rule
that set it (``EMBER_NUM_THREADS``, ``OMP_NUM_THREADS``, or Ember's default).
``config backend NAME`` remembers NAME in ``$EMBER_HOME/config.json`` for later processes
(``config backend`` alone prints the remembered one).
``doctor`` lists problems a user can fix (:mod:`ember.doctor`); exit status 1 if any.
``demo`` runs the main demo (:mod:`ember.demo`): one model trained on every installed backend,
a checkpoint saved on one and loaded on the others; exit status 1 if anything disagrees.
``inspect`` prints a checkpoint's metadata and variable tree (path, shape, dtype)
after checking the whole file; a damaged or foreign file prints the error and exits 1.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import TextIO

from ember import backends, demo, doctor, dtypes
from ember._version import __version__
from ember.saving.inspection import describe


def backend_report() -> list[dict]:
    """One row per backend: name, installed, version, devices, default device."""
    rows = []
    for name in backends.BACKENDS:
        installed = backends.is_installed(name)
        row = {"backend": name, "installed": installed, "version": "-", "devices": "-", "default": "-",
               "install": "-" if installed else f'pip install "ember[{name}]"'}
        if row["installed"]:
            try:
                module = backends.load(name)
                row.update(version=module.version, devices=", ".join(module.devices()), default=module.default_device())
            except Exception as error:  # a broken install is reported, not fatal
                row.update(installed=False, version=f"error: {error}")
        rows.append(row)
    return rows


def print_info(out: TextIO = sys.stdout) -> None:
    machine = f"{platform.system()} {platform.machine()}"
    print(f"Ember {__version__} on Python {platform.python_version()} ({machine})", file=out)
    choice = backends.active_choice()
    print(f"active backend: {choice.backend} on {choice.device}   default float: {dtypes.floatx()}", file=out)
    print(f"chosen by: {_SOURCES[choice.source]}: {choice.reason}", file=out)
    print("selection order: ember.set_backend(), EMBER_BACKEND (or EMBER_ML_BACKEND), config file, "
          f"auto-detection ({backends.AUTO_ORDER})", file=out)
    print(f"config file: {backends.config_path()}", file=out)
    rows = backend_report()
    headers = ("backend", "installed", "version", "devices", "default", "install")
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)), file=out)
    for row in rows:
        print("  ".join(str(row[h]).ljust(w) for h, w in zip(headers, widths)), file=out)
    threads = torch_threads_line()
    if threads:
        print(threads, file=out)


def torch_threads_line() -> str | None:
    """torch's CPU thread count and who set it, as one line; None where torch does not load (the table
    says why)."""
    if not backends.is_installed("torch"):
        return None
    try:
        info = backends.load("torch").cpu_threads()
    except Exception:  # noqa: BLE001 - a broken install (or a bad EMBER_NUM_THREADS) is in the table
        return None
    source = info["source"]
    how = _THREAD_SOURCES.get(source, f"set by {source}")
    return f"torch CPU threads: {info['threads']} ({how})"


_THREAD_SOURCES = {
    "default": "Ember's default: half the usable CPUs, 1 to 4; set EMBER_NUM_THREADS or OMP_NUM_THREADS to change it",
    "torch": "torch's default",
}
_SOURCES = {"call": "explicit call", "env": "environment variable", "config": "config file",
            "auto": "auto-detection"}


def config_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``python -m ember config backend [NAME]``: write (or print) the remembered backend."""
    if args.name is None:
        try:
            configured = backends._configured_backend()
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(configured if configured is not None else f"(none: {backends.config_path()} sets no backend)")
        return 0
    try:
        backends.set_backend(args.name, persist=True)
    except (ValueError, backends.BackendNotAvailableError) as error:
        parser.error(str(error))
    print(f"backend {backends.get_backend()!r} written to {backends.config_path()}")
    return 0


SCRIPT = "ember"  # the console script of pyproject.toml's [project.scripts]


def program_name(argv0: str | None = None) -> str:
    """How the command was invoked, for the usage lines: ``ember`` from the console script, else
    ``python -m ember`` (``argv0``: ``sys.argv[0]`` when None).

    Example:
        >>> program_name("/venv/bin/ember")
        'ember'
        >>> program_name("/src/ember/__main__.py")
        'python -m ember'
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    name = os.path.basename(argv0.replace("\\", "/")) if argv0 else ""
    return SCRIPT if name.removesuffix(".exe") == SCRIPT else "python -m ember"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=program_name(), description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="backends, versions and devices, and which rule chose the active backend")
    config = sub.add_parser("config", help="remember a backend choice in $EMBER_HOME/config.json")
    config_sub = config.add_subparsers(dest="key", required=True)
    config_backend = config_sub.add_parser("backend", help="write (or, without NAME, print) the remembered backend")
    config_backend.add_argument("name", nargs="?", metavar="NAME", help=f"one of {', '.join(backends.BACKENDS)}")
    sub.add_parser("doctor", help="problems with this installation and how to fix them")
    demo = sub.add_parser(
        "demo", help="train one model on every installed backend and move a checkpoint between them",
        description="Train one MLP on scikit-learn's digits with fit on each backend, save a checkpoint on the "
                    "first and load it on every backend; exit status 1 if a backend fails to learn or a "
                    "loaded checkpoint predicts differently.")
    demo.add_argument("--backend", action="append", metavar="NAME",
                      help=f"a backend to run ({', '.join(backends.BACKENDS)}); repeat it or separate names with "
                           "commas; the first one writes the checkpoint (default: every installed backend)")
    demo.add_argument("--epochs", type=int, default=None, metavar="N", help="epochs on each backend (default: 10)")
    demo.add_argument("--batch-size", type=int, default=None, metavar="N", help="fit's batch size (default: 32)")
    demo.add_argument("--plot", metavar="PATH", help="write the first backend's training history as a PNG "
                                                     "(needs matplotlib: pip install \"ember[plot]\")")
    demo.add_argument("--verbose", type=int, choices=(0, 1, 2), default=0,
                      help="fit's verbosity: 0 quiet (default), 1 progress bar, 2 one line per epoch")
    inspect = sub.add_parser("inspect", help="a checkpoint's metadata and variable tree (path, shape, dtype)")
    inspect.add_argument("file", help="an Ember checkpoint (.h5)")
    args = parser.parse_args(argv)
    if args.command == "info":
        print_info()
    elif args.command == "config":
        return config_command(args, config_backend)
    elif args.command == "doctor":
        rows = doctor.diagnose()
        print(doctor.format_report(rows))
        return 1 if any(row.level == "problem" for row in rows) else 0
    elif args.command == "demo":
        return run_demo_command(args, demo)
    elif args.command == "inspect":
        return inspect_file(args.file)
    return 0


def run_demo_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``python -m ember demo``: :func:`ember.demo.run_demo`; bad arguments exit 2 with the usage."""
    options = {"epochs": args.epochs, "batch_size": args.batch_size}
    options = {key: value for key, value in options.items() if value is not None}
    try:  # only argument errors are usage errors; one raised while training keeps its traceback
        demo.resolve_backends(args.backend)
        demo.check_options(plot=args.plot, **options)
    except (ValueError, backends.BackendNotAvailableError) as error:
        parser.error(str(error))  # exits with status 2
    except ImportError as error:  # matplotlib missing for --plot: the message names the extra
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        return demo.run_demo(args.backend, plot=args.plot, verbose=args.verbose, **options)
    except ImportError as error:  # scikit-learn missing: the message names the extra
        print(f"error: {error}", file=sys.stderr)
        return 1


def inspect_file(path: str, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print :func:`ember.saving.inspection.describe` of ``path``; a bad file: the error, exit status 1."""
    try:
        print(describe(path), file=out or sys.stdout)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=err or sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
