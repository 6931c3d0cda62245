"""Helpers shared by the tutorials: the command line every tutorial accepts.

Every tutorial takes the same three options::

    --backend {numpy,torch,mlx}   which backend runs the model (default: Ember's default,
                                  see ``python -m ember info``)
    --fast                        a few seconds instead of up to a minute: fewer epochs or
                                  samples (the test suite runs every tutorial this way)
    --plot DIR                    write the tutorial's figures (PNG) into DIR; needs
                                  matplotlib (``pip install "ember[plot]"``)

Nothing else lives here on purpose: each tutorial reads top to bottom on its own.
"""

from __future__ import annotations

import argparse
import pathlib

import ember


def parse_args(argv, description, *, plot=True, extra=None):
    """Parse the tutorial's command line and switch to the chosen backend.

    Args:
        argv: the arguments (``None`` means ``sys.argv[1:]``, as argparse does).
        description: the tutorial's one-line summary, shown by ``--help``.
        plot: whether the tutorial offers ``--plot DIR``.
        extra: optional ``f(parser)`` adding tutorial-specific options.

    Returns:
        The parsed arguments; ``args.backend`` is the active backend's name afterwards
        and ``args.plot`` a ``pathlib.Path`` (created) or None.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", choices=ember.backends.BACKENDS, default=None,
                        help="backend to run on (default: Ember's default backend)")
    parser.add_argument("--fast", action="store_true",
                        help="a short run of a few seconds (fewer epochs/samples)")
    if plot:
        parser.add_argument("--plot", metavar="DIR", type=pathlib.Path, default=None,
                            help="write figures (PNG) into DIR (needs matplotlib)")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    if args.backend is not None:
        ember.set_backend(args.backend)
    args.backend = ember.get_backend()
    if plot and args.plot is not None:
        args.plot.mkdir(parents=True, exist_ok=True)
    return args


def print_results(title, results):
    """Print ``results`` (the dict ``main`` returns) as aligned ``key: value`` lines."""
    print(f"\n== {title} ==")
    width = max(len(key) for key in results)
    for key, value in results.items():
        shown = f"{value:.4g}" if isinstance(value, float) else value
        print(f"{key:<{width}}  {shown}")
