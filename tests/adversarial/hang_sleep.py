"""Adversarial: sleeps at import and ignores the polite signals.
Expected: stopped at the wall-clock limit (SIGKILL): "did not finish"."""
import signal
import time

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
    signal.signal(sig, signal.SIG_IGN)
time.sleep(10**6)
