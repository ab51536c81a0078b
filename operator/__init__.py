"""The controller: reconcile handlers per resource kind, Kopf's wiring for a cluster and the embedded driver that
runs the same handlers inside `callscope serve`. The background work it starts lives in callscope.workers."""
