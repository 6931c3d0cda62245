"""HeldSignals: every Python-level handler is held between hold() and release(), also one installed between steps.

``hold`` reads all handlers in one C-level pass and re-walks them only when they changed since
the previous hold; these tests change them between holds (a handler installed, one removed) and
check that what is held, and what ``release`` puts back, is always the handlers of that moment.
The reference is the signal module itself: ``signal.getsignal`` and the handlers' own call records.
"""

from __future__ import annotations

import signal
import threading

import pytest

from ember.backends._held_signals import HeldSignals

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="needs POSIX user signals")


@pytest.fixture
def restore_handlers():
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGUSR1, signal.SIGUSR2)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def _recording_handler(calls: list):
    def handler(signum, frame):
        calls.append(signum)
    return handler


def _all_handlers() -> dict:
    return {signum: signal.getsignal(signum) for signum in signal.valid_signals()}


def test_a_signal_arriving_while_held_runs_its_handler_at_release(restore_handlers):
    calls: list = []
    signal.signal(signal.SIGUSR1, _recording_handler(calls))
    before = _all_handlers()
    held = HeldSignals()
    held.hold()
    assert held.holding
    signal.raise_signal(signal.SIGUSR1)
    assert calls == []  # noted, not handled: no Python code ran
    held.release()
    assert calls == [signal.SIGUSR1]
    assert _all_handlers() == before


def test_a_handler_installed_between_holds_is_held_too(restore_handlers):
    held = HeldSignals()
    held.hold()
    held.release()  # the handlers of this moment are now the ones seen
    calls: list = []
    signal.signal(signal.SIGUSR2, _recording_handler(calls))
    held.hold()
    signal.raise_signal(signal.SIGUSR2)
    assert calls == []
    held.release()
    assert calls == [signal.SIGUSR2]


def test_a_handler_removed_between_holds_is_not_put_back(restore_handlers):
    calls: list = []
    signal.signal(signal.SIGUSR1, _recording_handler(calls))
    held = HeldSignals()
    held.hold()
    held.release()
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    held.hold()
    held.release()
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
    signal.raise_signal(signal.SIGUSR1)
    assert calls == []


def test_outside_the_main_thread_nothing_is_held(restore_handlers):
    signal.signal(signal.SIGUSR1, _recording_handler([]))
    held = HeldSignals()
    states = []

    def worker():
        held.hold()
        states.append(held.holding)
        held.release()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(30)
    assert states == [False]
