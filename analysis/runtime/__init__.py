"""What runs the stages on one recording: the pipeline, the Ray actors that keep the models loaded, a unit of work."""
