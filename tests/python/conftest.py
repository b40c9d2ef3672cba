"""pytest set-up for tests/python: the podsim package from python/ (the checkout's, with the
libpodsim.so `make python` put beside it, unless PODSIM_LIB names another), and the repository's
root as ROOT for the examples."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
