"""Reconcile handlers per resource kind and the background loops; Kopf wiring and the embedded driver."""
