"""The service's background workers: the analysis job dispatcher, webhook delivery, retention and the quality
baselines, and the one function both modes start them with (`loops.start_loops`)."""
