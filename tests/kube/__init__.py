"""The emulated Kubernetes API server (emulator.py), its fixtures (fixtures.py) and their tests."""
